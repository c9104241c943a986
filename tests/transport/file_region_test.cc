// A FileRegion written to a channel (through FileRegionWriter) on every transport: epoll and
// blocking send it from the file with sendfile(2), queued in the write queue in order with the bytes
// around it; io_uring reads it into buffers. Byte-exact beyond the socket buffers, a slice of a
// file, a peer that stops reading (writability off, then back), a peer that closes mid-file (the
// descriptor is let go).

#include "weft/channel/file_region.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <memory>
#include <string>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "support/sanitizers.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/file_region_writer.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

// Far more than the socket buffers between server and client hold (64 KiB each way, set below).
#if defined(WEFT_TEST_SANITIZED)
constexpr std::size_t kFileSize = std::size_t{1} << 20;
#else
constexpr std::size_t kFileSize = std::size_t{4} << 20;
#endif

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i / 4093 + i * 7) % 26);
  return s;
}

// A temporary file holding `bytes`, removed with the object.
struct TempFile {
  explicit TempFile(const std::string& bytes) {
    const char* tmp = std::getenv("TMPDIR");
    path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/weft-region-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) std::abort();
    ::close(fd);
  }
  ~TempFile() { ::unlink(path.c_str()); }
  std::string path;
};

class FileRegionTest : public test::TransportTest {
 protected:
  // A server whose accepted channel (head -> file writer -> probe) the test drives, and a client
  // that reads only when told.
  struct Connection {
    explicit Connection(FileRegionTest& t) : group(t.transport(), t.loops(1, 3)) {
      ServerBootstrap b;
      b.group(group).child_option(option::send_buffer_size, 64 << 10).child_handler([this](Channel& ch) {
        ch.pipeline().add_last(FileRegionWriter::kName, std::make_shared<FileRegionWriter>());
        ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
      });
      server = b.bind(SocketAddress::loopback(0)).get();
    }
    void open() {
      client = test::BlockingClient(server->local_address().port(), {.receive_buffer = 64 << 10});
      ASSERT_TRUE(client.is_open());
      probe = probes.wait(0);
      ASSERT_NE(probe, nullptr);
      ASSERT_TRUE(probe->active.future().wait_for(5s));
      ch = probe->channel();
      ASSERT_NE(ch, nullptr);
    }
    // What the write queue and the writer hold right after `region` was written (not yet flushed),
    // read on the loop; then flushes. On the blocking transport the flush returns only once the
    // peer has taken the bytes, so this does not wait for it.
    struct Held {
      std::size_t writer_queued;
      std::size_t pending;
    };
    std::future<Held> write_then_flush(FileRegion region) {
      auto held = std::make_shared<std::promise<Held>>();
      std::future<Held> result = held->get_future();
      ch->loop().execute([ch = ch, region = std::move(region), held]() mutable {
        auto& writer = static_cast<FileRegionWriter&>(ch->pipeline().context(FileRegionWriter::kName)->handler());
        ch->pipeline().write(std::move(region));
        held->set_value({writer.queued(), ch->pending_write_bytes()});
        ch->pipeline().flush();
      });
      return result;
    }
    test::ProbeRegistry probes;  // outlives the group: the child initializer refers to it
    EventLoopGroup group;
    ChannelPtr server;
    test::BlockingClient client;
    std::shared_ptr<test::ProbeState> probe;
    ChannelPtr ch;
  };
};

TEST_P(FileRegionTest, FilesAndBytesArriveByteExactInWriteOrder) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  const std::uint64_t slice_at = 12345, slice_length = 70001;
  c.ch->write(ByteBuf::copy_of("head:"));
  c.ch->write(FileRegion::open(file.path, 0, content.size()));  // larger than the socket buffers
  c.ch->write(ByteBuf::copy_of(":mid:"));
  c.ch->write(FileRegion::open(file.path, slice_at, slice_length));  // a slice of the file
  c.ch->write_and_flush(ByteBuf::copy_of(":tail"));
  const std::string expected = "head:" + content + ":mid:" + content.substr(slice_at, slice_length) + ":tail";
  const std::string received = c.client.recv_exact(expected.size(), 60s).value_or("");
  EXPECT_TRUE(received == expected) << "got " << received.size() << " of " << expected.size() << " bytes";
}

TEST_P(FileRegionTest, APeerThatStopsReadingTurnsTheChannelUnwritableUntilItReads) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  auto held = c.write_then_flush(FileRegion::open(file.path, 0, content.size()));
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  const auto [writer_queued, pending] = held.get();
  if (c.ch->sends_files()) {
    EXPECT_EQ(writer_queued, 0u) << "the file goes whole to the write queue: nothing is read into buffers";
    EXPECT_EQ(pending, content.size()) << "its bytes count toward the water marks";
  } else {
    EXPECT_EQ(writer_queued, 1u) << "the writer reads the file as the channel is writable";
    EXPECT_LE(pending, c.ch->config().write_buffer_high_water_mark + FileRegionWriter::kChunkSize)
        << "a bounded part of it is read";
  }
  // The peer reads nothing: the socket buffers fill and the channel turns unwritable.
  EXPECT_TRUE(test::eventually([&] { return !c.ch->is_writable(); }, 10s));
  EXPECT_EQ(c.client.recv_exact(1024, 10s).value_or(""), content.substr(0, 1024));
  if (c.ch->sends_files()) {
    // The whole file sits in the queue from the start, so the queue only shrinks. (The reading
    // writer flips writability while the sockets fill: unwritable there may be a passing moment.)
    EXPECT_FALSE(c.ch->is_writable()) << "a little read does not bring the queue below its low water mark";
  }
  const std::string rest = c.client.recv_exact(content.size() - 1024, 60s).value_or("");
  EXPECT_TRUE(rest == content.substr(1024)) << "got " << rest.size() << " of the last " << content.size() - 1024;
  EXPECT_TRUE(test::eventually([&] { return c.ch->is_writable(); }, 10s)) << "writable again once it has read";
}

TEST_P(FileRegionTest, APeerThatClosesMidFileLetsTheDescriptorGo) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  FileRegion region = FileRegion::open(file.path, 0, content.size());
  std::weak_ptr<const FileHandle> handle = region.file();
  c.ch->write_and_flush(std::move(region));
  ASSERT_EQ(c.client.recv_exact(4096, 10s).value_or(""), content.substr(0, 4096));
  c.client.reset();  // RST: the server's next send fails
  ASSERT_TRUE(c.probe->inactive.future().wait_for(10s)) << "the channel closes on the failed send";
  EXPECT_TRUE(test::eventually([&] { return handle.expired(); }, 10s)) << "the file's descriptor is closed";
}

TEST_P(FileRegionTest, ClosingWithAFileQueuedLetsTheDescriptorGo) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  FileRegion region = FileRegion::open(file.path, 0, content.size());
  std::weak_ptr<const FileHandle> handle = region.file();
  c.ch->write_and_flush(std::move(region));
  EXPECT_TRUE(test::eventually([&] { return !c.ch->is_writable(); }, 10s));  // queued, the peer not reading
  ASSERT_TRUE(c.ch->close().wait_for(10s));
  EXPECT_TRUE(test::eventually([&] { return handle.expired(); }, 10s)) << "the file's descriptor is closed";
}

WEFT_ON_EVERY_TRANSPORT(FileRegionTest);

}  // namespace
}  // namespace weft
