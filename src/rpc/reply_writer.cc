#include "rpc/reply_writer.h"

#include <sys/sendfile.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace geofs::rpc {
namespace {

constexpr size_t kMaxIov = 64;              // segments per sendmsg
constexpr size_t kMaxSendfile = 1u << 30;   // bytes per sendfile call
const std::array<uint8_t, 64 * 1024> kZeros{};

Status SocketError(const char* what) {
  return Status::IoError(std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

void ReplyWriter::Reset(std::span<const OutgoingReply> replies) {
  segments_.clear();
  index_ = 0;
  offset_ = 0;
  for (const OutgoingReply& reply : replies) {
    reply.ForEachSegment(xdr::Overloaded{
        [this](std::span<const uint8_t> s) {
          if (!s.empty()) segments_.push_back(Segment{s.data(), s.size(), nullptr});
        },
        [this](const FileRange& f) { segments_.push_back(Segment{nullptr, f.length, &f}); }});
  }
}

Result<bool> ReplyWriter::WriteSome(int socket_fd) {
  while (!finished()) {
    Result<bool> progressed =
        IsMemory(segments_[index_]) ? SendMemory(socket_fd) : SendFile(socket_fd);
    if (!progressed.ok()) return progressed.status();
    if (!*progressed) return false;
  }
  return true;
}

Result<bool> ReplyWriter::SendMemory(int socket_fd) {
  iov_.clear();
  size_t i = index_;
  uint64_t skip = offset_;
  for (; i < segments_.size() && IsMemory(segments_[i]) && iov_.size() < kMaxIov; ++i) {
    const Segment& s = segments_[i];
    const uint64_t left = s.size - skip;
    if (s.zero_fill) {
      iov_.push_back({const_cast<uint8_t*>(kZeros.data()), std::min<uint64_t>(left, kZeros.size())});
      ++i;
      break;  // one zero run per call keeps the bookkeeping simple (rare path)
    }
    iov_.push_back({const_cast<uint8_t*>(s.data + skip), left});
    skip = 0;
  }
  msghdr msg{};
  msg.msg_iov = iov_.data();
  msg.msg_iovlen = iov_.size();
  // A file range right after this run: let the kernel coalesce the header
  // with the data instead of pushing a small segment of its own.
  const bool file_follows = i < segments_.size() && !IsMemory(segments_[i]);
  const int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (file_follows ? MSG_MORE : 0);
  for (;;) {
    ssize_t n = ::sendmsg(socket_fd, &msg, flags);
    if (n >= 0) {
      Advance(static_cast<uint64_t>(n));
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    return SocketError("sendmsg");
  }
}

Result<bool> ReplyWriter::SendFile(int socket_fd) {
  Segment& s = segments_[index_];
  off_t file_offset = static_cast<off_t>(s.file->offset + offset_);
  const size_t want = std::min<uint64_t>(s.size - offset_, kMaxSendfile);
  for (;;) {
    ssize_t n = ::sendfile(socket_fd, s.file->fd, &file_offset, want);
    if (n > 0) {
      Advance(static_cast<uint64_t>(n));
      return true;
    }
    if (n == 0) {
      s.zero_fill = true;  // the file shrank under us
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    return SocketError("sendfile");
  }
}

void ReplyWriter::Advance(uint64_t n) {
  while (n > 0) {
    const uint64_t left = segments_[index_].size - offset_;
    if (n < left) {
      offset_ += n;
      return;
    }
    n -= left;
    ++index_;
    offset_ = 0;
  }
}

}  // namespace geofs::rpc
