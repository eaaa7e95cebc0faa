// The benchmark workloads. Each defines what one "op" is:
//   seq         one 1 MiB READ; each connection streams from its own offset
//   rand4k      one 4 KiB READ at a random aligned offset
//   rand128k    one 128 KiB READ at a random aligned offset
//   dataset     one whole file, DataLoader-style: LOOKUP + GETATTR + READ(s),
//               files visited in one shuffled order shared by all connections
//   meta        CREATE + SETATTR + REMOVE of a fresh file in one directory
//   readdirplus a complete READDIRPLUS listing of the listing directory
//   probe       one LOOKUP of a name that does not exist (NOENT), next to a
//               data set file: the paths an import or a loader probes
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data_set.h"
#include "geofs/status.h"
#include "load_driver.h"
#include "rpc_connection.h"

namespace geofs::bench {

struct WorkloadOptions {
  DataSetSpec data;  // must describe what PrepareDataSet() laid out
  int connections = 4;
  uint64_t seed = 1;                     // random offsets and the data set order
  uint32_t dataset_read_size = 1 << 20;  // READ size for dataset files
  // READDIRPLUS maxcount; dircount is maxcount / 8, as the Linux client sends.
  uint32_t readdir_maxcount = 64 << 10;
};

class Workload {
 public:
  virtual ~Workload() = default;

  // What one op is, for reports.
  virtual std::string OpDescription() const = 0;
  // Resolves the handles the workload needs, once, before the timed run.
  virtual Status Setup(RpcConnection& conn, const FileHandle& root) = 0;
  // The half that runs on connection `index`. Thread-safe. REQUIRES: Setup() succeeded.
  virtual std::unique_ptr<ConnectionLoad> ForConnection(int index) = 0;
};

const std::vector<std::string>& WorkloadNames();

Result<std::unique_ptr<Workload>> MakeWorkload(const std::string& name,
                                               const WorkloadOptions& options);

}  // namespace geofs::bench
