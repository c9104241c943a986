#pragma once
/// @file
/// Channel options. A ChannelConfig holds every option with its default; ChannelOption<T> names one
/// field so that bootstraps can set options fluently and type-checked:
///
///   ServerBootstrap().option(option::backlog, 4096).child_option(option::tcp_nodelay, true)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weft/core/clock.h"

namespace weft {

/// Every option of a channel, with its default. Set them through the bootstraps (option(),
/// child_option()) or, on the loop thread, through Channel::config().
struct ChannelConfig {
  // (Read on every read batch and flush, so they come first: one cache line of the channel.)
  // reading
  bool auto_read = true;              ///< read continuously (see Channel::set_auto_read)
  bool allow_half_closure = false;    ///< the peer's FIN leaves the channel open for writing
  int max_messages_per_read = 16;     ///< reads (accepts, for a server) per read batch
  // writing: writes per flush before yielding to other channels
  int write_spin_count = 16;          ///< writes per flush before yielding to other channels
  std::size_t read_buffer_min = 64;             ///< smallest read buffer (AdaptiveReadSizer)
  std::size_t read_buffer_initial = 2048;       ///< first read buffer's size (AdaptiveReadSizer)
  std::size_t read_buffer_max = 64 * 1024;      ///< largest read buffer (AdaptiveReadSizer)
  // server sockets
  int backlog = 1024;                 ///< listen() backlog
  bool reuse_address = true;          ///< SO_REUSEADDR
  bool reuse_port = false;            ///< SO_REUSEPORT
  // connected sockets
  bool tcp_nodelay = true;            ///< TCP_NODELAY
  bool keep_alive = false;            ///< SO_KEEPALIVE
  int send_buffer_size = 0;     ///< SO_SNDBUF; 0 keeps the kernel's default
  int receive_buffer_size = 0;  ///< SO_RCVBUF; 0 keeps the kernel's default
  Duration connect_timeout = std::chrono::seconds(30);  ///< a connect fails with ConnectTimeoutError after this
  // write queue: above high the channel turns unwritable, below low writable again
  std::size_t write_buffer_high_water_mark = 64 * 1024;  ///< above it the channel turns unwritable
  std::size_t write_buffer_low_water_mark = 32 * 1024;   ///< below it the channel turns writable again
  /// Blocking transport: a send that makes no progress for this long fails and closes the channel
  /// (checked as each send slice of 250 ms returns; read when it is checked, so a codec may set it
  /// after the channel is active); zero: no limit. The event-driven transports never block in a send: their
  /// handlers time writes out (http::Limits::send_timeout, WriteTimeoutHandler), and the HTTP
  /// server codec sets this from its own send timeout.
  Duration send_timeout = Duration::zero();

  /// Throws std::invalid_argument naming the first inconsistent option.
  void validate() const;
};

/// Names one ChannelConfig field of type T, for the bootstraps' option() and child_option().
template <class T>
struct ChannelOption {
  T ChannelConfig::*field;  ///< the field it sets
  std::string_view name;    ///< the option's name
};

/// One ChannelOption per ChannelConfig field, named as the field.
namespace option {
/// @name Options
//@{
/// The option that sets the ChannelConfig field of the same name.
inline constexpr ChannelOption<int> backlog{&ChannelConfig::backlog, "backlog"};
inline constexpr ChannelOption<bool> reuse_address{&ChannelConfig::reuse_address, "reuse_address"};
inline constexpr ChannelOption<bool> reuse_port{&ChannelConfig::reuse_port, "reuse_port"};
inline constexpr ChannelOption<bool> tcp_nodelay{&ChannelConfig::tcp_nodelay, "tcp_nodelay"};
inline constexpr ChannelOption<bool> keep_alive{&ChannelConfig::keep_alive, "keep_alive"};
inline constexpr ChannelOption<int> send_buffer_size{&ChannelConfig::send_buffer_size, "send_buffer_size"};
inline constexpr ChannelOption<int> receive_buffer_size{&ChannelConfig::receive_buffer_size, "receive_buffer_size"};
inline constexpr ChannelOption<Duration> connect_timeout{&ChannelConfig::connect_timeout, "connect_timeout"};
inline constexpr ChannelOption<Duration> send_timeout{&ChannelConfig::send_timeout, "send_timeout"};
inline constexpr ChannelOption<std::size_t> write_buffer_high_water_mark{
    &ChannelConfig::write_buffer_high_water_mark, "write_buffer_high_water_mark"};
inline constexpr ChannelOption<std::size_t> write_buffer_low_water_mark{&ChannelConfig::write_buffer_low_water_mark,
                                                                        "write_buffer_low_water_mark"};
inline constexpr ChannelOption<bool> auto_read{&ChannelConfig::auto_read, "auto_read"};
inline constexpr ChannelOption<bool> allow_half_closure{&ChannelConfig::allow_half_closure, "allow_half_closure"};
inline constexpr ChannelOption<int> max_messages_per_read{&ChannelConfig::max_messages_per_read,
                                                          "max_messages_per_read"};
inline constexpr ChannelOption<std::size_t> read_buffer_min{&ChannelConfig::read_buffer_min, "read_buffer_min"};
inline constexpr ChannelOption<std::size_t> read_buffer_initial{&ChannelConfig::read_buffer_initial,
                                                                "read_buffer_initial"};
inline constexpr ChannelOption<std::size_t> read_buffer_max{&ChannelConfig::read_buffer_max, "read_buffer_max"};
inline constexpr ChannelOption<int> write_spin_count{&ChannelConfig::write_spin_count, "write_spin_count"};
//@}
}  // namespace option

/// Chooses the size of the next read buffer from what recent reads returned: grows at once when a
/// read fills its buffer, shrinks after two reads in a row that would have fit a smaller one.
/// Loop thread only.
class AdaptiveReadSizer {
 public:
  /// Sizes between `min` and `max`, starting at `initial`.
  AdaptiveReadSizer(std::size_t min, std::size_t initial, std::size_t max) noexcept;
  /// The size for the next read buffer.
  std::size_t next_size() const noexcept { return size_; }
  /// Records what the last read returned.
  void record(std::size_t bytes_read) noexcept;

 private:
  std::size_t min_, max_, size_;
  bool shrink_pending_ = false;
};

}  // namespace weft
