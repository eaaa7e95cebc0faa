#include "hub/write_overlay.h"

#include <algorithm>
#include <cstring>

namespace geofs::hub {

void WriteOverlay::SplitAt(uint64_t at) {
  auto it = pieces_.upper_bound(at);
  if (it == pieces_.begin()) return;
  --it;
  Piece& p = it->second;
  if (p.offset >= at || p.end() <= at) return;
  const size_t left = at - p.offset;
  Piece right{at, p.data.Slice(left, p.data.size() - left), p.seq};
  p.data.Truncate(left);
  pieces_.emplace(at, std::move(right));
}

template <typename Pred>
void WriteOverlay::EraseInside(uint64_t begin, uint64_t end, Pred remove) {
  SplitAt(begin);
  SplitAt(end);
  for (auto it = pieces_.lower_bound(begin); it != pieces_.end() && it->first < end;) {
    if (remove(it->second)) {
      bytes_ -= it->second.data.size();
      it = pieces_.erase(it);
    } else {
      ++it;
    }
  }
}

uint64_t WriteOverlay::Write(uint64_t offset, Buffer data) {
  const uint64_t seq = next_seq_++;
  if (data.empty()) return seq;
  const uint64_t end = offset + data.size();
  EraseInside(offset, end, [](const Piece&) { return true; });
  bytes_ += data.size();
  pieces_.emplace(offset, Piece{offset, std::move(data), seq});
  return seq;
}

std::vector<WriteOverlay::Piece> WriteOverlay::Pieces(uint64_t begin, uint64_t end) const {
  std::vector<Piece> out;
  auto it = pieces_.upper_bound(begin);
  if (it != pieces_.begin()) --it;
  for (; it != pieces_.end() && it->first < end; ++it) {
    const Piece& p = it->second;
    const uint64_t from = std::max(begin, p.offset);
    const uint64_t to = std::min(end, p.end());
    if (from >= to) continue;
    out.push_back(Piece{from, p.data.Slice(from - p.offset, to - from), p.seq});
  }
  return out;
}

void WriteOverlay::ApplyTo(uint64_t offset, std::span<uint8_t> out) const {
  for (const Piece& p : Pieces(offset, offset + out.size())) {
    std::memcpy(out.data() + (p.offset - offset), p.data.data(), p.data.size());
  }
}

std::vector<WriteOverlay::Range> WriteOverlay::Runs() const {
  std::vector<Range> runs;
  for (const auto& [offset, p] : pieces_) {
    if (!runs.empty() && runs.back().end == offset) {
      runs.back().end = p.end();
    } else {
      runs.push_back(Range{offset, p.end()});
    }
  }
  return runs;
}

void WriteOverlay::Release(uint64_t begin, uint64_t end, uint64_t max_seq) {
  if (begin >= end) return;
  EraseInside(begin, end, [max_seq](const Piece& p) { return p.seq <= max_seq; });
}

uint64_t WriteOverlay::end() const { return pieces_.empty() ? 0 : pieces_.rbegin()->second.end(); }

}  // namespace geofs::hub
