#include "load_run.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "nfs_url.h"
#include "rpc_connection.h"

namespace geofs::bench {
namespace {

constexpr std::chrono::seconds kConnectTimeout(10);

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

SteadyClock::duration Seconds(double s) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

Result<LoadResult> RunLoad(const LoadConfig& config) {
  if (config.connections < 1 || config.queue_depth < 1) {
    return Status::InvalidArgument("connections and queue depth must be positive");
  }
  if (config.ops && config.warmup_s > 0) {
    return Status::InvalidArgument("a warm-up needs a duration, not an op count");
  }
  GEOFS_ASSIGN_OR_RETURN(const NfsUrl url, ParseNfsUrl(config.url));
  WorkloadOptions options = config.load;
  options.connections = config.connections;
  GEOFS_ASSIGN_OR_RETURN(auto workload, MakeWorkload(config.workload, options));
  GEOFS_ASSIGN_OR_RETURN(const FileHandle root, MountExport(url));
  {
    GEOFS_ASSIGN_OR_RETURN(auto setup, RpcConnection::Connect(url, url.nfs_port, NFS_PROGRAM,
                                                              NFS_V3, kConnectTimeout));
    GEOFS_RETURN_IF_ERROR(workload->Setup(*setup, root));
  }

  std::vector<std::unique_ptr<RpcConnection>> conns;
  for (int i = 0; i < config.connections; ++i) {
    GEOFS_ASSIGN_OR_RETURN(
        auto conn, RpcConnection::Connect(url, url.nfs_port, NFS_PROGRAM, NFS_V3, kConnectTimeout));
    conns.push_back(std::move(conn));
  }

  const auto start = SteadyClock::now();
  const auto measure_start = start + Seconds(config.warmup_s);
  const auto deadline =
      config.ops ? SteadyClock::time_point::max() : measure_start + Seconds(config.duration_s);
  RunControl control(measure_start, deadline, config.ops);
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < config.connections; ++i) {
    workers.push_back(std::make_unique<Worker>(std::move(conns[i]), workload->ForConnection(i),
                                               config.queue_depth, &control));
  }

  const double cpu_before = CpuSeconds();
  std::vector<std::thread> threads;
  for (auto& worker : workers) threads.emplace_back([w = worker.get()] { w->Run(); });
  for (auto& thread : threads) thread.join();

  LoadResult result;
  result.client_cpu_s = CpuSeconds() - cpu_before;
  result.op_description = workload->OpDescription();
  SteadyClock::time_point last = measure_start;
  for (const auto& worker : workers) {
    result.stats.Merge(worker->stats());
    last = std::max(last, worker->last_completion());
  }
  const auto end = config.ops ? last : deadline;
  result.seconds = std::max(std::chrono::duration<double>(end - measure_start).count(), 1e-9);
  return result;
}

}  // namespace geofs::bench
