// TreePredictor: a job that opens files scattered over a directory is
// reading an epoch of it; the unread rest of that directory is its future.
//
// It counts the distinct names looked up in each directory (a READDIR of it
// counts as a strong sign too). Once `min_files` distinct files of one
// directory were opened within `window_ns`, it asks for the directory
// (WantKind::kDirectory). Once `min_dirs` sibling directories of one parent
// were asked for, it asks for the parent's whole tree (WantKind::kTree):
// an image folder with one directory per class is read that way. Each
// directory is asked for at most once per `repeat_ns` (the next epoch).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "prefetch/predictor.h"

namespace geofs::prefetch {

struct TreeOptions {
  uint32_t min_files = 3;
  uint32_t min_dirs = 2;
  int64_t window_ns = 10'000'000'000;   // 10 s
  int64_t repeat_ns = 300'000'000'000;  // 5 min
  size_t max_dirs = 65536;              // directories tracked
};

class TreePredictor final : public Predictor {
 public:
  explicit TreePredictor(TreeOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "tree"; }
  void Observe(const AccessEvent& event, std::vector<Want>* wants) override;

 private:
  struct Dir {
    FileId parent;  // learned from the LOOKUP that found it
    int64_t first_ns = 0;
    std::unordered_set<uint64_t> files;  // inodes opened in this window
    bool listed = false;                 // READDIR in this window
    int64_t asked_ns = INT64_MIN / 2;    // when last asked for
    std::unordered_set<uint64_t> asked_children;  // child dirs asked for
  };
  // Counts `child` opened in `dir`; asks for `dir` (and its parent's tree)
  // when they qualify.
  void Opened(const FileId& dir, const FileId& child, int64_t now, std::vector<Want>* wants);
  void Ask(Dir& d, const FileId& id, int64_t now, std::vector<Want>* wants);

  const TreeOptions options_;
  std::unordered_map<FileId, Dir, FileIdHash> dirs_;
};

}  // namespace geofs::prefetch
