#include "tls_bio.h"

#include <algorithm>
#include <cstring>

#include "weft/buffer/byte_buf_allocator.h"

namespace weft::detail {

namespace {

TlsIo& io_of(BIO* bio) noexcept { return *static_cast<TlsIo*>(BIO_get_data(bio)); }

int bio_write(BIO* bio, const char* data, std::size_t n, std::size_t* written) {
  BIO_clear_retry_flags(bio);
  TlsIo& io = io_of(bio);
  try {  // no exception may cross OpenSSL's frames: a failed write is an OpenSSL error
    if (!io.out.has_storage()) io.out = io.allocator->buffer(std::max(n, io.out_reserve));
    io.out.write_bytes(data, n);
  } catch (...) {
    return 0;
  }
  *written = n;
  return 1;
}

int bio_read(BIO* bio, char* data, std::size_t n, std::size_t* read) {
  BIO_clear_retry_flags(bio);
  ByteBuf& in = io_of(bio).in;
  const std::size_t k = std::min(n, in.readable_bytes());
  *read = k;
  if (k == 0) {
    BIO_set_retry_read(bio);  // more will come: OpenSSL reports SSL_ERROR_WANT_READ
    return 0;
  }
  std::memcpy(data, in.read_ptr(), k);
  in.skip_bytes(k);
  return 1;
}

long bio_ctrl(BIO* bio, int command, long, void*) {
  switch (command) {
    case BIO_CTRL_FLUSH:  // the handler passes the output on itself
      return 1;
    case BIO_CTRL_PENDING:
      return static_cast<long>(io_of(bio).in.readable_bytes());
    case BIO_CTRL_WPENDING:
      return static_cast<long>(io_of(bio).out.readable_bytes());
    default:
      return 0;
  }
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

int bio_destroy(BIO*) { return 1; }

BIO_METHOD* method() {
  static BIO_METHOD* const kMethod = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "weft ByteBuf");
    if (m != nullptr) {
      BIO_meth_set_write_ex(m, bio_write);
      BIO_meth_set_read_ex(m, bio_read);
      BIO_meth_set_ctrl(m, bio_ctrl);
      BIO_meth_set_create(m, bio_create);
      BIO_meth_set_destroy(m, bio_destroy);
    }
    return m;
  }();
  return kMethod;
}

}  // namespace

BIO* new_tls_bio(TlsIo& io) {
  BIO_METHOD* m = method();
  if (m == nullptr) return nullptr;
  BIO* bio = BIO_new(m);
  if (bio != nullptr) BIO_set_data(bio, &io);
  return bio;
}

}  // namespace weft::detail
