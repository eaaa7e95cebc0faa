// geofs-nfs-load: a closed-loop NFSv3 load generator on libnfs's async API,
// and the preparation of the data it reads. See docs/benchmarks.md.
//
//   geofs-nfs-load --prepare DIR
//   geofs-nfs-load --url 'nfs://127.0.0.1/EXPORT?version=3&nfsport=P&mountport=M'
//                  --workload seq --connections 4 --qd 8 --duration 10 --json out.json
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "data_set.h"
#include "load_run.h"
#include "workloads.h"

namespace geofs::bench {
namespace {

struct Options {
  std::string prepare_dir;
  std::string label;
  std::string json_path;
  LoadConfig run;
};

double Micros(uint64_t ns) { return ns / 1e3; }

nlohmann::json LatencyJson(const LatencyHistogram& h) {
  return {{"count", h.count()},
          {"mean_us", h.mean_ns() / 1e3},
          {"p50_us", Micros(h.Percentile(0.50))},
          {"p99_us", Micros(h.Percentile(0.99))},
          {"p999_us", Micros(h.Percentile(0.999))},
          {"max_us", Micros(h.max_ns())}};
}

nlohmann::json ResultJson(const Options& opt, const LoadResult& r) {
  const RunStats& s = r.stats;
  nlohmann::json calls = nlohmann::json::object();
  for (int p = 0; p < kNfs3ProcCount; ++p) {
    if (s.call_latency[p].count() > 0) calls[Nfs3ProcName(p)] = LatencyJson(s.call_latency[p]);
  }
  return {{"workload", opt.run.workload},
          {"label", opt.label},
          {"op", r.op_description},
          {"connections", opt.run.connections},
          {"queue_depth", opt.run.queue_depth},
          {"seconds", r.seconds},
          {"ops", s.ops},
          {"ops_per_sec", s.ops / r.seconds},
          {"bytes", s.bytes},
          {"mb_per_sec", s.bytes / r.seconds / 1e6},
          {"items", s.items},
          {"items_per_sec", s.items / r.seconds},
          {"errors", s.errors},
          {"first_error", s.first_error},
          {"client_cpu_seconds", r.client_cpu_s},
          {"latency", LatencyJson(s.op_latency)},
          {"calls", calls}};
}

void PrintHuman(const Options& opt, const LoadResult& r) {
  const RunStats& s = r.stats;
  auto ms = [](uint64_t ns) { return ns / 1e6; };
  std::printf("%s%s%s: %d conn x QD %d, %.1f s, op = %s\n", opt.run.workload.c_str(),
              opt.label.empty() ? "" : " @ ", opt.label.c_str(), opt.run.connections,
              opt.run.queue_depth, r.seconds, r.op_description.c_str());
  std::printf("  %.0f ops/s  %.1f MB/s  %.0f items/s  errors %llu  client CPU %.2f s\n",
              s.ops / r.seconds, s.bytes / r.seconds / 1e6, s.items / r.seconds,
              static_cast<unsigned long long>(s.errors), r.client_cpu_s);
  std::printf("  op latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
              ms(s.op_latency.Percentile(0.5)), ms(s.op_latency.Percentile(0.99)),
              ms(s.op_latency.Percentile(0.999)), ms(s.op_latency.max_ns()));
  for (int p = 0; p < kNfs3ProcCount; ++p) {
    const LatencyHistogram& h = s.call_latency[p];
    if (h.count() == 0) continue;
    std::printf("  %-12s n=%-9llu p50 %.3f  p99 %.3f  p99.9 %.3f ms\n", Nfs3ProcName(p),
                static_cast<unsigned long long>(h.count()), ms(h.Percentile(0.5)),
                ms(h.Percentile(0.99)), ms(h.Percentile(0.999)));
  }
  if (s.errors > 0) std::printf("  first error: %s\n", s.first_error.c_str());
}

int Main(int argc, char** argv) {
  Options opt;
  LoadConfig& run = opt.run;
  DataSetSpec& data = run.load.data;
  CLI::App app{"geofs-nfs-load: NFSv3 load generator (libnfs async API)"};
  app.add_option("--prepare", opt.prepare_dir,
                 "Lay out the benchmark data under this local directory and exit");
  app.add_option("--url", run.url,
                 "nfs://HOST/EXPORT?version=3&nfsport=P&mountport=M[&uid=U&gid=G]");
  app.add_option("--workload", run.workload, "seq|rand4k|rand128k|dataset|meta|readdirplus")
      ->check(CLI::IsMember(WorkloadNames()));
  app.add_option("--connections", run.connections, "TCP connections (one thread each)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--qd", run.queue_depth, "Ops in flight per connection")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--duration", run.duration_s, "Measured seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", run.warmup_s, "Unmeasured seconds before the measured ones")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--ops", run.ops, "Run exactly this many ops instead of --duration");
  app.add_option("--label", opt.label, "Name of the server under test, copied to the report");
  app.add_option("--json", opt.json_path, "Write the result as JSON to this file ('-': stdout)");
  app.add_option("--seed", run.load.seed, "Seed of offsets, data set order and contents")
      ->capture_default_str();
  app.add_option("--file-size", data.big_file_bytes, "Size of seq.bin (e.g. 2GiB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--dataset-files", data.dataset_files, "Files in the data set")
      ->capture_default_str();
  app.add_option("--files-per-dir", data.files_per_dir, "Data set files per directory")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--listing-entries", data.listing_entries, "Entries of the listing directory")
      ->capture_default_str();
  app.add_option("--readdir-maxcount", run.load.readdir_maxcount, "READDIRPLUS maxcount bytes")
      ->check(CLI::Range(1024, 1 << 20))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  data.seed = run.load.seed;

  if (!opt.prepare_dir.empty()) {
    bool reused = false;
    const auto t0 = SteadyClock::now();
    const Status status = PrepareDataSet(opt.prepare_dir, data, &reused);
    if (!status.ok()) {
      std::fprintf(stderr, "prepare failed: %s\n", status.ToString().c_str());
      return 1;
    }
    std::printf("%s %s (%s) in %.1f s\n", reused ? "reused" : "prepared", opt.prepare_dir.c_str(),
                data.Fingerprint().c_str(),
                std::chrono::duration<double>(SteadyClock::now() - t0).count());
    return 0;
  }
  if (run.url.empty() || run.workload.empty()) {
    std::fprintf(stderr, "either --prepare DIR, or --url and --workload are required\n");
    return 2;
  }

  const Result<LoadResult> result = RunLoad(run);
  if (!result.ok()) {
    std::fprintf(stderr, "%s: %s\n", run.workload.c_str(), result.status().ToString().c_str());
    return 1;
  }
  PrintHuman(opt, *result);
  if (!opt.json_path.empty()) {
    const std::string text = ResultJson(opt, *result).dump(2) + "\n";
    if (opt.json_path == "-") {
      std::cout << text;
    } else {
      std::ofstream out(opt.json_path, std::ios::trunc);
      out << text;
      if (!out) {
        std::fprintf(stderr, "cannot write %s\n", opt.json_path.c_str());
        return 1;
      }
    }
  }
  // A benchmark of a server that answered wrongly is no benchmark.
  return result->stats.errors == 0 && result->stats.ops > 0 ? 0 : 1;
}

}  // namespace
}  // namespace geofs::bench

int main(int argc, char** argv) { return geofs::bench::Main(argc, argv); }
