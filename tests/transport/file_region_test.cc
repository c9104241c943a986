// A FileRegion written to a channel (through FileRegionWriter) on every transport: epoll and
// blocking send it from the file with sendfile(2), io_uring with splice(2) through the channel's
// pipe, queued in the write queue in order with the bytes around it (on io_uring each test also
// checks which path sent the bytes). Byte-exact beyond the socket buffers and the pipe, a slice of
// a file, regions and bytes interleaved, a peer that stops reading or reads slowly (writability
// off, then back), a peer that closes mid-file, a file that shrinks while sent, a close with a
// send in flight (the descriptors are let go), and io_uring without a pipe (EMFILE).

#include "weft/channel/file_region.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>

#include "../src/transport/io_uring/io_uring_driver.h"
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

// The descriptors this process has open.
std::size_t open_descriptors() {
  std::size_t n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) std::abort();
  while (::readdir(dir) != nullptr) ++n;
  ::closedir(dir);
  return n - 3;  // ".", ".." and the directory's own descriptor
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
  bool is_io_uring() const { return transport().name() == "io_uring"; }
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
    void open(int receive_buffer = 64 << 10) {
      client = test::BlockingClient(server->local_address().port(), {.receive_buffer = receive_buffer});
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
    // io_uring: the bytes of files its loop sent through a pipe (splice) and read into buffers.
    struct FilePaths {
      std::uint64_t spliced = 0;
      std::uint64_t read = 0;
    };
    FilePaths file_paths() const {
      const auto* driver = ch != nullptr ? dynamic_cast<IoUringDriver*>(&ch->loop().driver()) : nullptr;
      if (driver == nullptr) return {};
      return {driver->file_bytes_spliced(), driver->file_bytes_read()};
    }
    // io_uring: waits until its loop counted `bytes` of files sent through the pipe and none read.
    void expect_spliced(std::uint64_t bytes) const {
      if (dynamic_cast<IoUringDriver*>(&ch->loop().driver()) == nullptr) return;
      EXPECT_TRUE(test::eventually([&] { return file_paths().spliced == bytes; }, 10s))
          << "spliced " << file_paths().spliced << " of " << bytes << " bytes";
      EXPECT_EQ(file_paths().read, 0u) << "no file was read into buffers";
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
  c.expect_spliced(content.size() + slice_length);
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
  c.expect_spliced(content.size());
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
  if (is_io_uring()) {
    EXPECT_GE(c.file_paths().spliced, 4096u) << "io_uring sent what the peer read through its pipe";
    EXPECT_EQ(c.file_paths().read, 0u);
  }
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

// Regions of every shape (one byte, a page, unaligned offsets, larger than io_uring's pipe, the
// same file twice in a row) between buffers, some flushed separately: byte-exact, and each write's
// completion only once the bytes before it and its own were sent.
TEST_P(FileRegionTest, ManyRegionsAndBuffersInterleavedArriveByteExactWithTheirCompletions) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  struct Piece {
    std::uint64_t offset, length;  // a region, or bytes when length is 0
    bool flush;
  };
  const std::uint64_t big = std::min<std::uint64_t>(content.size() - 4095, (std::uint64_t{1} << 20) + 4097);
  const Piece pieces[] = {
      {0, 0, false}, {0, 1, false}, {4095, 4097, true},  {0, 0, false},           {4095, big, false},
      {7, 3, false}, {0, 0, true},  {100, 65536, false}, {100 + 65536, 1, false}, {content.size() - 1, 1, false},
      {0, 0, true}};
  std::string expected;
  std::uint64_t file_bytes = 0;
  std::vector<Future<void>> completions;
  int bytes_index = 0;
  for (const Piece& piece : pieces) {
    Promise<void> done(&c.ch->loop());
    completions.push_back(done.future());
    if (piece.length == 0) {
      const std::string bytes = "<" + std::to_string(bytes_index++) + ">";
      expected += bytes;
      c.ch->write(ByteBuf::copy_of(bytes), done);
    } else {
      expected += content.substr(piece.offset, piece.length);
      file_bytes += piece.length;
      c.ch->write(FileRegion::open(file.path, piece.offset, piece.length), done);
    }
    if (piece.flush) c.ch->flush();
  }
  // The peer has not read: the last write cannot have been sent whole (more than the socket buffers).
  EXPECT_EQ(completions.back().wait_for(0ms), false) << "complete before its bytes were sent";
  const std::string received = c.client.recv_exact(expected.size(), 60s).value_or("");
  EXPECT_TRUE(received == expected) << "got " << received.size() << " of " << expected.size() << " bytes";
  for (std::size_t i = 0; i < completions.size(); ++i) {
    ASSERT_TRUE(completions[i].wait_for(10s)) << "write " << i << " never completed";
    EXPECT_NO_THROW(completions[i].get()) << "write " << i;
  }
  c.expect_spliced(file_bytes);
  // The connection goes on: the next bytes follow the files.
  c.ch->write_and_flush(ByteBuf::copy_of("next"));
  EXPECT_EQ(c.client.recv_exact(4, 10s).value_or(""), "next");
}

// A peer that reads a little at a time: the queue (the whole file) keeps the channel unwritable
// until most of it has left, then it turns writable again; every byte arrives in order.
TEST_P(FileRegionTest, ASlowReaderGetsEveryByteAndWritabilityComesBack) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  c.ch->write(ByteBuf::copy_of("["));
  c.ch->write(FileRegion::open(file.path, 0, content.size() / 2));
  c.ch->write(FileRegion::open(file.path, content.size() / 2, content.size() - content.size() / 2));
  c.ch->write_and_flush(ByteBuf::copy_of("]"));
  const std::string expected = "[" + content + "]";
  std::string received;
  while (received.size() < expected.size()) {
    const std::string piece = c.client.recv_some(std::min<std::size_t>(7001, expected.size() - received.size()), 30s);
    if (piece.empty()) break;
    received += piece;
  }
  EXPECT_TRUE(received == expected) << "got " << received.size() << " of " << expected.size() << " bytes";
  EXPECT_TRUE(test::eventually([&] { return c.ch->is_writable(); }, 10s));
  const int unwritable = c.probe->index_of("unwritable");
  const int writable = c.probe->index_of("writable");
  EXPECT_GE(unwritable, 0) << "the queued file turned the channel unwritable";
  EXPECT_GT(writable, unwritable) << "and writable again once read";
  c.expect_spliced(content.size());
}

