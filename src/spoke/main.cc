// geofs-spoked: serves NFSv3 + MOUNT v3 either from a local directory
// (standalone mode, --export-dir) or from a hub portal through the spoke's
// cache (hub mode, --hub/--portal/--cache-dir).
// main() only parses flags and wires the parts together.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/byte_size.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "mount/mount_program.h"
#include "nfs3/export.h"
#include "nfs3/handle_codec.h"
#include "nfs3/nfs_program.h"
#include "portmap/portmap_program.h"
#include "rpc/server.h"
#include "spoke/hub_spoke.h"
#include "vfs/local_backend.h"

namespace geofs {
namespace {

struct Flags {
  std::string export_dir;
  // Hub mode.
  std::string hub;
  std::string portal;
  std::string cache_dir;
  std::string cache_size;
  bool immutable = false;
  bool local_creates = false;  // --local-creates: the default, spelled out
  bool no_local_creates = false;
  bool no_prefetch = false;
  uint32_t local_create_delay_ms = 250;
  std::optional<uint16_t> metrics_port;
  int hub_connect_timeout_s = 30;
  std::string listen = "127.0.0.1";
  uint16_t nfs_port = 2049;
  uint16_t mount_port = 0;
  std::optional<uint16_t> portmap_port;
  nfs3::ExportPolicyText policy;
  std::string state_dir;
  std::string log_level = "info";
  size_t worker_threads = 16;
};

// Where the handle key lives when --state-dir is not given: one folder per
// export directory, so two standalone servers never share a key by accident.
std::string DefaultStateDir(const std::string& export_dir) {
  std::string base = getuid() == 0 ? "/var/lib/geofs" : [] {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/tmp") + "/.local/state/geofs";
  }();
  std::string id = std::to_string(nfs3::ExportIdForPath(export_dir));
  return base + "/standalone-" + id;
}

// Serves `backend` as export `export_path` until a stop signal; `before_stop`
// runs once the server has stopped accepting calls.
int Serve(const Flags& flags, vfs::Backend* backend, const std::string& export_path,
          const std::string& state_dir, const std::string& what, const sigset_t& stop_signals,
          const std::function<void()>& before_stop) {
  auto log = GetLogger("spoked");
  auto export_options = nfs3::ParseExportOptions(export_path, flags.policy);
  if (!export_options.ok()) {
    log->error("{}", export_options.status().message());
    return 2;
  }
  if (flags.portmap_port && (flags.nfs_port == 0 || flags.mount_port == 0)) {
    log->error("--portmap-port needs fixed --nfs-port and --mount-port to advertise");
    return 2;
  }
  auto key = nfs3::HandleCodec::LoadOrCreateKey(state_dir + "/handle.key");
  if (!key.ok()) {
    log->error("handle key in {}: {}", state_dir, key.status().ToString());
    return 1;
  }
  nfs3::HandleCodec codec(*key);
  nfs3::ExportTable exports;
  if (auto added = exports.Add(*export_options, backend); !added.ok()) {
    log->error("export {}: {}", export_path, added.status().ToString());
    return 1;
  }

  // Every port serves every program; distinct ports only matter to clients
  // that are told where to find each program.
  rpc::RpcServerOptions server_options;
  server_options.listen_address = flags.listen;
  server_options.worker_threads = flags.worker_threads;
  server_options.ports = {flags.nfs_port};
  size_t mount_index = 0;
  if (flags.mount_port != flags.nfs_port || flags.nfs_port == 0) {
    mount_index = server_options.ports.size();
    server_options.ports.push_back(flags.mount_port);
  }
  if (flags.portmap_port) server_options.ports.push_back(*flags.portmap_port);

  rpc::RpcServer server(server_options);
  auto nfs = std::make_shared<nfs3::NfsProgram>(&exports, &codec);
  auto mount = std::make_shared<mount::MountProgram>(&exports, &codec);
  Status registered = server.Register(nfs);
  if (registered.ok()) registered = server.Register(mount);
  if (registered.ok() && flags.portmap_port) {
    std::vector<portmap::Mapping> table = {
        {nfs->program(), 3, portmap::kProtocolTcp, flags.nfs_port},
        {mount->program(), 3, portmap::kProtocolTcp, flags.mount_port},
        {portmap::kProgram, portmap::kVersion, portmap::kProtocolTcp, *flags.portmap_port},
    };
    registered = server.Register(std::make_shared<portmap::PortmapProgram>(std::move(table)));
  }
  if (!registered.ok()) {
    log->error("{}", registered.ToString());
    return 1;
  }
  if (Status started = server.Start(); !started.ok()) {
    log->error("cannot listen on {}: {}", flags.listen, started.ToString());
    return 1;
  }
  const auto& ports = server.bound_ports();
  std::string portmap_text =
      flags.portmap_port ? " portmap=" + std::to_string(ports.back()) : std::string();
  log->info("serving {} as export {} {}; listening on {} nfs={} mount={}{}", what, export_path,
            flags.policy.read_only ? "read-only" : "read-write", flags.listen, ports[0],
            ports[mount_index], portmap_text);

  int sig = WaitForStopSignal(stop_signals);
  log->info("signal {} received, stopping", sig);
  server.Stop();
  before_stop();
  log->info("stopped");
  return 0;
}

int RunStandalone(const Flags& flags, const sigset_t& stop_signals) {
  auto log = GetLogger("spoked");
  std::error_code ec;
  std::string export_dir = std::filesystem::weakly_canonical(flags.export_dir, ec).string();
  if (ec || !std::filesystem::is_directory(export_dir)) {
    log->error("--export-dir {}: not a directory", flags.export_dir);
    return 2;
  }
  std::string state_dir = flags.state_dir.empty() ? DefaultStateDir(export_dir) : flags.state_dir;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    log->error("--state-dir {}: {}", state_dir, ec.message());
    return 2;
  }
  auto backend = vfs::LocalBackend::Open(export_dir);
  if (!backend.ok()) {
    log->error("cannot serve {}: {}", export_dir, backend.status().ToString());
    return 1;
  }
  return Serve(flags, backend->get(), "/", state_dir, export_dir, stop_signals, [] {});
}

int RunHub(const Flags& flags, const sigset_t& stop_signals) {
  auto log = GetLogger("spoked");
  if (flags.portal.empty() || flags.cache_dir.empty()) {
    log->error("--hub needs --portal and --cache-dir");
    return 2;
  }
  spoke::HubSpokeOptions options;
  options.hub = flags.hub;
  options.portal = nfs3::NormalizeExportPath(flags.portal);
  options.cache_dir = flags.cache_dir;
  options.immutable = flags.immutable;
  options.local_creates = !flags.no_local_creates;
  options.local_create_delay = std::chrono::milliseconds(flags.local_create_delay_ms);
  options.prefetch = !flags.no_prefetch;
  options.metrics_port = flags.metrics_port;
  options.metrics_address = flags.listen;
  if (!flags.cache_size.empty()) {
    auto size = ParseByteSize(flags.cache_size);
    if (!size.ok()) {
      log->error("--cache-size {}", size.status().ToString());
      return 2;
    }
    options.cache_bytes = *size;
  }
  auto spoke = spoke::HubSpoke::Open(options, std::chrono::seconds(flags.hub_connect_timeout_s));
  if (!spoke.ok()) {
    log->error("cannot serve portal {} of hub {}: {}", options.portal, flags.hub,
               spoke.status().ToString());
    return 1;
  }
  if (auto port = (*spoke)->metrics_port()) log->info("metrics on {}:{}", flags.listen, *port);
  std::string what =
      "hub " + flags.hub + " portal " + options.portal + (flags.immutable ? " (immutable)" : "");
  int rc = Serve(flags, (*spoke)->backend(), options.portal, (*spoke)->state_dir(), what,
                 stop_signals, [&] {
                   if (Status s = (*spoke)->Shutdown(); !s.ok()) {
                     log->error("journalled writes left for the next start: {}", s.ToString());
                   }
                 });
  log->info("final counters:\n{}", (*spoke)->MetricsText());
  return rc;
}

}  // namespace
}  // namespace geofs

