# Test executables run as gtest shards under the sanitizer presets: a process under ASan or TSan
# takes 0.3 to 0.4 s of CPU to start and exit, ten times what most of our tests take, so a ctest test
# per gtest test spent most of the sanitizer phases starting processes. weft_add_gtest_shards() makes
# ctest tests <target>[i/n], each running every n-th test of the executable (gtest's own sharding:
# GTEST_TOTAL_SHARDS, GTEST_SHARD_INDEX), about WEFT_TESTS_PER_SHARD tests a shard; the interleaving
# spreads a slow suite over every shard. The release preset keeps a ctest test per gtest test
# (gtest_discover_tests), so that `ctest -R <test>` picks one. To run one test of a shard, run the
# executable with --gtest_filter=<test>.
#
#   weft_add_gtest_shards(TARGET <target> LABEL <label>)
#
# The shards are counted when ctest runs, from the executable's list of its tests
# (tests/gtest_shards_discover.cmake), as gtest_discover_tests' PRE_TEST mode does.
set(WEFT_TESTS_PER_SHARD 40 CACHE STRING "gtest tests per ctest test in the sanitizer presets")

function(weft_add_gtest_shards)
  cmake_parse_arguments(arg "" "TARGET;LABEL" "" ${ARGN})
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${arg_TARGET}_shards_include.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(shards_exe [==[$<TARGET_FILE:${arg_TARGET}>]==])
set(shards_target ${arg_TARGET})
set(shards_label ${arg_LABEL})
set(shards_per_shard ${WEFT_TESTS_PER_SHARD})
set(shards_count_file [==[${CMAKE_CURRENT_BINARY_DIR}/${arg_TARGET}_shards_count.txt]==])
include([==[${PROJECT_SOURCE_DIR}/tests/gtest_shards_discover.cmake]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
