#include "spoke/hub_spoke.h"

#include <absl/synchronization/mutex.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "cache/chunk_cache.h"
#include "spoke/create_log.h"
#include "spoke/hub_link.h"
#include "spoke/metrics_http.h"
#include "spoke/spoke_backend.h"
#include "spoke/write_journal.h"

namespace geofs::spoke {
namespace {

Result<std::unique_ptr<cache::ChunkCache>> OpenChunkCache(const HubSpokeOptions& options) {
  cache::ChunkCacheOptions cache_options;
  cache_options.dir = options.cache_dir + "/chunks";
  cache_options.capacity_bytes = options.cache_bytes;
  return cache::ChunkCache::Open(cache_options);
}

Result<std::unique_ptr<WriteJournal>> OpenJournal(const HubSpokeOptions& options) {
  WriteJournalOptions journal_options;
  journal_options.dir = options.cache_dir + "/journal";
  return WriteJournal::Open(journal_options);
}

}  // namespace

Result<std::unique_ptr<HubSpoke>> HubSpoke::Open(const HubSpokeOptions& options,
                                                 std::chrono::milliseconds connect_timeout) {
  // Debian builds Abseil without NDEBUG, so every absl::Mutex that gRPC
  // locks would also walk a global lock-order graph under a global spin
  // lock (deadlock detection): a few percent of the CPU of each hub call.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::unique_ptr<HubSpoke> spoke(new HubSpoke(options));
  std::error_code ec;
  std::filesystem::create_directories(spoke->state_dir(), ec);
  if (ec) return Status::IoError("cache dir " + options.cache_dir + ": " + ec.message());

  GEOFS_ASSIGN_OR_RETURN(spoke->chunks_, OpenChunkCache(options));
  GEOFS_ASSIGN_OR_RETURN(spoke->journal_, OpenJournal(options));
  std::vector<LoggedCreate> recovered_creates;
  std::filesystem::create_directories(options.cache_dir + "/creates", ec);
  if (ec) return Status::IoError("cache dir " + options.cache_dir + ": " + ec.message());
  GEOFS_ASSIGN_OR_RETURN(
      spoke->creates_,
      CreateLog::Open(CreateLogOptions{options.cache_dir + "/creates/log"}, &recovered_creates));

  HubLinkOptions link_options;
  link_options.address = options.hub;
  link_options.portal = options.portal;
  link_options.state_dir = spoke->state_dir();
  spoke->link_ = std::make_unique<HubLink>(link_options);

  SpokeBackendOptions backend_options;
  backend_options.portal = options.portal;
  backend_options.immutable = options.immutable;
  backend_options.create_log = spoke->creates_.get();
  backend_options.recovered_creates = std::move(recovered_creates);
  backend_options.local_creates = options.local_creates;
  backend_options.local_create_delay = options.local_create_delay;
  backend_options.prefetch = options.prefetch;
  // The portal must resolve before we serve; retry while the hub starts.
  auto deadline = std::chrono::steady_clock::now() + connect_timeout;
  while (true) {
    auto backend = SpokeBackend::Open(spoke->link_.get(), spoke->chunks_.get(),
                                      spoke->journal_.get(), backend_options);
    if (backend.ok()) {
      spoke->backend_ = std::move(backend).value();
      break;
    }
    if (backend.status() != StatusCode::kUnavailable ||
        std::chrono::steady_clock::now() >= deadline) {
      return backend.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  spoke->backend_->AttachSessionHandlers();
  spoke->link_->WaitForSessionAttempt(std::chrono::seconds(5));

  if (options.metrics_port) {
    HubSpoke* self = spoke.get();
    std::vector<HttpRoute> routes = {
        {"/metrics", "text/plain; version=0.0.4", [self] { return self->MetricsText(); }},
        {"/stats.json", "application/json",
         [self] {
           SpokeCounters c = self->Counters();
           return RenderJson({&c, 1});
         }},
    };
    GEOFS_ASSIGN_OR_RETURN(spoke->metrics_,
                           MetricsHttpServer::Start(options.metrics_address, *options.metrics_port,
                                                    std::move(routes)));
  }
  return spoke;
}

HubSpoke::HubSpoke(HubSpokeOptions options) : options_(std::move(options)) {}

HubSpoke::~HubSpoke() {
  metrics_.reset();
  // The session's handlers call into the backend.
  if (link_) link_->Stop();
  backend_.reset();
  link_.reset();
}

vfs::Backend* HubSpoke::backend() { return backend_.get(); }

std::optional<uint16_t> HubSpoke::metrics_port() const {
  if (!metrics_) return std::nullopt;
  return metrics_->port();
}

SpokeCounters HubSpoke::Counters() const {
  const SpokeStats s = backend_->Stats();
  const LinkState link = link_->state();
  const WriteJournalStats journal = journal_->Stats();
  SpokeCounters c;
  c.export_path = options_.portal;
  c.hub = options_.hub;
  c.metadata_hits = s.metadata_hits;
  c.metadata_misses = s.metadata_misses;
  c.chunk_hits = s.chunk_hits;
  c.chunk_misses = s.chunk_misses;
  c.bytes_from_hub = s.bytes_from_hub;
  c.bytes_from_cache = s.bytes_from_cache;
  c.leases_held = s.leases_held;
  c.invalidations = s.invalidations;
  c.hub_changes = s.hub_changes;
  c.hub_change_calls = s.hub_change_calls;
  c.changes_deferred = s.changes_deferred;
  c.journal_files = journal.pending_files;
  c.journal_bytes = journal.pending_bytes;
  c.journal_log_bytes = journal.log_bytes;
  c.local_creates = s.local_creates;
  c.local_creates_pending = s.local_creates_pending;
  c.local_creates_cancelled = s.local_creates_cancelled;
  c.local_create_conflicts = s.local_create_conflicts;
  c.local_creates_lost = s.local_creates_lost;
  if (s.prefetch) {
    const prefetch::PrefetchStats& p = *s.prefetch;
    c.reads = p.reads;
    c.read_hits = p.read_hits;
    c.read_joined = p.read_joined;
    c.read_stall_microseconds = p.read_stall_us;
    for (const prefetch::PredictorStats& ps : p.predictors) {
      c.prefetch_issued_bytes += ps.issued_bytes;
      c.prefetch_used_bytes += ps.used_bytes;
      c.prefetch_late_bytes += ps.late_bytes;
      c.prefetch_wasted_bytes += ps.wasted_bytes;
      if (ps.name == "sequential") {
        c.prefetch_sequential_issued_bytes = ps.issued_bytes;
        c.prefetch_sequential_used_bytes = ps.used_bytes + ps.late_bytes;
      } else if (ps.name == "tree") {
        c.prefetch_tree_issued_bytes = ps.issued_bytes;
        c.prefetch_tree_used_bytes = ps.used_bytes + ps.late_bytes;
      }
    }
    c.prefetch_inflight_bytes = p.inflight_bytes;
    c.prefetch_window_bytes = p.window_bytes;
    c.prefetch_unread_bytes = p.unread_bytes;
    c.prefetch_dirs_described = p.dirs_described;
  }
  // A transport failure marks the link down; an open session means up; a
  // hub that answers without a session is being re-established.
  if (!link.connected) {
    c.hub_link = HubLinkState::kDown;
  } else if (link.session == 0) {
    c.hub_link = HubLinkState::kReconnecting;
  } else {
    c.hub_link = HubLinkState::kUp;
  }
  c.hub_state_seconds = s.hub_state_seconds;
  c.session = link.session;
  c.hub_reconnects = link.reconnects;
  c.immutable = s.immutable;
  return c;
}

std::string HubSpoke::MetricsText() const {
  SpokeCounters c = Counters();
  return RenderPrometheus({&c, 1});
}

Status HubSpoke::Shutdown() {
  GEOFS_RETURN_IF_ERROR(journal_->Sync());
  return backend_->FlushAll();
}

}  // namespace geofs::spoke
