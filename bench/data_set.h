// The on-disk layout the benchmark workloads read, and a fast local
// preparation of it (plain file writes into the export directory, not NFS).
//
//   seq.bin                  one large file (seq, rand4k, rand128k)
//   dataset/dNNN/fNNNNNN.bin many small files, `files_per_dir` per directory
//   listing/eNNNNNN          empty files in one directory (readdirplus)
//   meta/                    empty, world-writable scratch directory (meta)
#pragma once

#include <cstdint>
#include <string>

#include "geofs/status.h"

namespace geofs::bench {

inline constexpr char kBigFileName[] = "seq.bin";
inline constexpr char kDataSetDirName[] = "dataset";
inline constexpr char kListingDirName[] = "listing";
inline constexpr char kMetaDirName[] = "meta";

struct DataSetSpec {
  uint64_t big_file_bytes = uint64_t{2} << 30;  // 2 GiB
  uint32_t dataset_files = 20000;
  uint32_t files_per_dir = 200;
  uint32_t min_file_bytes = 100 << 10;  // sizes are uniform in [min, max]
  uint32_t max_file_bytes = 200 << 10;
  uint32_t listing_entries = 5000;
  uint64_t seed = 1;  // file contents and sizes are a function of the seed

  // One line that identifies the spec, stored beside the data.
  std::string Fingerprint() const;
};

// "d007": the directory of dataset file `file_index`.
std::string DataSetDirFor(const DataSetSpec& spec, uint32_t file_index);
std::string DataSetDirName(uint32_t dir_index);
std::string DataSetFileName(uint32_t file_index);
std::string ListingEntryName(uint32_t entry_index);
uint32_t DataSetDirCount(const DataSetSpec& spec);

// Creates the layout under `root` (which must exist). Idempotent: if `root`
// already holds data prepared from an equal spec, nothing is written and
// `*reused` is set. Otherwise earlier benchmark data under `root` (only the
// names above) is replaced. Does not fsync: the point is a warm page cache.
Status PrepareDataSet(const std::string& root, const DataSetSpec& spec, bool* reused);

}  // namespace geofs::bench