// A reader with a small receive window taking what arrives: the socket fills between two sends, so
// a send can find it full from its start (io_uring: a splice answers -EAGAIN, and the channel
// waits for room instead of failing the connection). Every byte arrives.
TEST_P(FileRegionTest, ASmallWindowReaderGetsEveryByteOfSeveralFiles) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open(16 << 10));
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  // Bytes before each file: their send ends with the socket (nearly) full, and the file's send starts.
  const std::string bytes = pattern(200 << 10);
  const std::string unit = bytes + content;
  constexpr int kFiles = 12;
  for (int i = 0; i < kFiles; ++i) {
    c.ch->write(ByteBuf::copy_of(bytes));
    c.ch->write(FileRegion::open(file.path, 0, content.size()));
  }
  c.ch->flush();
  std::string received;
  std::size_t mismatched_at = std::string::npos;
  while (received.size() < kFiles * unit.size()) {
    const std::string piece = c.client.recv_some(64 << 10, 30s);
    if (piece.empty()) break;
    for (std::size_t i = 0; i < piece.size() && mismatched_at == std::string::npos; ++i) {
      if (piece[i] != unit[(received.size() + i) % unit.size()]) mismatched_at = received.size() + i;
    }
    received += piece;
  }
  EXPECT_EQ(received.size(), kFiles * unit.size());
  EXPECT_EQ(mismatched_at, std::string::npos);
  EXPECT_TRUE(c.probe->first_error() == nullptr) << "the channel failed";
  c.expect_spliced(kFiles * content.size());
}

// The file shrinks under the region while it is sent: the channel fails and closes the connection
// (what was sent stays sent); nothing waits for bytes that will never come.
TEST_P(FileRegionTest, AFileTruncatedWhileSentClosesTheConnection) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  c.ch->write_and_flush(FileRegion::open(file.path, 0, content.size()));
  ASSERT_EQ(c.client.recv_exact(4096, 10s).value_or(""), content.substr(0, 4096));
  ASSERT_EQ(::truncate(file.path.c_str(), static_cast<off_t>(content.size() / 4 + 123)), 0);
  std::string rest;
  const test::StreamEnd end = c.client.recv_until_end(&rest, 60s);
  EXPECT_NE(end, test::StreamEnd::timeout) << "the connection must end, not hang";
  EXPECT_LT(4096 + rest.size(), content.size()) << "the region cannot have been sent whole";
  ASSERT_TRUE(c.probe->inactive.future().wait_for(10s)) << "the channel closed";
  EXPECT_EQ(c.probe->first_error_code(), ENODATA) << "the file ended before its region";
}

