#include "hub/hub_fsck.h"

#include <map>
#include <mutex>
#include <unordered_set>

#include "common/parallel.h"
#include "hub/chunk_ids.h"

namespace geofs::hub {
namespace {

const vfs::Credentials kRoot{};
constexpr uint32_t kPage = 1024;

struct ChunkUse {
  uint64_t size = 0;
  std::string path;  // one file that references it, for messages
};

class Walker {
 public:
  Walker(meta::Namespace& ns, const FsckOptions& options, FsckReport* report)
      : ns_(ns), options_(options), report_(report) {}

  Status Run() {
    std::vector<std::pair<vfs::Handle, std::string>> dirs = {{ns_.RootHandle(), ""}};
    report_->inodes_checked = 1;
    while (!dirs.empty()) {
      auto [dir, path] = std::move(dirs.back());
      dirs.pop_back();
      GEOFS_RETURN_IF_ERROR(ListDir(dir, path, &dirs));
    }
    return Status::Ok();
  }

  const std::map<meta::ChunkId, ChunkUse>& chunks() const { return chunks_; }

 private:
  Status ListDir(const vfs::Handle& dir, const std::string& path,
                 std::vector<std::pair<vfs::Handle, std::string>>* dirs) {
    vfs::ReadDirRequest req;
    req.max_entries = kPage;
    req.with_attrs = true;
    for (;;) {
      if (options_.cancelled()) return Status(StatusCode::kDeadlineExceeded, "fsck cancelled");
      auto page = ns_.ReadDir(kRoot, dir, req);
      if (!page.ok()) {
        // Removed while we walked: nothing to check any more.
        if (page.status() == StatusCode::kStale) return Status::Ok();
        return Status(page.status().code(),
                      "listing " + (path.empty() ? "/" : path) + ": " + page.status().ToString());
      }
      for (const vfs::DirEntry& e : page->entries) {
        req.cookie = e.cookie;
        if (e.name == "." || e.name == ".." || !e.entry) continue;
        const std::string child = path + "/" + e.name;
        if (!seen_.insert(e.fileid).second) continue;  // another link to a file we checked
        ++report_->inodes_checked;
        if (e.entry->attr.type == vfs::FileType::kDirectory) {
          dirs->emplace_back(e.entry->handle, child);
        } else if (e.entry->attr.type == vfs::FileType::kRegular) {
          GEOFS_RETURN_IF_ERROR(CheckFile(e.entry->handle, child));
        }
      }
      req.verifier = page->verifier;
      if (page->eof) return Status::Ok();
    }
  }

  Status CheckFile(const vfs::Handle& h, const std::string& path) {
    auto map = ns_.GetChunkMap(kRoot, h, 0, UINT64_MAX);
    if (!map.ok()) {
      if (map.status() == StatusCode::kStale) return Status::Ok();
      return Status(map.status().code(), path + ": " + map.status().ToString());
    }
    for (const meta::Extent& e : map->extents) {
      auto [it, inserted] = chunks_.emplace(e.chunk, ChunkUse{e.chunk_size, path});
      if (!inserted && it->second.size != e.chunk_size) {
        report_->problems.push_back(path + ": chunk " + meta::ChunkIdHex(e.chunk) +
                                    " recorded with size " + std::to_string(e.chunk_size) +
                                    " here and " + std::to_string(it->second.size) + " in " +
                                    it->second.path);
      }
    }
    return Status::Ok();
  }

  meta::Namespace& ns_;
  const FsckOptions& options_;
  FsckReport* report_;
  std::unordered_set<uint64_t> seen_;
  std::map<meta::ChunkId, ChunkUse> chunks_;
};

}  // namespace

Result<FsckReport> CheckHub(meta::Namespace& ns, chunk::ChunkStore& chunks,
                            const FsckOptions& options) {
  FsckReport report;
  GEOFS_ASSIGN_OR_RETURN(report.problems, ns.Fsck());
  Walker walker(ns, options, &report);
  GEOFS_RETURN_IF_ERROR(walker.Run());

  std::vector<chunk::ChunkId> ids;
  std::vector<const ChunkUse*> uses;
  for (const auto& [id, use] : walker.chunks()) {
    ids.push_back(ToChunkId(id));
    uses.push_back(&use);
  }
  report.chunks_checked = ids.size();
  GEOFS_ASSIGN_OR_RETURN(std::vector<chunk::ChunkId> missing, chunks.Missing(ids));
  std::unordered_set<chunk::ChunkId, chunk::ChunkIdHash> missing_set(missing.begin(),
                                                                     missing.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (missing_set.count(ids[i])) {
      report.problems.push_back("chunk " + ids[i].ToHex() + " (used by " + uses[i]->path +
                                ") is missing from the object store");
    }
  }
  if (!options.verify_chunk_data) return report;

  std::mutex mu;
  Status walked = ParallelFor(ids.size(), options.parallelism, [&](size_t i) -> Status {
    if (options.cancelled()) return Status(StatusCode::kDeadlineExceeded, "fsck cancelled");
    if (missing_set.count(ids[i])) return Status::Ok();
    auto data = chunks.Get(ids[i]);
    std::string problem;
    if (!data.ok()) {
      problem = data.status().ToString();
    } else if (data->size() != uses[i]->size) {
      problem =
          "holds " + std::to_string(data->size()) + " bytes, not " + std::to_string(uses[i]->size);
    }
    if (!problem.empty()) {
      std::lock_guard lock(mu);
      report.problems.push_back("chunk " + ids[i].ToHex() + " (used by " + uses[i]->path +
                                "): " + problem);
    }
    return Status::Ok();
  });
  GEOFS_RETURN_IF_ERROR(walked);
  return report;
}

}  // namespace geofs::hub
