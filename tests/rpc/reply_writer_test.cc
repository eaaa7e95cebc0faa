#include "rpc/reply_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace geofs::rpc {
namespace {

// A connected, non-blocking stream socket pair with a small send buffer.
class SocketPair {
 public:
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    writer_ = fds[0];
    reader_ = fds[1];
    int small = 16 * 1024;
    ::setsockopt(writer_, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    ::fcntl(writer_, F_SETFL, ::fcntl(writer_, F_GETFL) | O_NONBLOCK);
    ::fcntl(reader_, F_SETFL, ::fcntl(reader_, F_GETFL) | O_NONBLOCK);
  }
  ~SocketPair() {
    if (writer_ >= 0) ::close(writer_);
    if (reader_ >= 0) ::close(reader_);
  }
  int writer() const { return writer_; }
  void CloseReader() {
    ::close(reader_);
    reader_ = -1;
  }
  // Reads whatever is waiting.
  void Drain(std::vector<uint8_t>& out) {
    uint8_t buf[64 * 1024];
    for (;;) {
      ssize_t n = ::read(reader_, buf, sizeof(buf));
      if (n <= 0) return;
      out.insert(out.end(), buf, buf + n);
    }
  }

 private:
  int writer_ = -1;
  int reader_ = -1;
};

// A temporary file holding `bytes`, shared like a backend's open file.
std::shared_ptr<int> TempFile(const std::vector<uint8_t>& bytes) {
  char path[] = "/tmp/reply_writer_test.XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::unlink(path);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed + (i >> 12));
  return v;
}

OutgoingReply ReplyWith(uint32_t xid, const std::shared_ptr<int>& file, uint64_t offset,
                        uint64_t length, std::vector<uint8_t> trailer) {
  OutgoingReply r{ReplyHeader::Accepted(xid, AcceptStat::kSuccess), {}};
  r.body.U32(7);
  r.body.OpaqueFileRef(FileRange{file, *file, offset, length});
  r.body.OpaqueRef(Buffer::CopyOf(std::span<const uint8_t>(trailer)));
  EXPECT_TRUE(r.header.SetBodySize(r.body.size()));
  return r;
}

// Writes `replies` to the pair, draining the reader whenever the socket is
// full, and returns what the reader received.
std::vector<uint8_t> WriteAll(SocketPair& pair, const std::vector<OutgoingReply>& replies,
                              int* would_block) {
  ReplyWriter writer;
  writer.Reset(replies);
  std::vector<uint8_t> received;
  for (;;) {
    Result<bool> done = writer.WriteSome(pair.writer());
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    if (!done.ok() || *done) break;
    ++*would_block;
    pair.Drain(received);
  }
  EXPECT_TRUE(writer.finished());
  pair.Drain(received);
  return received;
}

std::vector<uint8_t> Concatenated(const std::vector<OutgoingReply>& replies) {
  std::vector<uint8_t> all;
  for (const OutgoingReply& r : replies) {
    std::vector<uint8_t> one = r.Flatten();
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

TEST(ReplyWriterTest, FileRangesAndBuffersArriveInOrderThroughAFullSocket) {
  std::vector<uint8_t> content = Pattern(3 << 20, 5);
  auto file = TempFile(content);
  std::vector<OutgoingReply> replies;
  replies.push_back(ReplyWith(1, file, 0, 1 << 20, {1, 2, 3}));        // aligned
  replies.push_back(ReplyWith(2, file, 12345, 777777, {4, 5, 6, 7}));  // odd length: padded
  replies.push_back(ReplyWith(3, file, (3 << 20) - 10, 10, {}));
  SocketPair pair;
  int would_block = 0;
  std::vector<uint8_t> received = WriteAll(pair, replies, &would_block);
  std::vector<uint8_t> expected = Concatenated(replies);
  EXPECT_GT(would_block, 10);  // the small buffer really filled up
  ASSERT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected);
  // And the file bytes really are the file's: Flatten reads them back.
  const size_t data_at = replies[0].header.bytes().size() + 8;
  EXPECT_TRUE(std::equal(content.begin(), content.begin() + (1 << 20), received.begin() + data_at));
}

TEST(ReplyWriterTest, AFileThatShrankIsMadeUpWithZerosAndFramingHolds) {
  std::vector<uint8_t> content = Pattern(256 << 10, 9);
  auto file = TempFile(content);
  std::vector<OutgoingReply> replies;
  replies.push_back(ReplyWith(1, file, 0, 200 << 10, {42, 43}));
  replies.push_back(ReplyWith(2, file, 0, 16, {44}));
  ASSERT_EQ(::ftruncate(*file, 10000), 0);  // after the replies promised 200 KiB
  SocketPair pair;
  int would_block = 0;
  std::vector<uint8_t> received = WriteAll(pair, replies, &would_block);
  std::vector<uint8_t> expected = Concatenated(replies);  // Flatten zero-fills the same way
  ASSERT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected);
  const size_t data_at = replies[0].header.bytes().size() + 8;
  EXPECT_EQ(received[data_at + 9999], content[9999]);
  EXPECT_EQ(received[data_at + 10000], 0);
  EXPECT_EQ(received[data_at + (200 << 10) - 1], 0);
}

TEST(ReplyWriterTest, APeerThatWentAwayIsAnErrorNotASignal) {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &pipe, nullptr), 0);  // as the network threads do
  auto file = TempFile(Pattern(1 << 20, 1));
  std::vector<OutgoingReply> replies;
  replies.push_back(ReplyWith(1, file, 0, 1 << 20, {}));
  SocketPair pair;
  pair.CloseReader();
  ReplyWriter writer;
  writer.Reset(replies);
  Result<bool> done = writer.WriteSome(pair.writer());
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.status().ToString().find("Broken pipe"), std::string::npos)
      << done.status().ToString();
}

TEST(ReplyWriterTest, MemoryOnlyRepliesMatchTheirFlattenedForm) {
  std::vector<OutgoingReply> replies;
  for (uint32_t xid = 0; xid < 200; ++xid) {  // more segments than one sendmsg takes
    OutgoingReply r{ReplyHeader::Accepted(xid, AcceptStat::kSuccess), {}};
    r.body.U32(xid);
    r.body.OpaqueRef(Buffer::CopyOf(std::span<const uint8_t>(Pattern(xid * 97, 3))));
    ASSERT_TRUE(r.header.SetBodySize(r.body.size()));
    replies.push_back(std::move(r));
  }
  SocketPair pair;
  int would_block = 0;
  std::vector<uint8_t> received = WriteAll(pair, replies, &would_block);
  EXPECT_TRUE(received == Concatenated(replies));
}

}  // namespace
}  // namespace geofs::rpc
