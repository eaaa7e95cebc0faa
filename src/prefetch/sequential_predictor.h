// SequentialPredictor: a file read front to back is read further.
//
// Per file it keeps up to two streams, each a high-water mark. A READ that
// starts within `tolerance` of a stream's mark (before or after it) belongs
// to that stream, so READs of several connections interleaving on one shard
// still count as one sequential reader; any other READ starts a new stream
// (replacing the one used least recently). Once a stream has seen
// `min_reads`, it asks for the next `window` bytes past its mark; the window
// doubles with every request up to `max_window` (sized by the owner to the
// link's bandwidth-delay product), as readahead does in Linux and
// Mountpoint-s3.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "prefetch/predictor.h"

namespace geofs::prefetch {

struct SequentialOptions {
  uint64_t initial_window = 1 << 20;
  uint64_t max_window = 64 << 20;
  uint64_t tolerance = 32 << 20;  // 4 connections x 8 READs of 1 MiB
  uint32_t min_reads = 2;
  size_t max_files = 4096;  // files tracked; beyond it the table starts over
};

class SequentialPredictor final : public Predictor {
 public:
  explicit SequentialPredictor(SequentialOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "sequential"; }
  void Observe(const AccessEvent& event, std::vector<Want>* wants) override;

 private:
  struct Stream {
    uint64_t mark = 0;       // highest byte read + 1
    uint64_t asked_to = 0;   // predicted up to here
    uint64_t window = 0;
    uint32_t reads = 0;
    uint64_t last_use = 0;  // tick_ when last used
  };
  struct FileStreams {
    Stream s[2];
  };
  const SequentialOptions options_;
  std::unordered_map<FileId, FileStreams, FileIdHash> files_;
  uint64_t tick_ = 0;
};

}  // namespace geofs::prefetch
