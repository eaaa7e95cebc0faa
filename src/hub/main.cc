// geofs-hubd: the hub daemon. The namespace in RocksDB (DIR/meta), chunks in
// an object store (default DIR/objects), the gRPC API on --listen, and
// optionally the whole namespace over NFSv3 (export "/", read-write).
// main() only parses flags and wires the parts together.
#include <sys/statvfs.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunk/allocator_tuning.h"
#include "chunk/chunk_store.h"
#include "common/byte_size.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "hub/gc_runner.h"
#include "hub/grpc_server.h"
#include "hub/hub_backend.h"
#include "hub/hub_service.h"
#include "hub/lease_manager.h"
#include "meta/namespace.h"
#include "meta/rocks_kv_store.h"
#include "mount/mount_program.h"
#include "nfs3/export.h"
#include "nfs3/handle_codec.h"
#include "nfs3/nfs_program.h"
#include "object/object_store.h"
#include "rpc/server.h"

namespace geofs {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(5);

struct Flags {
  std::string data_dir;
  std::string listen = "127.0.0.1:0";
  std::string object_store;
  std::optional<uint16_t> nfs_port;
  std::optional<uint16_t> mount_port;
  // The hub's own export trusts client uids by default, like its gRPC API.
  nfs3::ExportPolicyText policy{.squash = "none"};
  std::string log_level = "info";
  int64_t gc_grace_seconds = 3600;
  int64_t gc_interval_seconds = 600;
  int grpc_threads = 256;
  size_t nfs_worker_threads = 16;
  double lease_ttl_seconds = 30;
  std::string keep_free;  // empty: min(1 GiB, 5% of the file system)
};

// How much of a local object store's file system (the one holding
// `store_dir`; none: empty) chunk writes leave free
// (LocalObjectStoreOptions::keep_free_bytes).
Result<uint64_t> KeepFreeBytes(const std::string& flag, const std::string& store_dir) {
  if (!flag.empty()) return ParseByteSize(flag);
  if (store_dir.empty()) return uint64_t{0};
  // The store's directory may not exist yet: its nearest existing parent
  // is on the same file system.
  std::filesystem::path dir(store_dir);
  std::error_code ec;
  while (!std::filesystem::exists(dir, ec) && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) != 0) return Status::FromErrno(errno, "statvfs " + dir.string());
  const uint64_t total = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
  return std::min<uint64_t>(uint64_t{1} << 30, total / 20);
}

