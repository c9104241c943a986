#include "weft/client/http2_connection.h"

#include <utility>

#include "weft/channel/bootstrap.h"
#include "weft/codec/tls/tls_handler.h"

namespace weft::client {

namespace {

// Connects through `bootstrap` (its loops set) with `options`.
Future<std::shared_ptr<Http2Connection>> connect_with(Bootstrap bootstrap, const SocketAddress& address,
                                                      Http2Connection::Options options) {
  if (options.tls && options.settings.scheme.empty()) options.settings.scheme = "https";
  auto codec = std::make_shared<http2::ClientCodec>(options.settings);
  std::shared_ptr<TlsHandler> tls;
  if (options.tls) tls = std::make_shared<TlsHandler>(options.tls, options.server_name);
  Promise<std::shared_ptr<Http2Connection>> ready;
  if (options.connect_timeout) bootstrap.option(option::connect_timeout, *options.connect_timeout);
  Future<ChannelPtr> connected = bootstrap.option(option::tcp_nodelay, true)
                                     .handler([codec, tls](Channel& ch) {
                                       if (tls) ch.pipeline().add_last("tls", tls);
                                       ch.pipeline().add_last("http2", codec);
                                     })
                                     .connect(address);
  connected.add_listener([ready, codec, tls](const Future<ChannelPtr>& f) mutable {
    if (auto error = f.error()) {
      ready.set_error(error);
      return;
    }
    ChannelPtr channel = f.get();
    auto when_settled = [ready, codec, channel]() mutable {
      codec->ready().add_listener([ready, codec, channel](const Future<void>& settings) mutable {
        if (auto error = settings.error()) {
          ready.set_error(error);
        } else {
          ready.set_value(std::make_shared<Http2Connection>(channel, codec));
        }
      });
    };
    if (!tls) {
      when_settled();
      return;
    }
    tls->handshake_future().add_listener([ready, tls, channel, when_settled](const Future<void>& h) mutable {
      if (auto error = h.error()) {
        ready.set_error(error);
        return;
      }
      if (tls->application_protocol() != "h2") {
        channel->close();
        ready.fail(Error("the server did not choose h2 by ALPN (it chose '" + tls->application_protocol() + "')"));
        return;
      }
      when_settled();
    });
  });
  return ready.future();
}

}  // namespace

Future<std::shared_ptr<Http2Connection>> Http2Connection::connect(EventLoopGroup& group, const SocketAddress& address,
                                                                  Options options) {
  Bootstrap bootstrap;
  bootstrap.group(group);
  return connect_with(std::move(bootstrap), address, std::move(options));
}

Future<std::shared_ptr<Http2Connection>> Http2Connection::connect(EventLoop& loop, const SocketAddress& address,
                                                                  Options options) {
  Bootstrap bootstrap;
  bootstrap.group(loop);
  return connect_with(std::move(bootstrap), address, std::move(options));
}

Future<http::HttpClientResponse> Http2Connection::request(http::HttpClientRequest request) {
  Promise<http::HttpClientResponse> done(&channel_->loop());
  Future<http::HttpClientResponse> future = done.future();
  const bool posted = channel_->loop().try_execute(
      [codec = codec_, request = std::move(request), done]() mutable { codec->request(std::move(request), done); });
  if (!posted) done.fail(ChannelClosedError("the HTTP/2 client's loop has terminated"));
  return future;
}

}  // namespace weft::client
