# The API reference: Doxygen (Debian: doxygen) over include/weft. `docs` fails on any Doxygen
# warning, undocumented public names included; the HTML is in <build>/docs/html/index.html.
find_program(WEFT_DOXYGEN doxygen)
set(WEFT_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${WEFT_DOCS_DIR}/Doxyfile @ONLY)
if(WEFT_DOXYGEN)
  file(GLOB_RECURSE _weft_public_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/weft/*.h)
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -DDOXYGEN=${WEFT_DOXYGEN} -DDOXYFILE=${WEFT_DOCS_DIR}/Doxyfile
            -DLOG=${WEFT_DOCS_DIR}/doxygen-warnings.log -P ${PROJECT_SOURCE_DIR}/cmake/run-doxygen.cmake
    DEPENDS ${_weft_public_headers} ${PROJECT_SOURCE_DIR}/docs/api-mainpage.md
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "API reference (Doxygen): ${WEFT_DOCS_DIR}/html/index.html"
    VERBATIM)
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo "docs: doxygen not found (Debian: doxygen; scripts/install-deps.sh installs it)"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()
