#include "chunk/chunker.h"

#include <algorithm>
#include <array>
#include <bit>

namespace geofs::chunk {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a fixed seed gives every build and
// every machine the same 256 gear values, hence the same chunk boundaries.
constexpr std::array<uint64_t, 256> MakeGearTable() {
  std::array<uint64_t, 256> table{};
  uint64_t state = 0x67656f6673636463ull;  // "geofscdc"
  for (uint64_t& v : table) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    v = z ^ (z >> 31);
  }
  return table;
}

constexpr std::array<uint64_t, 256> kGear = MakeGearTable();

// The top `bits` bits of a 64-bit word.
constexpr uint64_t TopBitsMask(int bits) { return bits == 0 ? 0 : ~0ull << (64 - bits); }

}  // namespace

Status ChunkerOptions::Validate() const {
  auto bad = [](std::string_view why) {
    return Status::InvalidArgument("chunker options: " + std::string(why));
  };
  if (min_size < 64) return bad("min_size must be at least 64 bytes");
  if (!(min_size < avg_size && avg_size < max_size)) {
    return bad("need min_size < avg_size < max_size");
  }
  if (max_size > kMaxChunkSizeLimit) return bad("max_size must be at most 64 MiB");
  if (!std::has_single_bit(avg_size)) return bad("avg_size must be a power of two");
  if (normalization < 0 || normalization > 3) return bad("normalization must be 0..3");
  return Status::Ok();
}

Chunker::Chunker(const ChunkerOptions& options)
    : min_size_(options.min_size),
      avg_size_(options.avg_size),
      max_size_(options.max_size),
      mask_small_(TopBitsMask(std::countr_zero(options.avg_size) + options.normalization)),
      mask_large_(TopBitsMask(std::countr_zero(options.avg_size) - options.normalization)) {}

void Chunker::Reset() {
  length_ = 0;
  fp_ = 0;
}

size_t Chunker::Scan(std::span<const uint8_t> data, bool* boundary) {
  *boundary = false;
  const uint8_t* p = data.data();
  const size_t n = data.size();
  size_t i = 0;

  // The first min_size bytes can hold no boundary: skip them unhashed.
  if (length_ < min_size_) {
    size_t skip = std::min(n, min_size_ - length_);
    length_ += skip;
    i = skip;
    if (length_ < min_size_) return n;
  }

  uint64_t fp = fp_;
  // Hashes the next `budget` bytes under `mask`; true at the first cut, with
  // i just past it.
  auto scan = [&](size_t budget, uint64_t mask) {
    const size_t end = i + budget;
    // `mask` selects top bits, so (h & mask) == 0 is h <= ~mask.
    const uint64_t limit = ~mask;
    // Four bytes per step: each of the four hashes is computed from fp
    // directly, so the serial chain is one shift and one add per step
    // instead of per byte. A step holding a cut is redone byte by byte.
    while (end - i >= 4) {
      const uint64_t g0 = kGear[p[i]], g1 = kGear[p[i + 1]];
      const uint64_t g2 = kGear[p[i + 2]], g3 = kGear[p[i + 3]];
      const uint64_t t1 = g0;
      const uint64_t t2 = (t1 << 1) + g1;
      const uint64_t t3 = (t2 << 1) + g2;
      const uint64_t t4 = (t3 << 1) + g3;
      const uint64_t h1 = (fp << 1) + t1, h2 = (fp << 2) + t2;
      const uint64_t h3 = (fp << 3) + t3, h4 = (fp << 4) + t4;
      if (std::min(std::min(h1, h2), std::min(h3, h4)) <= limit) break;
      fp = h4;
      i += 4;
    }
    while (i < end) {
      fp = (fp << 1) + kGear[p[i++]];
      if (fp <= limit) return true;
    }
    return false;
  };

  if (length_ < avg_size_) {
    size_t start = i;
    bool found = scan(std::min(n - i, avg_size_ - length_), mask_small_);
    length_ += i - start;
    if (found) {
      Reset();
      *boundary = true;
      return i;
    }
    if (length_ < avg_size_) {  // all of data consumed
      fp_ = fp;
      return n;
    }
  }
  size_t start = i;
  bool found = scan(std::min(n - i, max_size_ - length_), mask_large_);
  length_ += i - start;
  if (found || length_ == max_size_) {
    Reset();
    *boundary = true;
    return i;
  }
  fp_ = fp;
  return n;
}

std::vector<size_t> ChunkLengths(std::span<const uint8_t> data, const ChunkerOptions& options) {
  std::vector<size_t> lengths;
  Chunker chunker(options);
  size_t start = 0;
  size_t pos = 0;
  while (pos < data.size()) {
    bool boundary;
    pos += chunker.Scan(data.subspan(pos), &boundary);
    if (boundary) {
      lengths.push_back(pos - start);
      start = pos;
    }
  }
  if (start < data.size()) lengths.push_back(data.size() - start);
  return lengths;
}

ChunkSplitter::ChunkSplitter(const ChunkerOptions& options, Sink sink)
    : chunker_(options), sink_(std::move(sink)) {}

Status ChunkSplitter::Write(std::span<const uint8_t> data) { return Split(data, false); }

Status ChunkSplitter::WriteLast(std::span<const uint8_t> data) {
  GEOFS_RETURN_IF_ERROR(Split(data, true));
  return Finish();
}

Status ChunkSplitter::Split(std::span<const uint8_t> data, bool last) {
  size_t pos = 0;
  while (pos < data.size()) {
    bool boundary;
    size_t start = pos;
    pos += chunker_.Scan(data.subspan(pos), &boundary);
    std::span<const uint8_t> piece = data.subspan(start, pos - start);
    // The stream's tail, whole in `data`, is a chunk as it stands.
    if (!boundary && last && pending_.empty()) boundary = true;
    if (!boundary) {
      pending_.insert(pending_.end(), piece.begin(), piece.end());
      continue;
    }
    if (pending_.empty()) {
      GEOFS_RETURN_IF_ERROR(sink_(piece));
    } else {
      pending_.insert(pending_.end(), piece.begin(), piece.end());
      Status s = sink_(pending_);
      pending_.clear();
      GEOFS_RETURN_IF_ERROR(s);
    }
  }
  return Status::Ok();
}

Status ChunkSplitter::Finish() {
  chunker_.Reset();
  if (pending_.empty()) return Status::Ok();
  Status s = sink_(pending_);
  pending_.clear();
  return s;
}

}  // namespace geofs::chunk
