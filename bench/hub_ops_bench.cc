// geofs-hub-ops: namespace operations per second against a running
// geofs-hubd, over gRPC, with p50/p99 latencies.
//
//   geofs-hub-ops --hub HOST:PORT [--threads 8] [--duration 5] [--files 2000]
//                 [--ops lookup,getattr,create] [--json FILE]
//
// It makes a fresh directory /hub-ops-<pid>-<time> holding --files empty
// files (the set), then runs each op in turn for --duration seconds: every
// thread issues one call at a time (closed loop) and a call is replaced as
// soon as it returns.
//   lookup   Lookup of a random name of the set in its directory
//   getattr  GetAttr of a random file of the set
//   create   Create (GUARDED) of a new empty file, in a directory per thread
// Any failed call fails the run (exit 1): a hub that answers wrongly gets no
// figure. The directory is left behind (remove it, or the hub's data dir).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/hub_client.h"
#include "latency_histogram.h"

namespace geofs::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string hub;
  int threads = 8;
  double duration_s = 5;
  int files = 2000;
  std::string ops = "lookup,getattr,create";
  std::string json;
};

struct OpResult {
  std::string op;
  uint64_t calls = 0;
  double seconds = 0;
  LatencyHistogram latency;
};

// The files every read op picks from.
struct FileSet {
  v1::FileRef dir;
  std::vector<std::string> names;
  std::vector<v1::FileRef> refs;
};

Result<v1::Entry> CreateEntry(const cli::HubClient& hub, const v1::FileRef& dir,
                              const std::string& name, v1::FileType type) {
  v1::CreateRequest req;
  *req.mutable_dir() = dir;
  req.set_name(name);
  req.set_type(type);
  req.set_mode(v1::GUARDED);
  req.mutable_attrs()->set_mode(type == v1::DIRECTORY ? 0755 : 0644);
  v1::CreateResponse resp;
  GEOFS_RETURN_IF_ERROR(hub.Call(&v1::Hub::Stub::Create, req, &resp));
  return resp.object();
}

// Runs `threads` closed loops of `call(thread, i)` for `duration_s` seconds.
Result<OpResult> RunOp(const std::string& op, int threads, double duration_s,
                       const std::function<Status(int thread, uint64_t i)>& call) {
  OpResult result;
  result.op = op;
  std::vector<LatencyHistogram> histograms(threads);
  std::vector<uint64_t> counts(threads, 0);
  std::mutex mu;
  Status failure;
  std::atomic<bool> stop{false};
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(duration_s);
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
          const auto before = Clock::now();
          if (before >= end) break;
          Status s = call(t, i);
          const auto after = Clock::now();
          if (!s.ok()) {
            std::lock_guard lock(mu);
            if (failure.ok()) failure = Status(s.code(), op + ": " + s.ToString());
            stop = true;
            return;
          }
          histograms[t].Record(
              std::chrono::duration_cast<std::chrono::nanoseconds>(after - before).count());
          ++counts[t];
        }
      });
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!failure.ok()) return failure;
  for (int t = 0; t < threads; ++t) {
    result.latency.Merge(histograms[t]);
    result.calls += counts[t];
  }
  return result;
}

Result<FileSet> MakeFileSet(const cli::HubClient& hub, int files, int threads) {
  v1::ResolvePathRequest root_req;
  root_req.set_path("/");
  v1::ResolvePathResponse root;
  GEOFS_RETURN_IF_ERROR(hub.Call(&v1::Hub::Stub::ResolvePath, root_req, &root));
  const std::string name =
      "hub-ops-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch() / std::chrono::seconds(1));
  GEOFS_ASSIGN_OR_RETURN(v1::Entry dir, CreateEntry(hub, root.object().ref(), name, v1::DIRECTORY));
  FileSet set;
  set.dir = dir.ref();
  set.names.resize(files);
  set.refs.resize(files);
  std::atomic<int> next{0};
  std::mutex mu;
  Status failure;
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        for (int i = next++; i < files; i = next++) {
          set.names[i] = "f" + std::to_string(i);
          auto created = CreateEntry(hub, set.dir, set.names[i], v1::REGULAR);
          if (!created.ok()) {
            std::lock_guard lock(mu);
            failure = created.status();
            return;
          }
          set.refs[i] = created->ref();
        }
      });
    }
  }
  GEOFS_RETURN_IF_ERROR(failure);
  return set;
}

std::vector<std::string> SplitOps(const std::string& ops) {
  std::vector<std::string> out;
  std::stringstream in(ops);
  for (std::string op; std::getline(in, op, ',');) {
    if (!op.empty()) out.push_back(op);
  }
  return out;
}

