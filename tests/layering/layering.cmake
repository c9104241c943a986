# The layering the build enforces: `layering` fails when a library file includes a header of a layer
# it may not use (tests/layering/layers.txt, DESIGN.md's layers table), or tools/ or examples/
# include a private header. It reads sources only, so the sanitizer presets leave it out.
if(NOT WEFT_SANITIZE STREQUAL "")
  return()
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME layering COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_layers.py ${PROJECT_SOURCE_DIR})
set_tests_properties(layering PROPERTIES LABELS core TIMEOUT 60)

# `format`: the C++ lines changed since .clang-format-base are formatted (scripts/check-format.sh).
find_program(WEFT_GIT git)
if(WEFT_GIT AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  add_test(NAME format COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-format.sh)
  set_tests_properties(format PROPERTIES LABELS core TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
