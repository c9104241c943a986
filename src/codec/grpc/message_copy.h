#pragma once
// The size below which a gRPC message is copied behind its 5-byte prefix (one chunk); from it the
// message leaves by reference after a prefix of its own (the HTTP/2 codec frames large chunks without
// copying them). The server's and the client's writes share it.

#include <cstddef>

namespace weft::grpc::detail {

inline constexpr std::size_t kCopyBelowBytes = 8 * 1024;

}  // namespace weft::grpc::detail
