# Every C++ sample in README.md and docs/*.md is compiled by a test, docs_sample_<file> (a whole-file
# sample: docs_sample_<file>_<line>):
# extract_samples.py writes each as a translation unit (how, the line before the sample says),
# and the test compiles it with -fsyntax-only against include/ (and the tests' generated gRPC code,
# generated/grpc, which docs/grpc.md's samples use). A sample without that line fails
# its test with the reason. Labelled `docs`. The compiler's verdict does not depend on the preset,
# so the sanitizer presets leave them out.
if(NOT WEFT_SANITIZE STREQUAL "")
  return()
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)
file(GLOB WEFT_DOCS_MARKDOWN CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/README.md ${WEFT_DOCS_MARKDOWN} ${CMAKE_CURRENT_LIST_DIR}/extract_samples.py)
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/extract_samples.py ${PROJECT_SOURCE_DIR}
          ${PROJECT_BINARY_DIR}/docs_samples
  OUTPUT_VARIABLE samples OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE extracted)
if(NOT extracted EQUAL 0)
  message(FATAL_ERROR "weft: tests/docs_samples/extract_samples.py failed (${extracted})")
endif()
string(REPLACE "\n" ";" samples "${samples}")
foreach(sample IN LISTS samples)
  string(REPLACE "|" ";" parts "${sample}")
  list(GET parts 0 name)
  list(GET parts 1 unit)
  add_test(NAME docs_sample_${name}
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -Wall -Werror -Wno-subobject-linkage
            -Wno-unused-variable -Wno-unused-but-set-variable -I${PROJECT_SOURCE_DIR}/include
            -I${CMAKE_CURRENT_LIST_DIR} -I${PROJECT_BINARY_DIR}/generated/grpc ${unit})
  set_tests_properties(docs_sample_${name} PROPERTIES LABELS docs TIMEOUT 120)
endforeach()
