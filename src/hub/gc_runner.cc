#include "hub/gc_runner.h"

#include "common/logging.h"
#include "hub/chunk_ids.h"

namespace geofs::hub {

GcRunner::GcRunner(meta::Namespace* ns, chunk::ChunkStore* chunks, GcOptions options)
    : ns_(ns), chunks_(chunks), options_(options) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

GcRunner::~GcRunner() {
  thread_.request_stop();
  cv_.notify_all();
}

Result<meta::GcResult> GcRunner::RunOnce() {
  return ns_->CollectGarbage(
      options_.clock->WallNow(), options_.grace,
      [this](const meta::ChunkId& id) { return chunks_->Delete(ToChunkId(id)); });
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
    } else if (result->deleted > 0 || result->failed > 0) {
      log->info("garbage collection deleted {} chunks ({} failed, retried next pass)",
                result->deleted, result->failed);
    }
    lock.lock();
  }
}

}  // namespace geofs::hub