int Run(const Flags& flags) {
  auto hub = cli::HubClient::Connect(flags.hub, std::chrono::seconds(10));
  if (!hub.ok()) {
    std::fprintf(stderr, "%s\n", hub.status().ToString().c_str());
    return 1;
  }
  auto set = MakeFileSet(**hub, flags.files, flags.threads);
  if (!set.ok()) {
    std::fprintf(stderr, "setup: %s\n", set.status().ToString().c_str());
    return 1;
  }
  // Create puts each thread in its own directory, so that the op measures
  // the namespace, not one directory's contention.
  std::vector<v1::FileRef> create_dirs;
  for (int t = 0; t < flags.threads; ++t) {
    auto dir = CreateEntry(**hub, set->dir, "create-" + std::to_string(t), v1::DIRECTORY);
    if (!dir.ok()) {
      std::fprintf(stderr, "setup: %s\n", dir.status().ToString().c_str());
      return 1;
    }
    create_dirs.push_back(dir->ref());
  }

  std::vector<std::mt19937_64> rngs;
  for (int t = 0; t < flags.threads; ++t) rngs.emplace_back(t + 1);
  auto pick = [&](int t) { return rngs[t]() % set->names.size(); };
  const cli::HubClient& client = **hub;
  std::vector<OpResult> results;
  for (const std::string& op : SplitOps(flags.ops)) {
    std::function<Status(int, uint64_t)> call;
    if (op == "lookup") {
      call = [&](int t, uint64_t) {
        v1::LookupRequest req;
        *req.mutable_dir() = set->dir;
        req.set_name(set->names[pick(t)]);
        v1::LookupResponse resp;
        return client.Call(&v1::Hub::Stub::Lookup, req, &resp);
      };
    } else if (op == "getattr") {
      call = [&](int t, uint64_t) {
        v1::GetAttrRequest req;
        *req.mutable_ref() = set->refs[pick(t)];
        v1::GetAttrResponse resp;
        return client.Call(&v1::Hub::Stub::GetAttr, req, &resp);
      };
    } else if (op == "create") {
      call = [&](int t, uint64_t i) {
        return CreateEntry(client, create_dirs[t], "n" + std::to_string(i), v1::REGULAR).status();
      };
    } else {
      std::fprintf(stderr, "unknown op %s (lookup, getattr, create)\n", op.c_str());
      return 2;
    }
    auto result = RunOp(op, flags.threads, flags.duration_s, call);
    if (!result.ok()) {
      std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
      return 1;
    }
    results.push_back(std::move(*result));
  }

  std::printf("| op | threads | calls | ops/s | p50 (us) | p99 (us) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  nlohmann::json json = nlohmann::json::array();
  for (const OpResult& r : results) {
    const double ops_per_s = r.calls / std::max(r.seconds, 1e-9);
    const double p50 = r.latency.Percentile(0.50) / 1e3;
    const double p99 = r.latency.Percentile(0.99) / 1e3;
    std::printf("| %s | %d | %llu | %.0f | %.0f | %.0f |\n", r.op.c_str(), flags.threads,
                static_cast<unsigned long long>(r.calls), ops_per_s, p50, p99);
    json.push_back({{"op", r.op},
                    {"threads", flags.threads},
                    {"calls", r.calls},
                    {"seconds", r.seconds},
                    {"ops_per_s", ops_per_s},
                    {"p50_us", p50},
                    {"p99_us", p99}});
  }
  if (!flags.json.empty()) std::ofstream(flags.json) << json.dump(2) << "\n";
  for (const OpResult& r : results) {
    if (r.calls == 0) {
      std::fprintf(stderr, "%s: no call completed\n", r.op.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace geofs::bench

int main(int argc, char** argv) {
  geofs::bench::Flags flags;
  CLI::App app{"geofs-hub-ops: gRPC namespace ops/s and latency against geofs-hubd"};
  app.add_option("--hub", flags.hub, "The hub's gRPC address HOST:PORT")->required();
  app.add_option("--threads", flags.threads, "Closed-loop client threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--duration", flags.duration_s, "Seconds per op")->capture_default_str();
  app.add_option("--files", flags.files, "Files in the set read by lookup and getattr")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));
  app.add_option("--ops", flags.ops, "Comma-separated ops to run, in order")->capture_default_str();
  app.add_option("--json", flags.json, "Also write the results as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  return geofs::bench::Run(flags);
}
