#pragma once
/// @file
/// Everything a weft application usually needs, in one include: buffers, channels and bootstraps,
/// event loops, futures and coroutines, the transports, the frame and string codecs, HTTP/1.1
/// (server and client codecs, router, query helpers), HTTP/2 (server codec, streams as channels,
/// the detector that serves HTTP/1.1 and h2c on one port, the client codec), the client layer
/// (the HTTP client with its pools, HTTP/2 connections), gRPC (the server core on bytes), TLS
/// (contexts, the handler, ALPN), the common handlers, and metrics (registry, exposition, the admin
/// endpoints).
///
/// Left out, include them where you need them:
/// - weft/grpc/protobuf_adapter.h  typed gRPC methods on protobuf messages (needs libprotobuf)
/// - weft/grpc/generated.h         what protoc-gen-weft's code uses (its .weft.h headers include it)
/// - weft/grpc/reflection.h        gRPC server reflection (needs libprotobuf)
/// - weft/channel/embedded_channel.h     running a pipeline without sockets, for tests
/// - weft/buffer/leak_detector.h, weft/buffer/pooled_byte_buf_allocator.h
///                                       tuning and debugging the allocator behind ByteBufAllocator
/// - weft/channel/transport.h, weft/channel/outbound_buffer.h, weft/core/io_driver.h
///                                       writing a transport of your own
/// - weft/codec/http1/request_parser.h, body_decoder.h
///                                       the HTTP/1 parser pieces the codecs are made of
/// - weft/metrics/detail/thread_cells.h the per-thread cells behind the metric handles
/// - weft/core/frame_pool.h, inline_ring.h, mpsc_queue.h
///                                       building blocks of the core, used through the types above

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/buffer/composite_byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/channel.h"
#include "weft/channel/channel_config.h"
#include "weft/channel/connection.h"
#include "weft/channel/context.h"
#include "weft/channel/drain.h"
#include "weft/channel/events.h"
#include "weft/channel/file_region.h"
#include "weft/channel/file_region_writer.h"
#include "weft/channel/handler.h"
#include "weft/channel/pipeline.h"
#include "weft/channel/socket_address.h"
#include "weft/client/http2_connection.h"
#include "weft/client/http_client.h"
#include "weft/client/websocket_options.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/delimiter_based_frame_decoder.h"
#include "weft/codec/fixed_length_frame_decoder.h"
#include "weft/codec/http1/access_log.h"
#include "weft/codec/http1/body_reader.h"
#include "weft/codec/http1/body_writer.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/compression.h"
#include "weft/codec/http1/cors.h"
#include "weft/codec/http1/file_response.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http1/middleware.h"
#include "weft/codec/http1/query.h"
#include "weft/codec/http1/request_id.h"
#include "weft/codec/http1/route_request.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http1/static_files.h"
#include "weft/codec/http2/cleartext_detector.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/settings.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/codec/length_field_based_frame_decoder.h"
#include "weft/codec/line_based_frame_decoder.h"
#include "weft/codec/message_to_message_codec.h"
#include "weft/codec/string_codec.h"
#include "weft/codec/tls/application_protocol_negotiation_handler.h"
#include "weft/codec/tls/optional_tls_handler.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/codec/websocket/client_upgrade.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/codec/websocket/frame.h"
#include "weft/codec/websocket/message.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/codec/websocket/utf8.h"
#include "weft/core/awaitables.h"
#include "weft/core/clock.h"
#include "weft/core/cpu_affinity.h"
#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/executor_group.h"
#include "weft/core/future.h"
#include "weft/core/log.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"
#include "weft/core/when.h"
#include "weft/dns/dns_error.h"
#include "weft/dns/happy_eyeballs.h"
#include "weft/dns/hosts_file.h"
#include "weft/dns/resolver.h"
#include "weft/grpc/health.h"
#include "weft/grpc/message_framing.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/service_registry.h"
#include "weft/grpc/status.h"
#include "weft/grpc/unary_responder.h"
#include "weft/handler/connection_limit_handler.h"
#include "weft/handler/flush_consolidation_handler.h"
#include "weft/handler/idle_state_handler.h"
#include "weft/handler/logging_handler.h"
#include "weft/metrics/admin/admin_server.h"
#include "weft/metrics/connection_metrics.h"
#include "weft/metrics/event_loop_metrics.h"
#include "weft/metrics/http_server_metrics.h"
#include "weft/metrics/instrumentation.h"
#include "weft/metrics/registry.h"
#include "weft/transport/blocking.h"
#include "weft/transport/epoll.h"
#include "weft/transport/io_uring.h"
#include "weft/transport/transport_named.h"