// A close while the file is being sent (io_uring: splices submitted or running, the pipe holding
// bytes): the completions that arrive after the close touch nothing freed (ASan), the file's
// descriptor and the pipe are let go.
TEST_P(FileRegionTest, ClosingWithASendInFlightLetsEveryDescriptorGo) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    Connection c(*this);
    ASSERT_NO_FATAL_FAILURE(c.open());
    const std::string content = pattern(kFileSize);
    TempFile file(content);
    const std::size_t descriptors = open_descriptors();  // the channel's socket, no pipe yet
    FileRegion region = FileRegion::open(file.path, 0, content.size());
    std::weak_ptr<const FileHandle> handle = region.file();
    if (round == 0 && !is_blocking()) {
      // Closed in the task that flushed: the splices are queued, not yet submitted. (Not on the
      // blocking transport, whose flush returns once the peer has read.)
      std::promise<void> closed;
      c.ch->loop().execute([ch = c.ch, region = std::move(region), &closed]() mutable {
        ch->pipeline().write_and_flush(std::move(region));
        ch->close();
        closed.set_value();
      });
      closed.get_future().wait();
    } else {
      // Closed as the socket fills (round 0 on blocking, 1), or once the peer has read a part (2).
      c.ch->write_and_flush(std::move(region));
      if (round == 2) {
        ASSERT_EQ(c.client.recv_exact(100000, 10s).value_or(""), content.substr(0, 100000));
      }
      ASSERT_TRUE(c.ch->close().wait_for(10s));
    }
    std::string ignored;
    EXPECT_NE(c.client.recv_until_end(&ignored, 30s), test::StreamEnd::timeout);
    EXPECT_TRUE(test::eventually([&] { return handle.expired(); }, 10s)) << "the file's descriptor is closed";
    EXPECT_TRUE(test::eventually([&] { return open_descriptors() == descriptors - 1; }, 10s))
        << open_descriptors() << " descriptors open, " << descriptors - 1
        << " expected (the socket and any pipe closed)";
  }
}

// Runs `fn` with `loop`'s io_uring driver on the loop's thread, and waits for it.
template <class F>
void on_driver(EventLoop& loop, F fn) {
  std::promise<void> done;
  loop.execute([&] {
    fn(IoUringDriver::of(loop));
    done.set_value();
  });
  done.get_future().wait();
}

// io_uring without a pipe (EMFILE): the region is read into buffers instead, byte-exact, and the
// response does not fail; the next region gets a pipe.
TEST_P(FileRegionTest, WithoutAPipeIoUringReadsTheFileInstead) {
  if (!is_io_uring()) GTEST_SKIP() << "the pipe is io_uring's";
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  on_driver(c.ch->loop(), [](IoUringDriver& driver) { driver.fail_pipes_for_testing(1); });
  c.ch->write(ByteBuf::copy_of("a"));
  c.ch->write(FileRegion::open(file.path, 3, content.size() - 3));
  c.ch->write_and_flush(ByteBuf::copy_of("b"));
  const std::string first = "a" + content.substr(3) + "b";
  std::string received = c.client.recv_exact(first.size(), 60s).value_or("");
  EXPECT_TRUE(received == first) << "got " << received.size() << " of " << first.size() << " bytes";
  EXPECT_TRUE(test::eventually([&] { return c.file_paths().read == content.size() - 3; }, 10s));
  EXPECT_EQ(c.file_paths().spliced, 0u);
  c.ch->write_and_flush(FileRegion::open(file.path, 0, 70000));
  received = c.client.recv_exact(70000, 10s).value_or("");
  EXPECT_TRUE(received == content.substr(0, 70000));
  EXPECT_TRUE(test::eventually([&] { return c.file_paths().spliced == 70000; }, 10s)) << "a pipe, the next time";
  EXPECT_TRUE(c.probe->first_error() == nullptr);
}

// A splice into the socket that answers -EAGAIN (the socket full when the round starts; forced
// here, the small-window test above meets it by chance) waits for room: the connection goes on.
TEST_P(FileRegionTest, ASpliceAnsweredEagainIsRetriedNotAFailure) {
  if (!is_io_uring()) GTEST_SKIP() << "io_uring's splices";
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string content = pattern(kFileSize);
  TempFile file(content);
  on_driver(c.ch->loop(), [](IoUringDriver& driver) { driver.eagain_splices_for_testing(3); });
  c.ch->write(FileRegion::open(file.path, 0, 100000));
  c.ch->write(ByteBuf::copy_of("|"));
  c.ch->write_and_flush(FileRegion::open(file.path, 0, content.size()));
  const std::string expected = content.substr(0, 100000) + "|" + content;
  const std::string received = c.client.recv_exact(expected.size(), 60s).value_or("");
  EXPECT_TRUE(received == expected) << "got " << received.size() << " of " << expected.size() << " bytes";
  EXPECT_TRUE(c.probe->first_error() == nullptr) << "the channel failed";
  c.expect_spliced(100000 + content.size());
}

WEFT_ON_EVERY_TRANSPORT(FileRegionTest);

}  // namespace
}  // namespace weft
