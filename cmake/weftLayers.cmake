# libweft is built layer by layer: one OBJECT library per line of tests/layering/layers.txt
# (weft_layer_core, weft_layer_buffer, ..., weft_layer_codec_http2, weft_layer_grpc), each from
# src/<layer>/ less the folders that are layers of their own (src/codec/http2 is not in codec's).
# Each layer links the third-party libraries it uses and only those (WEFT_LAYER_DEPENDS below), so a
# layer's needs are written next to it; the `layering` test checks the includes between layers.
#
#   weft_layer_targets(<out var>)   defines the targets, sets <out var> to their names.

# Third-party libraries by layer (their headers and link lines; every layer gets fmt and Threads).
set(WEFT_LAYER_DEPENDS_transport weft::uring)
set(WEFT_LAYER_DEPENDS_codec/tls OpenSSL::SSL OpenSSL::Crypto)
set(WEFT_LAYER_DEPENDS_dns weft::cares)
set(WEFT_LAYER_DEPENDS_codec/http1 ZLIB::ZLIB)  # Compression (gzip)
set(WEFT_LAYER_DEPENDS_grpc ZLIB::ZLIB)
set(WEFT_LAYER_DEPENDS_codec/websocket OpenSSL::Crypto)  # SHA-1 of the handshake

function(weft_layer_targets out_var)
  set(layers_file ${PROJECT_SOURCE_DIR}/tests/layering/layers.txt)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${layers_file})
  file(STRINGS ${layers_file} lines REGEX "^[a-z][a-z0-9_/]*:")
  set(layers)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ":.*" "" layer "${line}")
    list(APPEND layers ${layer})
  endforeach()

  file(GLOB_RECURSE all_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.cc)
  set(targets)
  set(claimed)
  foreach(layer IN LISTS layers)
    set(sources)
    foreach(src IN LISTS all_sources)
      file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR}/src ${src})
      get_filename_component(folder ${relative} DIRECTORY)
      # The longest layer that is a prefix of the file's folder owns the file.
      set(owner "")
      foreach(candidate IN LISTS layers)
        string(LENGTH "${candidate}" candidate_length)
        string(LENGTH "${owner}" owner_length)
        if((folder STREQUAL candidate OR folder MATCHES "^${candidate}/") AND candidate_length GREATER owner_length)
          set(owner ${candidate})
        endif()
      endforeach()
      if(owner STREQUAL layer)
        list(APPEND sources ${src})
      endif()
    endforeach()
    if(NOT sources)
      continue()
    endif()
    list(APPEND claimed ${sources})
    string(REPLACE "/" "_" name "weft_layer_${layer}")
    add_library(${name} OBJECT ${sources})
    target_include_directories(${name} PUBLIC
      ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
    target_compile_features(${name} PUBLIC cxx_std_20)
    target_link_libraries(${name} PRIVATE Threads::Threads fmt::fmt ${WEFT_LAYER_DEPENDS_${layer}})
    if(WEFT_BUILD_SHARED)
      set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    endif()
    list(APPEND targets ${name})
  endforeach()

  list(REMOVE_ITEM all_sources ${claimed})
  if(all_sources)
    list(JOIN all_sources "\n  " unowned)
    message(FATAL_ERROR "weft: these sources are in no layer of tests/layering/layers.txt:\n  ${unowned}")
  endif()
  set(${out_var} ${targets} PARENT_SCOPE)
endfunction()