// "HOST:PORT" or "[V6]:PORT" -> the host without brackets.
std::string HostOf(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

// The namespace served over NFSv3 + MOUNT v3.
struct NfsExport {
  std::unique_ptr<hub::HubBackend> backend;
  std::unique_ptr<nfs3::HandleCodec> codec;
  nfs3::ExportTable exports;
  std::unique_ptr<rpc::RpcServer> server;
  uint16_t nfs_port = 0;
  uint16_t mount_port = 0;
};

Result<std::unique_ptr<NfsExport>> StartNfs(const Flags& flags,
                                            const nfs3::ExportOptions& export_options,
                                            const std::string& data_dir,
                                            std::unique_ptr<hub::HubBackend> backend) {
  auto nfs = std::make_unique<NfsExport>();
  nfs->backend = std::move(backend);
  GEOFS_ASSIGN_OR_RETURN(nfs3::HandleCodec::Key key,
                         nfs3::HandleCodec::LoadOrCreateKey(data_dir + "/handle.key"));
  nfs->codec = std::make_unique<nfs3::HandleCodec>(key);
  GEOFS_RETURN_IF_ERROR(nfs->exports.Add(export_options, nfs->backend.get()).status());

  // Every port serves both programs; MOUNT gets a port of its own when asked.
  rpc::RpcServerOptions options;
  options.listen_address = HostOf(flags.listen);
  options.worker_threads = flags.nfs_worker_threads;
  const uint16_t nfs_port = *flags.nfs_port;
  const uint16_t mount_port = flags.mount_port.value_or(nfs_port);
  options.ports = {nfs_port};
  const bool own_mount_port = mount_port != nfs_port || (flags.mount_port && nfs_port == 0);
  if (own_mount_port) options.ports.push_back(mount_port);
  nfs->server = std::make_unique<rpc::RpcServer>(options);
  GEOFS_RETURN_IF_ERROR(
      nfs->server->Register(std::make_shared<nfs3::NfsProgram>(&nfs->exports, nfs->codec.get())));
  GEOFS_RETURN_IF_ERROR(nfs->server->Register(
      std::make_shared<mount::MountProgram>(&nfs->exports, nfs->codec.get())));
  GEOFS_RETURN_IF_ERROR(nfs->server->Start());
  nfs->nfs_port = nfs->server->bound_ports()[0];
  nfs->mount_port = nfs->server->bound_ports()[own_mount_port ? 1 : 0];
  return nfs;
}

int Run(const Flags& flags, const sigset_t& stop_signals) {
  auto log = GetLogger("hubd");
  namespace fs = std::filesystem;
  if (flags.listen.rfind(':') == std::string::npos) {
    log->error("--listen {}: expected HOST:PORT", flags.listen);
    return 2;
  }
  if (flags.mount_port && !flags.nfs_port) {
    log->error("--mount-port needs --nfs-port");
    return 2;
  }
  auto export_options = nfs3::ParseExportOptions("/", flags.policy);
  if (!export_options.ok()) {
    log->error("{}", export_options.status().ToString());
    return 2;
  }
  std::error_code ec;
  const std::string data_dir = fs::absolute(flags.data_dir, ec).lexically_normal().string();
  fs::create_directories(data_dir, ec);
  if (ec) {
    log->error("--data-dir {}: {}", flags.data_dir, ec.message());
    return 2;
  }

  auto kv = meta::RocksKvStore::Open(data_dir + "/meta");
  if (!kv.ok()) {
    log->error("namespace store {}/meta: {}", data_dir, kv.status().ToString());
    return 1;
  }
  auto ns = meta::Namespace::Open(kv->get());
  if (!ns.ok()) {
    log->error("namespace in {}/meta: {}", data_dir, ns.status().ToString());
    return 1;
  }
  auto stopped_cleanly = (*ns)->MarkRunning(Clock::Real()->WallNow());
  if (!stopped_cleanly.ok()) {
    log->error("namespace in {}/meta: {}", data_dir, stopped_cleanly.status().ToString());
    return 1;
  }
  if (!*stopped_cleanly) {
    log->info(
        "no clean stop recorded (a new store, or the last run ended abruptly): GC will look "
        "for orphaned chunks once the grace period has passed");
  }
  const std::string object_url =
      flags.object_store.empty() ? "file://" + data_dir + "/objects" : flags.object_store;
  hub::SpaceSource space;
  // Free space is meaningful only for a store on a local file system.
  if (object_url.starts_with("file://")) space.statfs_path = object_url.substr(7);
  auto keep_free = KeepFreeBytes(flags.keep_free, space.statfs_path);
  if (!keep_free.ok()) {
    log->error("--keep-free: {}", keep_free.status().ToString());
    return 2;
  }
  space.keep_free_bytes = *keep_free;
  auto objects = object::OpenObjectStore(object_url, space.keep_free_bytes);
  if (!objects.ok()) {
    log->error("--object-store {}: {}", object_url, objects.status().ToString());
    return 1;
  }
  chunk::ChunkStoreOptions chunk_options;
  // A local store answers "is it there?" with a stat: threads would cost more
  // than the little latency they hide (they hide S3's round trips).
  if (!space.statfs_path.empty()) chunk_options.missing_parallelism = 1;
  chunk::ChunkStore chunks(objects->get(), chunk_options);

  hub::LeaseManagerOptions lease_options;
  lease_options.lease_ttl = std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(flags.lease_ttl_seconds * 1000)));
  lease_options.horizon_path = data_dir + "/lease-horizon";
  hub::LeaseManager leases(lease_options);

  hub::HubServiceOptions service_options;
  service_options.leases = &leases;
  service_options.object_store_description = (*objects)->Describe();
  service_options.space = space;
  hub::HubService service(ns->get(), &chunks, service_options);
  hub::GrpcServerOptions grpc_options;
  grpc_options.listen = flags.listen;
  grpc_options.max_threads = flags.grpc_threads;
  auto grpc_server = hub::StartGrpcServer(&service, grpc_options);
  if (!grpc_server.ok()) {
    log->error("{}", grpc_server.status().ToString());
    return 1;
  }

  std::unique_ptr<NfsExport> nfs;
  std::string nfs_text;
  if (flags.nfs_port) {
    hub::HubBackendOptions backend_options;
    backend_options.space = space;
    backend_options.leases = &leases;
    auto started = StartNfs(flags, *export_options, data_dir,
                            std::make_unique<hub::HubBackend>(ns->get(), &chunks, backend_options));
    if (!started.ok()) {
      log->error("cannot serve NFS on {}: {}", HostOf(flags.listen), started.status().ToString());
      return 1;
    }
    nfs = std::move(started).value();
    nfs_text =
        " nfs=" + std::to_string(nfs->nfs_port) + " mount=" + std::to_string(nfs->mount_port);
  }

  hub::GcOptions gc_options;
  gc_options.grace = std::chrono::seconds(flags.gc_grace_seconds);
  gc_options.interval = std::chrono::seconds(flags.gc_interval_seconds);
  auto gc = std::make_unique<hub::GcRunner>(ns->get(), &chunks, gc_options);

  log->info("hub {} objects {}; listening grpc={}:{}{}", data_dir, (*objects)->Describe(),
            HostOf(flags.listen), grpc_server->port, nfs_text);

  int sig = WaitForStopSignal(stop_signals);
  log->info("signal {} received, stopping", sig);
  grpc_server->server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  int rc = 0;
  if (nfs) {
    nfs->server->Stop();
    if (Status flushed = nfs->backend->FlushAll(); !flushed.ok()) {
      log->error("buffered NFS writes not saved: {}", flushed.ToString());
      rc = 1;
    }
  }
  gc.reset();
  // Last, so that every registration made in this run is durable with it.
  if (Status marked = (*ns)->MarkCleanStop(); !marked.ok()) {
    log->error("cannot record the clean stop: {}", marked.ToString());
    rc = 1;
  }
  log->info("stopped");
  return rc;
}

}  // namespace
}  // namespace geofs

