#include "rpc/record.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace geofs::rpc {

std::array<uint8_t, 4> SingleFragmentMark(uint32_t size) {
  uint32_t mark = kLastFragmentFlag | size;
  return {static_cast<uint8_t>(mark >> 24), static_cast<uint8_t>(mark >> 16),
          static_cast<uint8_t>(mark >> 8), static_cast<uint8_t>(mark)};
}

RecordReader::RecordReader(size_t max_record_bytes, size_t staging_bytes)
    : max_record_bytes_(max_record_bytes),
      staging_bytes_(std::max<size_t>(staging_bytes, 8)),
      staging_(new uint8_t[staging_bytes_]) {}

std::span<uint8_t> RecordReader::ReadTarget() {
  // A large remainder of a fragment is read in place; smaller pieces go
  // through staging so that one read can pick up several small records.
  direct_read_ = in_fragment_ && begin_ == end_ && fragment_left_ >= staging_bytes_ / 2;
  if (direct_read_) return {record_.get() + record_len_, fragment_left_};
  // What is left is at most a partial fragment mark: cheap to move.
  if (begin_ > 0) {
    std::memmove(staging_.get(), staging_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  return {staging_.get() + end_, staging_bytes_ - end_};
}

void RecordReader::Commit(size_t n) {
  if (direct_read_) {
    direct_read_ = false;
    record_len_ += n;
    fragment_left_ -= n;
  } else {
    end_ += n;
  }
}

Status RecordReader::Feed(std::span<const uint8_t> bytes, std::vector<Record>* out) {
  while (!bytes.empty()) {
    std::span<uint8_t> target = ReadTarget();
    size_t n = std::min(target.size(), bytes.size());
    std::memcpy(target.data(), bytes.data(), n);
    Commit(n);
    GEOFS_RETURN_IF_ERROR(Take(SIZE_MAX, out));
    bytes = bytes.subspan(n);
  }
  return Status::Ok();
}

Status RecordReader::Take(size_t max_records, std::vector<Record>* out) {
  if (!failure_.ok()) return failure_;
  const uint8_t* data = staging_.get();
  size_t taken = 0;
  while (taken < max_records) {
    if (!in_fragment_) {
      if (end_ - begin_ < 4) break;
      const uint8_t* p = data + begin_;
      uint32_t mark =
          (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
      begin_ += 4;
      failure_ = StartFragment(mark);
      if (!failure_.ok()) return failure_;
    }
    size_t take = std::min(fragment_left_, end_ - begin_);
    if (take > 0) {
      std::memcpy(record_.get() + record_len_, data + begin_, take);
      record_len_ += take;
      fragment_left_ -= take;
      begin_ += take;
    }
    if (fragment_left_ > 0) break;  // the rest of the fragment is yet to come
    in_fragment_ = false;
    if (last_fragment_) {
      const uint8_t* bytes = record_.get();
      out->push_back(Record{std::move(record_), {bytes, record_len_}});
      record_.reset();
      record_capacity_ = 0;
      record_len_ = 0;
      ++taken;
    }
  }
  return Status::Ok();
}

Status RecordReader::StartFragment(uint32_t mark) {
  size_t len = mark & kMaxFragmentBytes;
  last_fragment_ = (mark & kLastFragmentFlag) != 0;
  if (len > max_record_bytes_ - record_len_) {
    return Status::InvalidArgument("record of at least " + std::to_string(record_len_ + len) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(max_record_bytes_));
  }
  size_t needed = record_len_ + len;
  if (needed > record_capacity_) {
    // The first fragment is usually the whole record: size it exactly. Later
    // fragments grow the storage geometrically so that a peer sending tiny
    // fragments costs linear, not quadratic, copying.
    size_t capacity = needed;
    if (record_len_ > 0) {
      capacity = std::max(needed, std::min(max_record_bytes_, 2 * record_capacity_));
    }
    auto grown = std::make_shared_for_overwrite<uint8_t[]>(capacity);
    if (record_len_ > 0) std::memcpy(grown.get(), record_.get(), record_len_);
    record_ = std::move(grown);
    record_capacity_ = capacity;
  }
  in_fragment_ = true;
  fragment_left_ = len;
  return Status::Ok();
}

}  // namespace geofs::rpc
