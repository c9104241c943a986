# weft::nghttp2: libnghttp2 as an imported target, found like weft::uring (weftUring.cmake). libweft
# does not link it (its HTTP/2 engine is its own); the tests (tests/support, an nghttp2 peer) and
# weft-load h2 do. Not installed: a consumer of weft never needs it.
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
