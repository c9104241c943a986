#pragma once
// A BIO of weft's own: OpenSSL reads received ciphertext straight from a ByteBuf and writes the
// ciphertext it makes straight into a pooled ByteBuf (no memory BIO in between).

#include <openssl/bio.h>

#include "weft/codec/tls/tls_handler.h"

namespace weft::detail {

// A BIO over `io` (which must outlive it), or null when OpenSSL has no memory. Reads take from
// io.in and ask to be retried when it is empty; writes append to io.out, taking a buffer of
// io.out_reserve bytes from io.allocator when it has none.
BIO* new_tls_bio(TlsIo& io);

}  // namespace weft::detail
