# weft::nghttp2: libnghttp2 (the HTTP/2 codec's framing, HPACK and stream state) as an imported
# target, found like weft::uring (weftUring.cmake): weft links it PRIVATE (no public header includes
# nghttp2.h); a static libweft carries it as $<LINK_ONLY:weft::nghttp2>, so weft's build, a
# subproject consumer and weftConfig.cmake (for an installed static libweft) all define it here.
if(NOT TARGET weft::nghttp2)
  find_path(WEFT_NGHTTP2_INCLUDE nghttp2/nghttp2.h)
  find_library(WEFT_NGHTTP2_LIBRARY nghttp2)
  if(WEFT_NGHTTP2_INCLUDE AND WEFT_NGHTTP2_LIBRARY)
    add_library(weft::nghttp2 UNKNOWN IMPORTED)
    set_target_properties(weft::nghttp2 PROPERTIES
      IMPORTED_LOCATION "${WEFT_NGHTTP2_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${WEFT_NGHTTP2_INCLUDE}")
  endif()
endif()
