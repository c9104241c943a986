# weft::uring: liburing as an imported target. weft links it PRIVATE; a static libweft carries it as
# $<LINK_ONLY:weft::uring>, so weft's build, an add_subdirectory/FetchContent consumer and
# weftConfig.cmake (for an installed static libweft) all define the target with this file.
if(NOT TARGET weft::uring)
  find_path(WEFT_URING_INCLUDE liburing.h)
  find_library(WEFT_URING_LIBRARY uring)
  if(WEFT_URING_INCLUDE AND WEFT_URING_LIBRARY)
    add_library(weft::uring UNKNOWN IMPORTED)
    set_target_properties(weft::uring PROPERTIES
      IMPORTED_LOCATION "${WEFT_URING_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${WEFT_URING_INCLUDE}")
  endif()
endif()
