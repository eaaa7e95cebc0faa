#include "prefetch/tree_predictor.h"

namespace geofs::prefetch {

void TreePredictor::Observe(const AccessEvent& event, std::vector<Want>* wants) {
  if (dirs_.size() >= options_.max_dirs) dirs_.clear();
  if (event.op == AccessOp::kReadDir) {
    // Listing a directory says "I will open what is in it" less surely than
    // opening its files: it counts as one of them.
    Opened(event.file, FileId{}, event.time_ns, wants);
    return;
  }
  if (event.op != AccessOp::kLookup || !event.parent.valid() || !event.file.valid()) return;
  if (event.is_dir) {
    dirs_[event.file].parent = event.parent;  // for the tree rule
    return;
  }
  Opened(event.parent, event.file, event.time_ns, wants);
}

void TreePredictor::Opened(const FileId& dir_id, const FileId& child, int64_t now,
                           std::vector<Want>* wants) {
  Dir& d = dirs_[dir_id];
  if (now - d.first_ns > options_.window_ns) {
    d.first_ns = now;
    d.files.clear();
    d.listed = false;
  }
  if (child.valid()) {
    d.files.insert(child.ino);
  } else {
    d.listed = true;
  }
  if (d.files.size() + (d.listed ? 1 : 0) < options_.min_files) return;
  if (now - d.asked_ns < options_.repeat_ns) return;
  Ask(d, dir_id, now, wants);
}

void TreePredictor::Ask(Dir& d, const FileId& id, int64_t now, std::vector<Want>* wants) {
  d.asked_ns = now;
  wants->push_back(Want{WantKind::kDirectory, id, 0, 0});
  if (!d.parent.valid()) return;
  const FileId parent_id = d.parent;
  Dir& parent = dirs_[parent_id];  // may rehash: `d` is not used after this
  parent.asked_children.insert(id.ino);
  if (parent.asked_children.size() >= options_.min_dirs &&
      now - parent.asked_ns >= options_.repeat_ns) {
    parent.asked_ns = now;
    wants->push_back(Want{WantKind::kTree, parent_id, 0, 0});
  }
}

}  // namespace geofs::prefetch
