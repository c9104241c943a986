# weft::cares: c-ares (the resolver of weft/dns) as an imported target, found like weft::uring
# (weftUring.cmake): weft links it PRIVATE, a static libweft carries $<LINK_ONLY:weft::cares>, and
# weftConfig.cmake (for an installed static libweft) defines the target with this file.
if(NOT TARGET weft::cares)
  find_path(WEFT_CARES_INCLUDE ares.h)
  find_library(WEFT_CARES_LIBRARY cares)
  if(WEFT_CARES_INCLUDE AND WEFT_CARES_LIBRARY)
    add_library(weft::cares UNKNOWN IMPORTED)
    set_target_properties(weft::cares PROPERTIES
      IMPORTED_LOCATION "${WEFT_CARES_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${WEFT_CARES_INCLUDE}")
  endif()
endif()
