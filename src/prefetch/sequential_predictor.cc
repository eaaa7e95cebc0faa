#include "prefetch/sequential_predictor.h"

#include <algorithm>

namespace geofs::prefetch {

void SequentialPredictor::Observe(const AccessEvent& event, std::vector<Want>* wants) {
  if (event.op != AccessOp::kRead || event.length == 0) return;
  if (files_.size() >= options_.max_files && !files_.contains(event.file)) files_.clear();
  FileStreams& f = files_[event.file];
  const uint64_t end = event.offset + event.length;
  auto near = [&](const Stream& s) {
    if (s.reads == 0) return false;
    uint64_t lo = s.mark > options_.tolerance ? s.mark - options_.tolerance : 0;
    return event.offset >= lo && event.offset <= s.mark + options_.tolerance;
  };
  Stream* s = near(f.s[0]) ? &f.s[0] : near(f.s[1]) ? &f.s[1] : nullptr;
  if (s == nullptr) {
    // A new stream, in place of the one used least recently.
    s = f.s[0].last_use <= f.s[1].last_use ? &f.s[0] : &f.s[1];
    *s = Stream{end, end, options_.initial_window, 0, 0};
  }
  s->mark = std::max(s->mark, end);
  s->last_use = ++tick_;
  ++s->reads;
  if (s->reads < options_.min_reads && event.offset != 0) return;
  // Ask again only once the reader has used half of what was asked for.
  const uint64_t ahead = s->asked_to > s->mark ? s->asked_to - s->mark : 0;
  if (ahead > s->window / 2) return;
  const uint64_t from = std::max(s->asked_to, s->mark);
  const uint64_t to = s->mark + s->window;
  if (to > from) wants->push_back(Want{WantKind::kFileRange, event.file, from, to - from});
  s->asked_to = std::max(s->asked_to, to);
  s->window = std::min(options_.max_window, s->window * 2);
}

}  // namespace geofs::prefetch
