# Install rules (included from CMakeLists.txt when WEFT_INSTALL is on). Components:
#   dev      headers, libweft.a (or the libweft.so link), the CMake package, weft.pc
#   runtime  libweft.so.<SOVERSION> (shared builds only)
#   tools    weft-load, weft-fetch, weft-proxy, weft-bench, protoc-gen-weft and the example servers and clients
include(CMakePackageConfigHelpers)

set(WEFT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/weft)

# ---- the library and its headers -------------------------------------------------------------
install(TARGETS weft EXPORT weft-core-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/weft/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weft
  COMPONENT dev)

# ---- CMake package: weftConfig.cmake, weftConfigVersion.cmake, one targets file per component ----
install(EXPORT weft-core-targets NAMESPACE weft:: FILE weft-core-targets.cmake
  DESTINATION ${WEFT_CMAKE_INSTALL_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/weftConfig.cmake
  INSTALL_DESTINATION ${WEFT_CMAKE_INSTALL_DIR})
# While the major version is 0, a minor version may break the API: only the same minor matches.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_weft_compatibility SameMinorVersion)
else()
  set(_weft_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_weft_compatibility})
install(FILES
    ${PROJECT_BINARY_DIR}/weftConfig.cmake
    ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/weftUring.cmake
    ${PROJECT_SOURCE_DIR}/cmake/weftCares.cmake
    ${PROJECT_SOURCE_DIR}/cmake/weftGrpcGenerate.cmake
  DESTINATION ${WEFT_CMAKE_INSTALL_DIR} COMPONENT dev)

# ---- pkg-config: weft.pc ----------------------------------------------------------------------
# A static libweft needs -luring, OpenSSL, zlib and c-ares in every link (Requires: liburing libssl
# libcrypto zlib libcares); a shared one only in static links (Libs.private). fmt is in every link either way:
# the public headers (weft/core/log.h) format with it (Requires).
file(RELATIVE_PATH WEFT_PC_RELATIVE_PREFIX
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" WEFT_PC_RELATIVE_PREFIX "${WEFT_PC_RELATIVE_PREFIX}")
set(WEFT_PC_REQUIRES_PRIVATE "")
if(WEFT_BUILD_SHARED)
  set(WEFT_PC_REQUIRES "fmt")
  set(WEFT_PC_LIBS_PRIVATE "-luring -lssl -lcrypto -lz -lcares")
else()
  set(WEFT_PC_REQUIRES "fmt liburing libssl libcrypto zlib libcares")
  set(WEFT_PC_LIBS_PRIVATE "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/weft.pc.in ${PROJECT_BINARY_DIR}/weft.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weft.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# ---- tools ------------------------------------------------------------------------------------
set(_weft_tool_targets ${WEFT_EXAMPLE_TARGETS})
if(WEFT_BUILD_TOOLS)
  list(APPEND _weft_tool_targets weft-load weft-fetch weft-proxy)
  # protoc-gen-weft: weft_grpc_generate() (in the dev package's CMake files) finds it in bin/.
  if(TARGET protoc-gen-weft)
    list(APPEND _weft_tool_targets protoc-gen-weft)
  endif()
  # weft-bench: the launcher and its package in share/weft/bench, linked from bin/.
  set(_weft_bench_dir ${CMAKE_INSTALL_DATADIR}/weft/bench)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/bench/weft-bench DESTINATION ${_weft_bench_dir} COMPONENT tools)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/bench/weft_bench DESTINATION ${_weft_bench_dir} COMPONENT tools
    PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
  file(RELATIVE_PATH _weft_bench_link_target /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${_weft_bench_dir}/weft-bench)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/install-links)
  file(CREATE_LINK ${_weft_bench_link_target} ${PROJECT_BINARY_DIR}/install-links/weft-bench SYMBOLIC)
  install(FILES ${PROJECT_BINARY_DIR}/install-links/weft-bench DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()
if(_weft_tool_targets)
  if(WEFT_BUILD_SHARED)
    # Installed anywhere, the tools find the libweft.so installed beside them.
    file(RELATIVE_PATH _weft_bin_to_lib /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${CMAKE_INSTALL_LIBDIR})
    set_target_properties(${_weft_tool_targets} PROPERTIES INSTALL_RPATH "$ORIGIN/${_weft_bin_to_lib}")
  endif()
  install(TARGETS ${_weft_tool_targets} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()
