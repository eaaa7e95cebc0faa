// geofs-hubd: the hub daemon. The namespace in RocksDB (DIR/meta), chunks in
// an object store (default DIR/objects), the gRPC API on --listen, and
// optionally the whole namespace over NFSv3 (export "/", read-write).
// main() only parses flags and wires the parts together.
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "chunk/chunk_store.h"
#include "common/logging.h"
#include "hub/gc_runner.h"
#include "hub/hub_backend.h"
#include "hub/hub_service.h"
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

// A message carries at most one 4 MiB chunk (or ~200,000 extents); the
// limit leaves room for the largest chunks a chunker may be set to cut.
constexpr int kMaxMessageBytes = 16 << 20;
constexpr auto kShutdownGrace = std::chrono::seconds(5);

struct Flags {
  std::string data_dir;
  std::string listen = "127.0.0.1:0";
  std::string object_store;
  std::optional<uint16_t> nfs_port;
  std::optional<uint16_t> mount_port;
  std::string squash = "none";
  std::string log_level = "info";
  int64_t gc_grace_seconds = 3600;
  int64_t gc_interval_seconds = 600;
  int grpc_threads = 64;
  size_t nfs_worker_threads = 16;
};

int WaitForStopSignal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
  return sig;
}

// "HOST:PORT" or "[V6]:PORT" -> the host without brackets.
std::string HostOf(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

int Run(const Flags& flags, const sigset_t& stop_signals) {
  auto log = GetLogger("hubd");
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string data_dir = fs::absolute(flags.data_dir, ec).lexically_normal().string();
  fs::create_directories(data_dir, ec);
  if (ec) {
    log->error("--data-dir {}: {}", flags.data_dir, ec.message());
    return 2;
  }
  if (flags.listen.rfind(':') == std::string::npos) {
    log->error("--listen {}: expected HOST:PORT", flags.listen);
    return 2;
  }
  if (flags.mount_port && !flags.nfs_port) {
    log->error("--mount-port needs --nfs-port");
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
  const std::string objects_dir = data_dir + "/objects";
  const std::string object_url =
      flags.object_store.empty() ? "file://" + objects_dir : flags.object_store;
  auto objects = object::OpenObjectStore(object_url);
  if (!objects.ok()) {
    log->error("--object-store {}: {}", object_url, objects.status().ToString());
    return 1;
  }
  chunk::ChunkStore chunks(objects->get());
  // Free space is meaningful only for a store on a local file system.
  const std::string statfs_path = object_url.starts_with("file://") ? object_url.substr(7) : "";

  hub::HubServiceOptions service_options;
  service_options.object_store_description = (*objects)->Describe();
  service_options.statfs_path = statfs_path;
  hub::HubService service(ns->get(), &chunks, service_options);

  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort(flags.listen, grpc::InsecureServerCredentials(), &grpc_port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  grpc::ResourceQuota quota("geofs-hubd");
  quota.SetMaxThreads(flags.grpc_threads);
  builder.SetResourceQuota(quota);
  // Find dead peers of long streams: ping idle connections.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
  if (!grpc_server || grpc_port == 0) {
    log->error("cannot serve gRPC on {}", flags.listen);
    return 1;
  }

  auto squash = nfs3::ParseSquash(flags.squash);
  if (!squash.ok()) {
    log->error("--squash {}: {}", flags.squash, squash.status().ToString());
    return 2;
  }

  std::unique_ptr<hub::HubBackend> backend;
  std::unique_ptr<nfs3::HandleCodec> codec;
  nfs3::ExportTable exports;
  std::unique_ptr<rpc::RpcServer> nfs_server;
  std::string nfs_text;
  if (flags.nfs_port) {
    hub::HubBackendOptions backend_options;
    backend_options.statfs_path = statfs_path;
    backend = std::make_unique<hub::HubBackend>(ns->get(), &chunks, backend_options);
    auto key = nfs3::HandleCodec::LoadOrCreateKey(data_dir + "/handle.key");
    if (!key.ok()) {
      log->error("handle key in {}: {}", data_dir, key.status().ToString());
      return 1;
    }
    codec = std::make_unique<nfs3::HandleCodec>(*key);
    nfs3::ExportOptions export_options;
    export_options.path = "/";
    export_options.squash = *squash;
    if (auto added = exports.Add(export_options, backend.get()); !added.ok()) {
      log->error("export /: {}", added.status().ToString());
      return 1;
    }
    rpc::RpcServerOptions rpc_options;
    rpc_options.listen_address = HostOf(flags.listen);
    rpc_options.worker_threads = flags.nfs_worker_threads;
    const uint16_t nfs_port = *flags.nfs_port;
    const uint16_t mount_port = flags.mount_port.value_or(nfs_port);
    rpc_options.ports = {nfs_port};
    size_t mount_index = 0;
    if (mount_port != nfs_port || (flags.mount_port && nfs_port == 0)) {
      mount_index = 1;
      rpc_options.ports.push_back(mount_port);
    }
    nfs_server = std::make_unique<rpc::RpcServer>(rpc_options);
    Status registered =
        nfs_server->Register(std::make_shared<nfs3::NfsProgram>(&exports, codec.get()));
    if (registered.ok()) {
      registered =
          nfs_server->Register(std::make_shared<mount::MountProgram>(&exports, codec.get()));
    }
    if (registered.ok()) registered = nfs_server->Start();
    if (!registered.ok()) {
      log->error("cannot serve NFS on {}: {}", rpc_options.listen_address, registered.ToString());
      return 1;
    }
    const auto& ports = nfs_server->bound_ports();
    nfs_text = " nfs=" + std::to_string(ports[0]) + " mount=" + std::to_string(ports[mount_index]);
  }

  hub::GcOptions gc_options;
  gc_options.grace = std::chrono::seconds(flags.gc_grace_seconds);
  gc_options.interval = std::chrono::seconds(flags.gc_interval_seconds);
  auto gc = std::make_unique<hub::GcRunner>(ns->get(), &chunks, gc_options);

  log->info("hub {} objects {}; listening grpc={}:{}{}", data_dir, (*objects)->Describe(),
            HostOf(flags.listen), grpc_port, nfs_text);

  int sig = WaitForStopSignal(stop_signals);
  log->info("signal {} received, stopping", sig);
  grpc_server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  if (nfs_server) nfs_server->Stop();
  int rc = 0;
  if (backend) {
    if (Status flushed = backend->FlushAll(); !flushed.ok()) {
      log->error("buffered NFS writes not saved: {}", flushed.ToString());
      rc = 1;
    }
  }
  gc.reset();
  log->info("stopped");
  return rc;
}

}  // namespace
}  // namespace geofs

int main(int argc, char** argv) {
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
  app.add_option("--squash", flags.squash,
                 "NFS identity squashing: none (trust client uids, like the gRPC API until "
                 "pairing lands), root or all")
      ->capture_default_str();
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
  app.add_option("--nfs-worker-threads", flags.nfs_worker_threads,
                 "Threads running NFS procedures")
      ->capture_default_str();
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (!geofs::SetLogLevel(flags.log_level)) {
    std::fprintf(stderr, "--log-level %s: unknown level\n", flags.log_level.c_str());
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return geofs::Run(flags, stop_signals);
}
