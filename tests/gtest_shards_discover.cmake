# Included by ctest (tests/gtest_shards.cmake says why): adds the ctest tests <target>[i/n] of one
# test executable. Counts its tests again only when the executable is newer than the last count.
if(NOT EXISTS "${shards_exe}")
  add_test(${shards_target}_NOT_BUILT ${shards_target}_NOT_BUILT)
  return()
endif()
if(NOT EXISTS "${shards_count_file}" OR NOT "${shards_count_file}" IS_NEWER_THAN "${shards_exe}")
  execute_process(COMMAND "${shards_exe}" --gtest_list_tests
                  OUTPUT_VARIABLE listed RESULT_VARIABLE listed_status)
  if(NOT listed_status EQUAL 0)
    message(FATAL_ERROR "${shards_exe} --gtest_list_tests failed (${listed_status})")
  endif()
  # A test is a line indented by two spaces, under its suite's line.
  string(REGEX MATCHALL "\n  [^ \n]" tests "\n${listed}")
  list(LENGTH tests count)
  file(WRITE "${shards_count_file}" "${count}")
endif()
file(READ "${shards_count_file}" count)
math(EXPR shards "(${count} + ${shards_per_shard} - 1) / ${shards_per_shard}")
if(shards GREATER 0)
  math(EXPR last "${shards} - 1")
  foreach(index RANGE ${last})
    math(EXPR shown "${index} + 1")
    set(name "${shards_target}[${shown}/${shards}]")
    add_test("${name}" "${shards_exe}")
    set_tests_properties("${name}" PROPERTIES LABELS ${shards_label} TIMEOUT 1200
                         ENVIRONMENT "GTEST_TOTAL_SHARDS=${shards};GTEST_SHARD_INDEX=${index}")
  endforeach()
endif()
