# Debian packages with CPack (included from CMakeLists.txt when WEFT_INSTALL is on):
#   cpack -G DEB -B <build>/packages   (`make package` at the top does it for build/release)
# gives, in <build>/packages/:
#   libweft-dev_<version>_<arch>.deb   the library, headers, CMake package and weft.pc
#   weft-tools_<version>_<arch>.deb    weft-load, weft-bench and the example programs
#   libweft<soversion>_<version>_<arch>.deb   libweft.so.<soversion> (shared builds only)
# with the dependencies they have on Debian 12.
set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR "weft")
set(CPACK_PACKAGE_CONTACT "weft developers <weft@example.org>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR "")

set(CPACK_COMPONENTS_ALL dev tools)
if(WEFT_BUILD_SHARED)
  list(APPEND CPACK_COMPONENTS_ALL runtime)
endif()
set(CPACK_COMPONENTS_GROUPING IGNORE)  # one package per component
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_COMPONENT_DEV_DISPLAY_NAME "weft development files")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "weft: asynchronous event-driven network framework for C++20 (development files)\n\
Headers, the library, the CMake package (find_package(weft)) and weft.pc (pkg-config weft).")
set(CPACK_COMPONENT_TOOLS_DISPLAY_NAME "weft tools")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "weft: load generator, benchmark runner and example servers\n\
weft-load (HTTP, echo and stream load generator), weft-bench (runs weft's benchmark suites) and the\n\
example programs (weft-hello, weft-echo-server, ...).")
set(CPACK_COMPONENT_RUNTIME_DISPLAY_NAME "weft shared library")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "weft: asynchronous event-driven network framework for C++20 (shared library)")

set(_weft_deb_version "${PROJECT_VERSION}")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libweft-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# Public headers use fmt (libfmt); a static libweft links liburing, OpenSSL 3, zlib and c-ares.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libfmt-dev (>= 9.1), liburing-dev (>= 2.3), libssl-dev (>= 3.0), zlib1g-dev (>= 1:1.2.13), libc-ares-dev (>= 1.18)")
# weft_grpc_generate() runs protoc with weft-tools' protoc-gen-weft, and its code links libprotobuf.
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "weft-tools, protobuf-compiler, libprotobuf-dev")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME weft-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
# The binaries' shared libraries come from dpkg-shlibdeps; weft-bench is Python 3.
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3 (>= 3.11)")
if(WEFT_BUILD_SHARED)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libweft${WEFT_SOVERSION})
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libweft${WEFT_SOVERSION} (= ${_weft_deb_version})")
  string(APPEND CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS ", libweft${WEFT_SOVERSION} (= ${_weft_deb_version})")
  # dpkg-shlibdeps finds libweft.so in the build tree (the runtime package provides it).
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
endif()

include(CPack)
