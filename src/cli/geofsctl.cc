// geofsctl: the geofs administration tool.
//   geofsctl --hub HOST:PORT import SRC_DIR HUB_PATH
//   geofsctl --hub HOST:PORT fsck [--verify-data]
//   geofsctl --hub HOST:PORT stats [--json] [--list-store]
//   geofsctl --spoke HOST:PORT stats [--json]   (the spoke's --metrics-port)
// Exit status: 0 success; 1 failure (or fsck problems); 2 bad usage;
// 3 import finished but skipped some entries (listed on stderr).
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "chunk/allocator_tuning.h"
#include "cli/hub_client.h"
#include "cli/importer.h"
#include "cli/spoke_client.h"
#include "common/logging.h"

namespace geofs::cli {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(10);
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkipped = 3;

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char out[32];
  std::snprintf(out, sizeof(out), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return out;
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char out[32];
  std::snprintf(out, sizeof(out), "%.1f%%", 100.0 * static_cast<double>(part) / whole);
  return out;
}

std::string Ratio(uint64_t num, uint64_t den) {
  if (den == 0) return "-";
  char out[32];
  std::snprintf(out, sizeof(out), "%.2fx", static_cast<double>(num) / den);
  return out;
}

// Prints import progress on stderr until stopped: a line redrawn in place
// on a terminal, a line every 10 s otherwise (logs).
class ProgressPrinter {
 public:
  explicit ProgressPrinter(const Importer* importer)
      : importer_(importer), tty_(::isatty(STDERR_FILENO)) {
    thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  }
  ~ProgressPrinter() {
    thread_.request_stop();
    thread_.join();
    if (tty_) std::fputs("\n", stderr);
  }

 private:
  void Loop(std::stop_token stop) {
    const auto period = tty_ ? std::chrono::milliseconds(500) : std::chrono::milliseconds(10000);
    const auto start = std::chrono::steady_clock::now();
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, stop, period, [] { return false; }) && !stop.stop_requested()) {
      const ImportStats s = importer_->Progress();
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "%sfiles %llu/%llu, read %s (%s/s), new %s%s", tty_ ? "\r" : "",
                   static_cast<unsigned long long>(s.files_sent + s.files_unchanged),
                   static_cast<unsigned long long>(s.files), HumanBytes(s.read_bytes).c_str(),
                   HumanBytes(s.read_bytes / std::max(secs, 1e-3)).c_str(),
                   HumanBytes(s.new_stored_bytes).c_str(), tty_ ? "   " : "\n");
      std::fflush(stderr);
    }
  }

  const Importer* importer_;
  const bool tty_;
  std::jthread thread_;
};

int Import(const HubClient& hub, const std::string& src, const std::string& dst,
           const ImportOptions& options) {
  Importer importer(&hub, options);
  Result<ImportReport> report = [&] {
    ProgressPrinter progress(&importer);
    return importer.Run(src, dst);
  }();
  if (!report.ok()) {
    std::fprintf(stderr, "import failed: %s\n", report.status().ToString().c_str());
    return kExitFailure;
  }
  const ImportStats& s = report->stats;
  const double secs = std::max(report->elapsed.count(), 1e-3);
  std::printf(
      "files:            %llu (%llu new or changed, %llu unchanged), %llu directories, "
      "%llu symlinks\n",
      static_cast<unsigned long long>(s.files), static_cast<unsigned long long>(s.files_sent),
      static_cast<unsigned long long>(s.files_unchanged),
      static_cast<unsigned long long>(s.directories), static_cast<unsigned long long>(s.symlinks));
  if (s.files_grouped > 0) {
    std::printf("grouped files:    %llu created and committed in groups\n",
                static_cast<unsigned long long>(s.files_grouped));
  }
  std::printf("logical bytes:    %s (%llu)\n", HumanBytes(s.logical_bytes).c_str(),
              static_cast<unsigned long long>(s.logical_bytes));
  std::printf("read:             %s in %.1f s (%s/s)\n", HumanBytes(s.read_bytes).c_str(), secs,
              HumanBytes(s.read_bytes / secs).c_str());
  std::printf("new bytes stored: %s (%llu; %llu new chunks, %s raw)\n",
              HumanBytes(s.new_stored_bytes).c_str(),
              static_cast<unsigned long long>(s.new_stored_bytes),
              static_cast<unsigned long long>(s.new_chunks), HumanBytes(s.new_raw_bytes).c_str());
  std::printf("dedup ratio:      %s (bytes read / new raw bytes)\n",
              Ratio(s.read_bytes, s.new_raw_bytes).c_str());
  std::printf("compression:      %s (new raw bytes / new bytes stored)\n",
              Ratio(s.new_raw_bytes, s.new_stored_bytes).c_str());
  if (s.removed > 0) {
    std::printf("removed:          %llu hub entries no longer in the source\n",
                static_cast<unsigned long long>(s.removed));
  }
  if (!report->skipped.empty()) {
    std::fprintf(stderr, "skipped %zu entries:\n", report->skipped.size());
    for (const std::string& line : report->skipped) std::fprintf(stderr, "  %s\n", line.c_str());
    return kExitSkipped;
  }
  return 0;
}

