// Predictor: one small, explainable rule that turns the access stream into
// things worth fetching before they are asked for. The Prefetcher
// (prefetcher.h) feeds every predictor every event, tags what each asks
// for, scores it by how much of it was read, and shares its byte budget by
// those scores.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "prefetch/access_event.h"

namespace geofs::prefetch {

enum class WantKind : uint8_t {
  kFileRange,  // bytes [offset, offset + length) of a file (length 0: to its end)
  kDirectory,  // every file of a directory not read yet, in listing order
  kTree,       // the same for the directory and every directory below it
};

struct Want {
  WantKind kind = WantKind::kFileRange;
  FileId target;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class Predictor {
 public:
  virtual ~Predictor() = default;
  virtual std::string_view name() const = 0;
  // Sees one event; appends what it predicts to `wants`. Called by one
  // thread at a time, in event order.
  virtual void Observe(const AccessEvent& event, std::vector<Want>* wants) = 0;
};

}  // namespace geofs::prefetch
