#include "hub/gc_runner.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "common/logging.h"
#include "hub/chunk_ids.h"

namespace geofs::hub {
namespace {

// Stored sizes the orphan sweep records in one namespace write.
constexpr size_t kSizesPerRecord = 4096;

}  // namespace

GcRunner::GcRunner(meta::Namespace* ns, chunk::ChunkStore* chunks, GcOptions options)
    : ns_(ns), chunks_(chunks), options_(options) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

GcRunner::~GcRunner() {
  thread_.request_stop();
  cv_.notify_all();
}

Result<meta::GcResult> GcRunner::RunOnce() {
  const WallTime now = options_.clock->WallNow();
  GEOFS_ASSIGN_OR_RETURN(meta::GcResult result,
                         ns_->CollectGarbage(now, options_.grace, [this](const meta::ChunkId& id) {
                           return chunks_->Delete(ToChunkId(id));
                         }));
  // At least `grace` old, the bound CollectGarbage applies too.
  const WallTime cutoff{now.sec - options_.grace.count(), now.nsec};
  GEOFS_ASSIGN_OR_RETURN(std::optional<WallTime> due, ns_->OrphanSweepDue());
  // Waits until every object stored before `due` is past the grace, so
  // that one sweep covers them all.
  if (due && *due <= cutoff) {
    const uint64_t failed_before = result.failed;
    GEOFS_RETURN_IF_ERROR(SweepOrphans(cutoff, &result));
    // A candidate that failed before it was recorded would be missed by
    // CollectGarbage's retries: sweep again next pass.
    if (result.failed == failed_before) GEOFS_RETURN_IF_ERROR(ns_->OrphanSweepDone(*due));
  }
  return result;
}

Status GcRunner::SweepOrphans(WallTime cutoff, meta::GcResult* result) {
  // Candidates first, deletions after: the listing does not see its own
  // deletions, and the namespace re-checks each candidate under its lock.
  std::vector<chunk::ChunkInfo> candidates;
  // Known chunks without a recorded stored size (a store from before sizes
  // were recorded): the listing tells them.
  std::vector<meta::StoredChunkSize> sizes;
  GEOFS_RETURN_IF_ERROR(chunks_->ForEachChunk([&](const chunk::ChunkInfo& info) -> Status {
    if (info.modified > cutoff) return Status::Ok();
    GEOFS_ASSIGN_OR_RETURN(std::optional<meta::ChunkInfo> known, ns_->GetChunk(ToMetaId(info.id)));
    if (!known) {
      candidates.push_back(info);
    } else if (known->stored_size == 0) {
      sizes.push_back({known->id, info.stored_size});
      if (sizes.size() == kSizesPerRecord) {
        GEOFS_RETURN_IF_ERROR(ns_->RecordStoredSizes(sizes));
        sizes.clear();
      }
    }
    return Status::Ok();
  }));
  GEOFS_RETURN_IF_ERROR(ns_->RecordStoredSizes(sizes));
  for (const chunk::ChunkInfo& info : candidates) {
    auto collected = ns_->CollectOrphan(
        ToMetaId(info.id), info.stored_size, info.modified,
        [this](const meta::ChunkId& id) { return chunks_->Delete(ToChunkId(id)); });
    if (!collected.ok()) {
      ++result->failed;
    } else if (*collected) {
      ++result->orphans;
    }
  }
  return Status::Ok();
}

void GcRunner::Loop(std::stop_token stop) {
  auto log = GetLogger("hub.gc");
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, stop, options_.interval, [] { return false; }) &&
         !stop.stop_requested()) {
    lock.unlock();
    auto result = RunOnce();
    if (!result.ok()) {
      log->warn("garbage collection failed: {}", result.status().ToString());
    } else if (result->deleted > 0 || result->orphans > 0 || result->failed > 0) {
      log->info(
          "garbage collection deleted {} chunks and {} orphans ({} failed, retried next pass)",
          result->deleted, result->orphans, result->failed);
    }
    lock.lock();
  }
}

}  // namespace geofs::hub