int main(int argc, char** argv) {
  geofs::chunk::TuneAllocatorForChunkTraffic();
  geofs::Flags flags;
  CLI::App app{"geofs-hubd: the geofs hub (namespace, chunks, gRPC API, NFSv3 export)"};
  app.add_option("--data-dir", flags.data_dir,
                 "Holds the namespace (meta/), the default object store (objects/) and the "
                 "NFS handle key")
      ->required();
  app.add_option("--listen", flags.listen, "gRPC address HOST:PORT (port 0: pick a free one)")
      ->capture_default_str();
  app.add_option("--object-store", flags.object_store,
                 "file:///path or s3://bucket/prefix[?endpoint=http://host:port] "
                 "(default: file://DATA_DIR/objects)");
  app.add_option("--nfs-port", flags.nfs_port,
                 "Serve the namespace over NFSv3 on this port (0: pick one)");
  app.add_option("--mount-port", flags.mount_port,
                 "MOUNT port (default: the NFS port; 0: pick one)");
  app.add_option("--squash", flags.policy.squash,
                 "NFS identity squashing: none (trust client uids, like the gRPC API until "
                 "pairing lands), root or all")
      ->capture_default_str();
  app.add_flag("--read-only", flags.policy.read_only, "Refuse every change over NFS");
  app.add_option("--anon-uid", flags.policy.anon_uid, "uid of squashed NFS callers")
      ->capture_default_str();
  app.add_option("--anon-gid", flags.policy.anon_gid, "gid of squashed NFS callers")
      ->capture_default_str();
  app.add_option("--allow", flags.policy.allow,
                 "NFS client address prefix allowed (CIDR); repeatable");
  app.add_option("--gc-grace", flags.gc_grace_seconds,
                 "Seconds an unreferenced chunk is kept before it is deleted")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--gc-interval", flags.gc_interval_seconds,
                 "Seconds between garbage collection passes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--grpc-threads", flags.grpc_threads, "Most threads serving gRPC calls")
      ->capture_default_str()
      ->check(CLI::Range(4, 4096));
  app.add_option("--nfs-worker-threads", flags.nfs_worker_threads, "Threads running NFS procedures")
      ->capture_default_str();
  app.add_option("--lease-ttl", flags.lease_ttl_seconds,
                 "Seconds a spoke's lease lasts (fractions allowed): how long a change waits "
                 "for an unreachable spoke")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
  app.add_option("--keep-free", flags.keep_free,
                 "Free space (e.g. 512M, 2G) that chunk writes leave on a file:// object "
                 "store's file system, so that the namespace can still record changes when "
                 "the store is full (default: 1G or 5% of the file system, the smaller)");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (!geofs::SetLogLevel(flags.log_level)) {
    std::fprintf(stderr, "--log-level %s: unknown level\n", flags.log_level.c_str());
    return 2;
  }
  sigset_t stop_signals = geofs::BlockStopSignals();
  return geofs::Run(flags, stop_signals);
}
