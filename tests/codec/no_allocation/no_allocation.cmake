# Allocation-counting tests replace operator new for their whole program: one executable each.
# Single-threaded: not in the tsan preset (tests/tsan_scope.cmake says why).
if(WEFT_SANITIZE STREQUAL "thread")
  return()
endif()
file(GLOB WEFT_CODEC_NO_ALLOCATION_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
foreach(src IN LISTS WEFT_CODEC_NO_ALLOCATION_TESTS)
  get_filename_component(name ${src} NAME_WE)
  add_executable(weft_${name} ${src})
  target_include_directories(weft_${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(weft_${name} PRIVATE weft weft::nghttp2 GTest::gtest_main)
  gtest_discover_tests(weft_${name} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS codec TIMEOUT 120)
endforeach()
