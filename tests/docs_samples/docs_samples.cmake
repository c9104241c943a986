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
set(_weft_docs_flags -std=c++20 -Wall -Wno-subobject-linkage -Wno-unused-variable -Wno-unused-but-set-variable
    -I${PROJECT_SOURCE_DIR}/include -I${CMAKE_CURRENT_LIST_DIR} -I${PROJECT_BINARY_DIR}/generated/grpc)
# The prelude (weft's public headers: most of a sample's compile) precompiled once for the samples
# that include it: g++ takes prelude.h.gch, beside the samples, instead of parsing prelude.h (a
# header that no longer fits is parsed as usual). Made from a copy without `#pragma once`, which
# g++ warns about in a header compiled on its own.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_weft_docs_pch ${PROJECT_BINARY_DIR}/docs_samples/prelude.h.gch)
  set(_weft_docs_pch_source ${PROJECT_BINARY_DIR}/docs_samples_pch/prelude.h)
  file(READ ${CMAKE_CURRENT_LIST_DIR}/prelude.h _weft_prelude)
  string(REPLACE "#pragma once\n" "" _weft_prelude "${_weft_prelude}")
  file(CONFIGURE OUTPUT ${_weft_docs_pch_source} CONTENT "${_weft_prelude}" @ONLY)
  add_custom_command(OUTPUT ${_weft_docs_pch}
    COMMAND ${CMAKE_CXX_COMPILER} ${_weft_docs_flags} -x c++-header ${_weft_docs_pch_source} -o ${_weft_docs_pch}
            -MD -MF ${_weft_docs_pch}.d -MT ${_weft_docs_pch}
    DEPENDS ${_weft_docs_pch_source} ${CMAKE_CURRENT_LIST_DIR}/prelude.h
    DEPFILE ${_weft_docs_pch}.d
    COMMENT "Precompiling the docs samples' prelude"
    VERBATIM)
  add_custom_target(weft_docs_samples_pch ALL DEPENDS ${_weft_docs_pch})
endif()
foreach(sample IN LISTS samples)
  string(REPLACE "|" ";" parts "${sample}")
  list(GET parts 0 name)
  list(GET parts 1 unit)
  add_test(NAME docs_sample_${name}
    COMMAND ${CMAKE_CXX_COMPILER} -fsyntax-only -Werror ${_weft_docs_flags} ${unit})
  set_tests_properties(docs_sample_${name} PROPERTIES LABELS docs TIMEOUT 120)
endforeach()
