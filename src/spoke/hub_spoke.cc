#include "spoke/hub_spoke.h"

#include <cctype>
#include <filesystem>
#include <sstream>

#include "cache/chunk_cache.h"
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

void Metric(std::ostringstream& out, const char* name, const char* help, const char* type,
            const std::string& labels, double value) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
      << name << "{" << labels << "} " << value << "\n";
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) return Status::InvalidArgument("size " + std::string(text));
  uint64_t value = std::stoull(std::string(text.substr(0, digits)));
  std::string_view unit = text.substr(digits);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K" || unit == "KiB") {
    shift = 10;
  } else if (unit == "M" || unit == "MiB") {
    shift = 20;
  } else if (unit == "G" || unit == "GiB") {
    shift = 30;
  } else if (unit == "T" || unit == "TiB") {
    shift = 40;
  } else {
    return Status::InvalidArgument("size " + std::string(text) + ": unknown unit");
  }
  if (shift && value > (UINT64_MAX >> shift)) {
    return Status::InvalidArgument("size " + std::string(text) + ": too large");
  }
  return value << shift;
}

Result<std::unique_ptr<HubSpoke>> HubSpoke::Open(const HubSpokeOptions& options,
                                                 std::chrono::milliseconds connect_timeout) {
  std::unique_ptr<HubSpoke> spoke(new HubSpoke(options));
  std::error_code ec;
  std::filesystem::create_directories(spoke->state_dir(), ec);
  if (ec) return Status::IoError("cache dir " + options.cache_dir + ": " + ec.message());

  GEOFS_ASSIGN_OR_RETURN(spoke->chunks_, OpenChunkCache(options));
  GEOFS_ASSIGN_OR_RETURN(spoke->journal_, OpenJournal(options));

  HubLinkOptions link_options;
  link_options.address = options.hub;
  link_options.portal = options.portal;
  link_options.state_dir = spoke->state_dir();
  spoke->link_ = std::make_unique<HubLink>(link_options);

  SpokeBackendOptions backend_options;
  backend_options.portal = options.portal;
  backend_options.immutable = options.immutable;
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
    GEOFS_ASSIGN_OR_RETURN(spoke->metrics_,
                           MetricsHttpServer::Start(options.metrics_address, *options.metrics_port,
                                                    [self] { return self->MetricsText(); }));
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

std::string HubSpoke::MetricsText() const {
  SpokeStats s = backend_->Stats();
  std::ostringstream out;
  const std::string labels = "export=\"" + options_.portal + "\"";
  Metric(out, "geofs_spoke_metadata_hits_total", "Metadata answered from the cache", "counter",
         labels, static_cast<double>(s.metadata_hits));
  Metric(out, "geofs_spoke_metadata_misses_total", "Metadata fetched from the hub", "counter",
         labels, static_cast<double>(s.metadata_misses));
  Metric(out, "geofs_spoke_chunk_hits_total", "Chunks read from the cache", "counter", labels,
         static_cast<double>(s.chunk_hits));
  Metric(out, "geofs_spoke_chunk_misses_total", "Chunks fetched from the hub", "counter", labels,
         static_cast<double>(s.chunk_misses));
  Metric(out, "geofs_spoke_bytes_from_hub_total", "Chunk bytes received from the hub", "counter",
         labels, static_cast<double>(s.bytes_from_hub));
  Metric(out, "geofs_spoke_bytes_from_cache_total", "Chunk bytes served from the cache", "counter",
         labels, static_cast<double>(s.bytes_from_cache));
  Metric(out, "geofs_spoke_leases_held", "Inodes under a live lease", "gauge", labels,
         static_cast<double>(s.leases_held));
  Metric(out, "geofs_spoke_invalidations_total", "Invalidations received from the hub", "counter",
         labels, static_cast<double>(s.invalidations));
  Metric(out, "geofs_spoke_journal_bytes", "Written bytes not yet committed at the hub", "gauge",
         labels, static_cast<double>(s.journal_bytes));
  Metric(out, "geofs_spoke_hub_connected", "1 when the hub answers", "gauge", labels,
         s.hub_connected ? 1 : 0);
  Metric(out, "geofs_spoke_hub_state_seconds", "Time in the current hub link state", "gauge",
         labels, s.hub_state_seconds);
  Metric(out, "geofs_spoke_session", "Hub session id (0: none)", "gauge", labels,
         static_cast<double>(s.session));
  Metric(out, "geofs_spoke_immutable", "1 when the portal is served as immutable", "gauge", labels,
         s.immutable ? 1 : 0);
  return out.str();
}

Status HubSpoke::Shutdown() {
  GEOFS_RETURN_IF_ERROR(journal_->Sync());
  return backend_->FlushAll();
}

}  // namespace geofs::spoke
