# Precompiled headers for the tests: the standard library's, fmt's and GoogleTest's headers are parsed
# once per build instead of once per test unit (a release build's compile time: -7%, 1,223 -> 1,137 s
# of CPU, most of it in the tests). CI builds everything three times.
#
#   weft_precompile_headers(<target> [TESTS])      <target> builds the header (TESTS: with GoogleTest's
#                                                  and GoogleMock's headers)
#   weft_reuse_precompiled_headers(<owner> <target>...)
#                                                  each target, compiled with the owner's flags, reuses it
# A source still includes what it uses: the precompiled headers only make
# those includes cheap. (They can hide a missing include in a test file; the library, the tools and the
# examples are compiled without them.)

set(WEFT_PRECOMPILED_STANDARD_HEADERS
  <algorithm> <any> <array> <atomic> <cerrno> <charconv> <chrono> <condition_variable> <coroutine>
  <cstddef> <cstdint> <cstdlib> <cstring> <deque> <exception> <functional> <limits> <map> <memory>
  <mutex> <new> <optional> <span> <stdexcept> <string> <string_view> <system_error> <thread>
  <type_traits> <unordered_map> <utility> <variant> <vector> <fmt/format.h>)

function(weft_precompile_headers target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "TESTS" "" "")
  set(headers ${WEFT_PRECOMPILED_STANDARD_HEADERS})
  if(arg_TESTS)
    list(APPEND headers <gtest/gtest.h> <gmock/gmock.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

function(weft_reuse_precompiled_headers owner)
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  endforeach()
endfunction()
