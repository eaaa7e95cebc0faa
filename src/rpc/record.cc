#include "rpc/record.h"

#include <algorithm>
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
  direct_read_ = in_fragment_ && staged_ == 0 && fragment_left_ >= staging_bytes_ / 2;
  if (direct_read_) return {record_.get() + record_len_, fragment_left_};
  return {staging_.get() + staged_, staging_bytes_ - staged_};
}

Status RecordReader::Commit(size_t n, std::vector<Record>* out) {
  if (!failure_.ok()) return failure_;
  if (direct_read_) {
    direct_read_ = false;
    record_len_ += n;
    fragment_left_ -= n;
    if (fragment_left_ == 0) FinishFragment(out);
    return Status::Ok();
  }
  staged_ += n;
  failure_ = ProcessStaged(out);
  return failure_;
}

Status RecordReader::Feed(std::span<const uint8_t> bytes, std::vector<Record>* out) {
  while (!bytes.empty()) {
    std::span<uint8_t> target = ReadTarget();
    size_t n = std::min(target.size(), bytes.size());
    std::memcpy(target.data(), bytes.data(), n);
    GEOFS_RETURN_IF_ERROR(Commit(n, out));
    bytes = bytes.subspan(n);
  }
  return Status::Ok();
}

Status RecordReader::ProcessStaged(std::vector<Record>* out) {
  const uint8_t* data = staging_.get();
  size_t pos = 0;
  while (true) {
    if (!in_fragment_) {
      if (staged_ - pos < 4) break;
      uint32_t mark = (uint32_t{data[pos]} << 24) | (uint32_t{data[pos + 1]} << 16) |
                      (uint32_t{data[pos + 2]} << 8) | data[pos + 3];
      pos += 4;
      GEOFS_RETURN_IF_ERROR(StartFragment(mark));
    }
    size_t take = std::min(fragment_left_, staged_ - pos);
    if (take > 0) {
      std::memcpy(record_.get() + record_len_, data + pos, take);
      record_len_ += take;
      fragment_left_ -= take;
      pos += take;
    }
    if (fragment_left_ > 0) break;  // everything staged is consumed
    FinishFragment(out);
  }
  // At most 3 bytes of a fragment mark remain; keep them at the front.
  staged_ -= pos;
  if (staged_ > 0) std::memmove(staging_.get(), data + pos, staged_);
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

void RecordReader::FinishFragment(std::vector<Record>* out) {
  in_fragment_ = false;
  if (!last_fragment_) return;
  const uint8_t* bytes = record_.get();
  out->push_back(Record{std::move(record_), {bytes, record_len_}});
  record_.reset();
  record_capacity_ = 0;
  record_len_ = 0;
}

}  // namespace geofs::rpc