int Fsck(const HubClient& hub, bool verify_data) {
  v1::FsckRequest req;
  req.set_verify_chunk_data(verify_data);
  v1::FsckResponse resp;
  Status s = hub.Call(&v1::Hub::Stub::Fsck, req, &resp, HubClient::kScanTimeout);
  if (!s.ok()) {
    std::fprintf(stderr, "fsck failed: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  std::printf("checked %llu objects and %llu chunks%s\n",
              static_cast<unsigned long long>(resp.inodes_checked()),
              static_cast<unsigned long long>(resp.chunks_checked()),
              verify_data ? " (chunk data verified)" : "");
  if (resp.problems().empty()) {
    std::printf("clean\n");
    return 0;
  }
  std::printf("%d problems:\n", resp.problems_size());
  for (const std::string& p : resp.problems()) std::printf("  %s\n", p.c_str());
  return kExitFailure;
}

int Stats(const HubClient& hub, bool json, bool list_store) {
  v1::StatsRequest req;
  req.set_list_object_store(list_store);
  v1::StatsResponse resp;
  Status s = hub.Call(&v1::Hub::Stub::Stats, req, &resp, HubClient::kScanTimeout);
  if (!s.ok()) {
    std::fprintf(stderr, "stats failed: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  if (json) {
    nlohmann::json j = {
        {"inodes", resp.inodes()},
        {"directories", resp.directories()},
        {"files", resp.files()},
        {"symlinks", resp.symlinks()},
        {"specials", resp.specials()},
        {"logical_bytes", resp.logical_bytes()},
        {"chunks", resp.chunks()},
        {"referenced_raw_bytes", resp.referenced_raw_bytes()},
        {"unreferenced_chunks", resp.unreferenced_chunks()},
        {"unreferenced_raw_bytes", resp.unreferenced_raw_bytes()},
        {"stored_bytes", resp.stored_bytes()},
        {"unsized_chunks", resp.unsized_chunks()},
        {"object_store", resp.object_store()},
        {"sessions", resp.sessions()},
        {"detached_sessions", resp.detached_sessions()},
        {"read_leases", resp.read_leases()},
        {"write_leases", resp.write_leases()},
        {"invalidations_sent", resp.invalidations_sent()},
        {"orphan_sweep_due", resp.orphan_sweep_due()},
        {"namespace_writes_stopped", resp.namespace_writes_stopped()},
    };
    if (resp.object_store_listed()) {
      j["listed_objects"] = resp.listed_objects();
      j["listed_bytes"] = resp.listed_bytes();
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("objects:      %llu (%llu directories, %llu files, %llu symlinks, %llu special)\n",
              static_cast<unsigned long long>(resp.inodes()),
              static_cast<unsigned long long>(resp.directories()),
              static_cast<unsigned long long>(resp.files()),
              static_cast<unsigned long long>(resp.symlinks()),
              static_cast<unsigned long long>(resp.specials()));
  if (resp.namespace_writes_stopped()) {
    std::printf(
        "namespace:    REFUSING CHANGES after a failed write (is its disk full?); the first "
        "change once there is room resumes it\n");
  }
  std::printf("logical:      %s in files\n", HumanBytes(resp.logical_bytes()).c_str());
  std::printf("chunks:       %llu referenced, %s raw (dedup %s)\n",
              static_cast<unsigned long long>(resp.chunks()),
              HumanBytes(resp.referenced_raw_bytes()).c_str(),
              Ratio(resp.logical_bytes(), resp.referenced_raw_bytes()).c_str());
  std::printf("unreferenced: %llu chunks, %s raw, awaiting garbage collection\n",
              static_cast<unsigned long long>(resp.unreferenced_chunks()),
              HumanBytes(resp.unreferenced_raw_bytes()).c_str());
  if (resp.orphan_sweep_due()) {
    std::printf(
        "              orphan sweep due (a run did not stop cleanly, or stored sizes are "
        "missing)\n");
  }
  // The ratio needs every known chunk's stored size.
  const uint64_t raw_bytes = resp.referenced_raw_bytes() + resp.unreferenced_raw_bytes();
  std::printf("stored:       %s (compression %s) in %s\n", HumanBytes(resp.stored_bytes()).c_str(),
              resp.unsized_chunks() == 0 ? Ratio(raw_bytes, resp.stored_bytes()).c_str() : "-",
              resp.object_store().c_str());
  if (resp.unsized_chunks() != 0) {
    std::printf("              %llu chunks of unknown stored size, not counted\n",
                static_cast<unsigned long long>(resp.unsized_chunks()));
  }
  if (resp.object_store_listed()) {
    std::printf("listed:       %llu objects, %s (orphans included)\n",
                static_cast<unsigned long long>(resp.listed_objects()),
                HumanBytes(resp.listed_bytes()).c_str());
  }
  std::printf(
      "coherence:    %llu sessions (+%llu detached), %llu read leases, %llu write leases, "
      "%llu invalidations sent\n",
      static_cast<unsigned long long>(resp.sessions()),
      static_cast<unsigned long long>(resp.detached_sessions()),
      static_cast<unsigned long long>(resp.read_leases()),
      static_cast<unsigned long long>(resp.write_leases()),
      static_cast<unsigned long long>(resp.invalidations_sent()));
  return 0;
}

void PrintSpokeExport(const spoke::SpokeCounters& c) {
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("export %s (%s) from hub %s\n", c.export_path.c_str(),
              c.immutable ? "immutable" : "strict", c.hub.c_str());
  std::printf("  hub link       %s for %.1f s, session %llu, %llu reconnects\n",
              std::string(spoke::HubLinkStateName(c.hub_link)).c_str(), c.hub_state_seconds,
              u(c.session), u(c.hub_reconnects));
  std::printf("  metadata       %llu hits, %llu misses (%s hits)\n", u(c.metadata_hits),
              u(c.metadata_misses),
              Percent(c.metadata_hits, c.metadata_hits + c.metadata_misses).c_str());
  std::printf("  chunks         %llu hits, %llu misses (%s hits)\n", u(c.chunk_hits),
              u(c.chunk_misses), Percent(c.chunk_hits, c.chunk_hits + c.chunk_misses).c_str());
  std::printf("  bytes          %s from the cache, %s from the hub\n",
              HumanBytes(c.bytes_from_cache).c_str(), HumanBytes(c.bytes_from_hub).c_str());
  std::printf("  leases held    %llu\n", u(c.leases_held));
  std::printf("  invalidations  %llu\n", u(c.invalidations));
  std::printf("  changes        %llu in %llu hub calls, %llu waited for other spokes\n",
              u(c.hub_changes), u(c.hub_change_calls), u(c.changes_deferred));
  std::printf("  journal        %llu files, %s pending, %s on disk\n", u(c.journal_files),
              HumanBytes(c.journal_bytes).c_str(), HumanBytes(c.journal_log_bytes).c_str());
}

int SpokeStats(const std::string& address, bool json) {
  auto counters = FetchSpokeCounters(address, kConnectTimeout);
  if (!counters.ok()) {
    std::fprintf(stderr, "stats failed: %s\n", counters.status().ToString().c_str());
    return kExitFailure;
  }
  if (json) {
    std::printf("%s\n", spoke::RenderJson(*counters, 2).c_str());
    return 0;
  }
  for (const spoke::SpokeCounters& c : *counters) PrintSpokeExport(c);
  return 0;
}

}  // namespace
}  // namespace geofs::cli

int main(int argc, char** argv) {
  geofs::chunk::TuneAllocatorForChunkTraffic();
  using namespace geofs::cli;
  CLI::App app{"geofsctl: administer a geofs hub or spoke"};
  std::string hub_address, spoke_address;
  CLI::Option* hub_option =
      app.add_option("--hub", hub_address, "The hub's gRPC address HOST:PORT");
  CLI::Option* spoke_option =
      app.add_option("--spoke", spoke_address, "A spoke's metrics address HOST:PORT (stats only)");
  hub_option->excludes(spoke_option);
  app.require_subcommand(1);

  ImportOptions import_options;
  std::string src_dir, hub_path;
  bool keep_extraneous = false;
  CLI::App* import =
      app.add_subcommand("import", "Bring a hub directory to a local tree's content");
  import->add_option("SRC_DIR", src_dir, "Local directory to import")->required();
  import->add_option("HUB_PATH", hub_path, "Hub directory to update (created if missing)")
      ->required();
  import->add_option("--workers", import_options.workers, "Files imported at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  import->add_option("--zstd-level", import_options.codec.zstd_level, "Compression level")
      ->capture_default_str();
  import->add_flag("--keep-extraneous", keep_extraneous,
                   "Do not remove hub entries that the source lacks");

  bool verify_data = false;
  CLI::App* fsck = app.add_subcommand("fsck", "Check the hub's namespace and chunks");
  fsck->add_flag("--verify-data", verify_data, "Read every chunk and check its hash");

  bool json = false;
  CLI::App* stats = app.add_subcommand("stats", "Show what the hub holds, or a spoke's counters");
  stats->add_flag("--json", json, "Print JSON");
  bool list_store = false;
  stats->add_flag("--list-store", list_store,
                  "Also list the hub's object store (every object: slow and billed on S3)");

  CLI11_PARSE(app, argc, argv);
  if (hub_address.empty() == spoke_address.empty()) {
    std::fprintf(stderr, "give --hub HOST:PORT or --spoke HOST:PORT\n");
    return kExitUsage;
  }
  if (!spoke_address.empty()) {
    if (!*stats) {
      std::fprintf(stderr, "--spoke supports only the stats command\n");
      return kExitUsage;
    }
    return SpokeStats(spoke_address, json);
  }
  // Import allocates and frees a 16 MiB block per batch and per worker; by
  // default glibc maps and unmaps each one, paying a page fault per 4 KiB.
  // Keep such blocks in the heap for reuse instead.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  // gRPC's own chatter is not for this tool's users.
  geofs::SetLogLevel("warn");

  import_options.delete_extraneous = !keep_extraneous;
  if (geofs::Status valid = import_options.Validate(); !valid.ok()) {
    std::fprintf(stderr, "%s\n", valid.ToString().c_str());
    return kExitUsage;
  }
  auto hub = HubClient::Connect(hub_address, kConnectTimeout);
  if (!hub.ok()) {
    std::fprintf(stderr, "%s\n", hub.status().ToString().c_str());
    return kExitFailure;
  }
  if (*import) return Import(**hub, src_dir, hub_path, import_options);
  if (*fsck) return Fsck(**hub, verify_data);
  return Stats(**hub, json, list_store);
}
