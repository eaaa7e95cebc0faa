// HubSpoke: the parts of geofs-spoked in hub mode, wired together: the hub
// link, the chunk cache, the write journal, the SpokeBackend over them, and
// the metrics endpoint (GET /metrics: Prometheus text; GET /stats.json: the
// same counters as JSON, what `geofsctl --spoke ADDR stats` reads). Layout of the cache directory:
//   chunks/   the chunk cache        journal/  the write journal
//   state/    spoke id, last session, the file-handle key
//   creates/  the log of creates answered here, not yet at the hub
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "geofs/status.h"
#include "geofs/vfs.h"
#include "spoke/spoke_counters.h"

namespace geofs::cache {
class ChunkCache;
}

namespace geofs::spoke {

class HubLink;
class SpokeBackend;
class WriteJournal;
class CreateLog;
class MetricsHttpServer;

struct HubSpokeOptions {
  std::string hub;     // HOST:PORT
  std::string portal;  // hub directory served, e.g. "/datasets"
  std::string cache_dir;
  uint64_t cache_bytes = 0;  // 0: up to 90% of the cache file system
  bool immutable = false;
  // Answer CREATEs here under the directory's lease (write-behind).
  bool local_creates = false;
  std::chrono::milliseconds local_create_delay{250};
  bool prefetch = true;  // docs/prefetch.md
  std::string metrics_address = "127.0.0.1";
  std::optional<uint16_t> metrics_port;
};

class HubSpoke {
 public:
  // Opens the caches, resolves the portal at the hub (waiting up to
  // `connect_timeout` for it) and starts the session.
  static Result<std::unique_ptr<HubSpoke>> Open(const HubSpokeOptions& options,
                                                std::chrono::milliseconds connect_timeout);
  ~HubSpoke();

  vfs::Backend* backend();
  std::string state_dir() const { return options_.cache_dir + "/state"; }
  // The bound metrics port, when serving metrics.
  std::optional<uint16_t> metrics_port() const;
  // One snapshot of the export's counters. Thread-safe.
  SpokeCounters Counters() const;
  // Counters() as Prometheus text.
  std::string MetricsText() const;
  // Syncs the journal and commits what it holds (shutdown).
  Status Shutdown();

 private:
  explicit HubSpoke(HubSpokeOptions options);

  HubSpokeOptions options_;
  std::unique_ptr<HubLink> link_;
  std::unique_ptr<cache::ChunkCache> chunks_;
  std::unique_ptr<WriteJournal> journal_;
  std::unique_ptr<CreateLog> creates_;
  std::unique_ptr<SpokeBackend> backend_;
  std::unique_ptr<MetricsHttpServer> metrics_;
};

}  // namespace geofs::spoke
