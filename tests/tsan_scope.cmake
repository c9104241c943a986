# What the tsan preset leaves out, and why. ThreadSanitizer finds races between threads; these test
# files drive their code on the test's own thread only (EmbeddedChannel, parsers, encoders, byte
# buffers), so under TSan they would run the release and asan checks again, five to ten times slower,
# and could find nothing. They run in the release and asan presets like every test. Every other test
# file runs under TSan: all of core, channel, transport, integration and tools, and the files of
# buffer, codec and handler that start threads or event loops (the pooled allocator's thread caches,
# the leak detector, the gRPC server, offload and write timeouts).
#
# weft_tsan_scope(<list variable>) removes the files below from the list. A file named here that
# starts a thread, a loop or a process fails the configure step: it must then run under TSan.
set(WEFT_TSAN_SINGLE_THREADED_TESTS
  buffer/byte_buf_test.cc
  buffer/composite_byte_buf_test.cc
  channel/no_allocation_test.cc
  codec/byte_to_message_decoder_test.cc
  codec/frame_decoders_test.cc
  codec/http1/body_decoder_test.cc
  codec/http1/client_codec_test.cc
  codec/http1/query_test.cc
  codec/http1/request_parser_test.cc
  codec/http1/router_test.cc
  codec/http1/server_codec_test.cc
  codec/http1/server_order_test.cc
  codec/http2/client_session_test.cc
  codec/http2/hpack_test.cc
  codec/http2/server_codec_test.cc
  codec/http2/session_test.cc
  codec/http2/stream_channel_test.cc
  codec/line_based_frame_decoder_test.cc
  codec/message_to_message_codec_test.cc
  codec/tls/handler_test.cc
  codec/tls/kernel_test.cc
  dns/hosts_file_test.cc
  grpc/compression_test.cc
  handler/handlers_test.cc)

# What starts a thread, an event loop or a process in a test.
set(WEFT_TSAN_THREAD_STARTERS
  "std::thread|std::jthread|std::async|pthread_create|EventLoopGroup|EventLoop loop|ExecutorGroup|Bootstrap|fork\\(|HelloProcess")

function(weft_tsan_scope list_var)
  set(kept)
  foreach(file IN LISTS ${list_var})
    file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR}/tests ${file})
    if(relative IN_LIST WEFT_TSAN_SINGLE_THREADED_TESTS)
      file(STRINGS ${file} starters REGEX "${WEFT_TSAN_THREAD_STARTERS}")
      if(starters)
        list(GET starters 0 first)
        message(FATAL_ERROR "tests/${relative} is left out of the tsan preset as single-threaded "
                            "(tests/tsan_scope.cmake), but starts threads: '${first}'")
      endif()
    else()
      list(APPEND kept ${file})
    endif()
  endforeach()
  set(${list_var} ${kept} PARENT_SCOPE)
endfunction()
