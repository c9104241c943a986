#pragma once
/// @file
/// Compression: gzip for response bodies (zlib), chosen by the request's Accept-Encoding.
///
///   router->use(std::make_shared<weft::http::Compression>());   // after AccessLog, RequestId
///
/// A response is compressed when all hold: the client accepts gzip (Accept-Encoding with gzip or
/// x-gzip, or "*" when gzip is not named, and a q-value above 0), the status has a body (not 1xx,
/// 204, 206 or 304), the response has no Content-Encoding yet, its Content-Type is not an already
/// compressed kind (CompressionOptions::skip_types, by prefix), its body is at least min_size bytes,
/// and the gzip output is smaller. Every response that passed the type and size checks gets
/// Vary: Accept-Encoding, compressed or not, so that caches keep the two apart. The compressed body
/// is a new owned buffer; HEAD is answered as its GET, so Content-Length agrees.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/codec/http1/middleware.h"

namespace weft::http {

/// When and how Compression compresses.
struct CompressionOptions {
  /// Smaller bodies are sent as they are (gzip's header and trailer are 18 bytes).
  std::size_t min_size = 1024;
  /// zlib's level, 1 (fastest) to 9 (smallest).
  int level = 6;
  /// Content types that are compressed already (case-insensitive prefixes of Content-Type).
  std::vector<std::string> skip_types = {"image/",
                                         "video/",
                                         "audio/",
                                         "font/woff",
                                         "application/zip",
                                         "application/gzip",
                                         "application/x-gzip",
                                         "application/x-bzip2",
                                         "application/x-xz",
                                         "application/zstd",
                                         "application/x-7z-compressed",
                                         "application/vnd.rar",
                                         "application/pdf"};
};

/// Compresses response bodies with gzip (see the file's description). Thread-safe.
class Compression final : public Middleware {
 public:
  /// Throws std::invalid_argument for a level outside 1..9.
  explicit Compression(CompressionOptions options = {});
  /// Compresses the response when the rules allow.
  void after(Request& request, HttpResponse& response) override;
  /// Whether an Accept-Encoding value accepts gzip (q-values honoured; see the file's description).
  static bool accepts_gzip(std::string_view accept_encoding) noexcept;
  /// `data` as a gzip member, at `level`; an empty optional when zlib fails.
  static std::optional<ByteBuf> gzip(ByteBufAllocator& allocator, std::string_view data, int level);

 private:
  bool compressible_type(std::optional<std::string_view> content_type) const noexcept;
  CompressionOptions options_;
};

}  // namespace weft::http
