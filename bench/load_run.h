// One complete load run: mount, resolve handles, connect, drive every
// connection on its own thread, merge what they measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "geofs/status.h"
#include "load_driver.h"
#include "workloads.h"

namespace geofs::bench {

struct LoadConfig {
  std::string url;       // see nfs_url.h
  std::string workload;  // one of WorkloadNames()
  int connections = 4;
  int queue_depth = 8;  // ops in flight per connection
  double duration_s = 10;
  double warmup_s = 0;  // unmeasured time before duration_s; only without `ops`
  // Run exactly this many ops (all measured) instead of for duration_s.
  std::optional<uint64_t> ops;
  WorkloadOptions load;  // load.connections is taken from `connections`
};

struct LoadResult {
  RunStats stats;
  double seconds = 0;       // the measured interval
  double client_cpu_s = 0;  // CPU this process used while the connections ran
  std::string op_description;
};

// Runs `config` to completion. Fails if the run cannot start (bad URL, no
// server, missing data); errors of individual ops are counted in the result.
Result<LoadResult> RunLoad(const LoadConfig& config);

}  // namespace geofs::bench
