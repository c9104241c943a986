#pragma once
// weft-hello's streamed bodies (issue 30), in every mode:
//   POST /upload            reads the body as it arrives (BodyReader) and answers "<bytes> <fnv1a-64>"
//   GET  /download?bytes=N  answers N bytes produced 64 KiB at a time (BodyWriter), chunked; byte i
//                           is (i * 7 + 3) % 251 (scripts/measure-stream-bodies.sh checks them)
// Both keep what the server buffers bounded whatever the size: the upload's reader holds the socket's
// reading past 256 KiB, the download's writer waits while the channel is unwritable.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/codec/http1/body_writer.h"
#include "weft/codec/http1/query.h"
#include "weft/codec/http1/router.h"
#include "weft/weft.h"

namespace hello {

constexpr std::size_t kDownloadChunk = 64 * 1024;

inline void add_stream_routes(weft::http::Router& router) {
  using weft::http::HttpResponse;
  using weft::http::Request;
  router.post("/upload", [](Request&, weft::http::BodyReader& body) -> weft::Task<HttpResponse> {
    std::uint64_t bytes = 0;
    std::uint64_t hash = 14695981039346656037ull;
    while (std::optional<weft::ByteBuf> chunk = co_await body.next()) {
      for (char c : chunk->view()) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
      bytes += chunk->readable_bytes();
    }
    co_return HttpResponse(200)
        .content_type("text/plain")
        .body(std::to_string(bytes) + " " + std::to_string(hash) + "\n");
  });
  router.get("/download", [](Request& request) -> weft::Task<HttpResponse> {
    std::uint64_t n = 0;
    const std::optional<weft::http::QueryParams> query = weft::http::QueryParams::parse(request.query());
    const std::optional<std::string_view> bytes = query ? query->get("bytes") : std::nullopt;
    if (!bytes || std::from_chars(bytes->data(), bytes->data() + bytes->size(), n).ec != std::errc()) {
      co_return HttpResponse(400).body_view("bytes=N wanted\n");
    }
    weft::Channel& channel = request.channel();  // lives while the answer is produced
    co_return HttpResponse(200)
        .content_type("application/octet-stream")
        .stream([&channel, n](weft::http::BodyWriter& body) -> weft::Task<void> {
          for (std::uint64_t at = 0; at < n; at += kDownloadChunk) {
            const std::size_t size = static_cast<std::size_t>(std::min<std::uint64_t>(kDownloadChunk, n - at));
            weft::ByteBuf chunk = channel.allocator().buffer(size);
            std::uint8_t* out = chunk.write_ptr();
            for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::uint8_t>(((at + i) * 7 + 3) % 251);
            chunk.advance_writer(size);
            co_await body.write(std::move(chunk));
          }
          co_await body.finish();
        });
  });
}

}  // namespace hello
