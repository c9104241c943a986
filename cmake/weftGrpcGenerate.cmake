# weft_grpc_generate(): compiles .proto files into a target with protobuf's messages and weft's
# gRPC services and stubs (protoc-gen-weft; docs/grpc.md, "From a .proto").
#
#   weft_grpc_generate(route_guide protos/route_guide.proto [more.proto...]
#                      [IMPORT_DIRS dir...]   # protoc's -I; default: the first proto's directory
#                      [OUT_DIR dir])         # default: ${CMAKE_CURRENT_BINARY_DIR}/weft_grpc_generated
#
# For protos/route_guide.proto it adds route_guide.pb.cc to the target's sources, OUT_DIR to its
# include directories (#include "route_guide.weft.h") and links protobuf (Debian: libprotobuf-dev,
# protobuf-compiler). A proto under a subdirectory of an import directory keeps it: -I protos and
# protos/a/b.proto give a/b.weft.h.
#
# The plugin: the protoc-gen-weft target when weft is built in the same project, else the one
# installed with weft's tools beside this package (Debian: weft-tools), else WEFT_PROTOC_GEN_WEFT.

function(weft_grpc_generate target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUT_DIR" "IMPORT_DIRS")
  set(protos ${arg_UNPARSED_ARGUMENTS})
  if(NOT protos)
    message(FATAL_ERROR "weft_grpc_generate(${target}): no .proto files given")
  endif()
  if(NOT arg_OUT_DIR)
    set(arg_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/weft_grpc_generated)
  endif()
  list(TRANSFORM protos PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ REGEX "^[^/]")
  if(NOT arg_IMPORT_DIRS)
    list(GET protos 0 first)
    get_filename_component(arg_IMPORT_DIRS ${first} DIRECTORY)
  endif()
  list(TRANSFORM arg_IMPORT_DIRS PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ REGEX "^[^/]")

  if(NOT TARGET protobuf::libprotobuf OR NOT Protobuf_PROTOC_EXECUTABLE)
    find_package(Protobuf REQUIRED)
  endif()
  if(TARGET protoc-gen-weft)
    set(plugin $<TARGET_FILE:protoc-gen-weft>)
    set(plugin_depends protoc-gen-weft)
    # In weft's own sanitizer builds the plugin is instrumented; protobuf's descriptors live until exit.
    set(run_env ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0)
  else()
    set(run_env)
    find_program(WEFT_PROTOC_GEN_WEFT protoc-gen-weft HINTS ${_weft_grpc_generate_bin_dir}
                 DOC "protoc-gen-weft, weft's protoc plugin")
    if(NOT WEFT_PROTOC_GEN_WEFT)
      message(FATAL_ERROR "weft_grpc_generate(${target}): protoc-gen-weft was not found (Debian: weft-tools); "
                          "set WEFT_PROTOC_GEN_WEFT to its path")
    endif()
    set(plugin ${WEFT_PROTOC_GEN_WEFT})
    set(plugin_depends ${WEFT_PROTOC_GEN_WEFT})
  endif()

  set(include_flags)
  foreach(dir IN LISTS arg_IMPORT_DIRS)
    list(APPEND include_flags -I ${dir})
  endforeach()
  file(MAKE_DIRECTORY ${arg_OUT_DIR})
  foreach(proto IN LISTS protos)
    set(relative)
    foreach(dir IN LISTS arg_IMPORT_DIRS)
      file(RELATIVE_PATH candidate ${dir} ${proto})
      if(NOT candidate MATCHES "^\\.\\./")
        set(relative ${candidate})
        break()
      endif()
    endforeach()
    if(NOT relative)
      message(FATAL_ERROR "weft_grpc_generate(${target}): ${proto} is under none of the import directories "
                          "(${arg_IMPORT_DIRS})")
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem ${relative})
    set(outputs ${arg_OUT_DIR}/${stem}.pb.cc ${arg_OUT_DIR}/${stem}.pb.h ${arg_OUT_DIR}/${stem}.weft.h)
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${run_env} ${Protobuf_PROTOC_EXECUTABLE} ${include_flags} --cpp_out=${arg_OUT_DIR} --weft_out=${arg_OUT_DIR}
              --plugin=protoc-gen-weft=${plugin} ${proto}
      DEPENDS ${proto} ${plugin_depends}
      COMMENT "protoc ${relative} (messages, weft's gRPC services and stubs)"
      VERBATIM)
    target_sources(${target} PRIVATE ${arg_OUT_DIR}/${stem}.pb.cc)
  endforeach()
  target_include_directories(${target} PUBLIC ${arg_OUT_DIR})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
endfunction()
