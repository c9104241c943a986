# Compile-fail checks: each tests/compile_fail/<name>.cc must fail to compile with the message on its
# first line ("// expect: ..."), and compiles.cc (the control) must compile. Labelled `channel`.
# The compiler's verdict does not depend on the preset (no sanitizer flags reach it): the tsan preset,
# which runs only the tests that start threads, leaves them out.
if(WEFT_SANITIZE STREQUAL "thread")
  return()
endif()
file(GLOB WEFT_COMPILE_FAIL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cc)
foreach(src IN LISTS WEFT_COMPILE_FAIL_SOURCES)
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME compile_fail_${name}
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -I${PROJECT_SOURCE_DIR}/include ${src})
  set_tests_properties(compile_fail_${name} PROPERTIES LABELS channel TIMEOUT 120)
  if(NOT name STREQUAL "compiles")
    file(STRINGS ${src} expect_line LIMIT_COUNT 1 REGEX "^// expect: ")
    string(REGEX REPLACE "^// expect: " "" expect "${expect_line}")
    string(REGEX REPLACE "([][.*+?^$()|\\\\])" "\\\\\\1" expect_regex "${expect}")
    # Passes on the message alone (the compiler's exit status is then not looked at).
    set_tests_properties(compile_fail_${name} PROPERTIES PASS_REGULAR_EXPRESSION "${expect_regex}")
  endif()
endforeach()