int main(int argc, char** argv) {
  geofs::Flags flags;
  CLI::App app{"geofs-spoked: serves a directory over NFSv3"};
  auto* export_dir =
      app.add_option("--export-dir", flags.export_dir, "Standalone: directory served as export /");
  auto* hub = app.add_option("--hub", flags.hub, "Hub mode: the hub's gRPC address HOST:PORT");
  export_dir->excludes(hub);
  app.add_option("--portal", flags.portal, "Hub mode: hub directory served (also the export path)");
  app.add_option("--cache-dir", flags.cache_dir,
                 "Hub mode: chunk cache, write journal, spoke id and handle key");
  app.add_option("--cache-size", flags.cache_size,
                 "Hub mode: chunk cache capacity, e.g. 20G (default: up to 90% of its disk)");
  app.add_flag(
      "--immutable", flags.immutable,
      "Hub mode: serve cached data read-only while the hub is unreachable; refuse changes");
  auto* local_creates = app.add_flag(
      "--local-creates", flags.local_creates,
      "Hub mode (the default): answer CREATE (and SETATTR, WRITE and REMOVE of such files) on "
      "the spoke under the directory's lease, journalled, and send them to the hub shortly "
      "after (write-behind; docs/coherence.md)");
  app.add_flag("--no-local-creates", flags.no_local_creates,
               "Hub mode: send every CREATE to the hub before answering it")
      ->excludes(local_creates);
  app.add_option("--local-create-delay-ms", flags.local_create_delay_ms,
                 "Hub mode: how long a create answered on the spoke waits before it is sent "
                 "(a create removed meanwhile is never sent)")
      ->capture_default_str();
  app.add_flag("--no-prefetch", flags.no_prefetch,
               "Hub mode: fetch only what READs ask for (no prefetch predictor)");
  app.add_option("--metrics-port", flags.metrics_port,
                 "Hub mode: Prometheus text endpoint on --listen (0: pick a free one)");
  app.add_option("--hub-connect-timeout", flags.hub_connect_timeout_s,
                 "Hub mode: seconds to wait for the hub at start")
      ->capture_default_str();
  app.add_option("--listen", flags.listen, "Address to listen on")->capture_default_str();
  app.add_option("--nfs-port", flags.nfs_port, "NFS port (0: pick a free one)")
      ->capture_default_str();
  app.add_option("--mount-port", flags.mount_port,
                 "MOUNT port; may equal --nfs-port (0: pick a free one)")
      ->capture_default_str();
  app.add_option("--portmap-port", flags.portmap_port, "Also answer PORTMAP v2 on this port");
  app.add_flag("--read-only", flags.policy.read_only, "Refuse every change");
  app.add_option("--squash", flags.policy.squash, "Identity squashing: root, none or all")
      ->capture_default_str();
  app.add_option("--anon-uid", flags.policy.anon_uid, "uid of squashed callers")
      ->capture_default_str();
  app.add_option("--anon-gid", flags.policy.anon_gid, "gid of squashed callers")
      ->capture_default_str();
  app.add_option("--allow", flags.policy.allow, "Client address prefix allowed (CIDR); repeatable");
  app.add_option("--state-dir", flags.state_dir,
                 "Keeps the file-handle key (default: /var/lib/geofs/standalone-<id>)");
  app.add_option("--worker-threads", flags.worker_threads, "Threads running NFS procedures")
      ->capture_default_str();
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (!geofs::SetLogLevel(flags.log_level)) {
    std::fprintf(stderr, "--log-level %s: unknown level\n", flags.log_level.c_str());
    return 2;
  }
  if (flags.export_dir.empty() == flags.hub.empty()) {
    std::fprintf(stderr, "give either --export-dir (standalone) or --hub (hub mode)\n");
    return 2;
  }
  sigset_t stop_signals = geofs::BlockStopSignals();
  return flags.hub.empty() ? geofs::RunStandalone(flags, stop_signals)
                           : geofs::RunHub(flags, stop_signals);
}
