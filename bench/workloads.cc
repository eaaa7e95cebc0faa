#include "workloads.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <random>

namespace geofs::bench {
namespace {

constexpr uint32_t kSeqBlock = 1 << 20;
constexpr uint32_t kMetaCreateMode = 0644;
constexpr uint32_t kMetaSetMode = 0600;
constexpr uint32_t kMetaMtime = 1700000000;

// ---- seq / rand4k / rand128k ---------------------------------------------------

// Completes a single-READ op, insisting on a full block (the file is a
// multiple of the block size and offsets are block-aligned).
void FinishBlockRead(Op& op, void* reply, uint32_t block) {
  const READ3resok& res = static_cast<READ3res*>(reply)->READ3res_u.resok;
  if (res.count != block) {
    op.Fail("short READ: " + std::to_string(res.count) + " of " + std::to_string(block) +
            " bytes at offset " + std::to_string(op.offset));
    return;
  }
  op.Finish(res.count, 1);
}

class SequentialLoad : public ConnectionLoad {
 public:
  SequentialLoad(const FileHandle& file, uint64_t blocks, uint64_t first_block)
      : file_(file), blocks_(blocks), next_block_(first_block % blocks) {}

  void Start(Op& op) override {
    op.offset = next_block_ * kSeqBlock;
    next_block_ = (next_block_ + 1) % blocks_;
    op.Read(file_, op.offset, kSeqBlock);
  }
  void OnReply(Op& op, void* reply) override { FinishBlockRead(op, reply, kSeqBlock); }

 private:
  const FileHandle file_;
  const uint64_t blocks_;
  uint64_t next_block_;
};

class RandomLoad : public ConnectionLoad {
 public:
  RandomLoad(const FileHandle& file, uint64_t blocks, uint32_t block, uint64_t seed)
      : file_(file), block_(block), rng_(seed), pick_(0, blocks - 1) {}

  void Start(Op& op) override {
    op.offset = pick_(rng_) * block_;
    op.Read(file_, op.offset, block_);
  }
  void OnReply(Op& op, void* reply) override { FinishBlockRead(op, reply, block_); }

 private:
  const FileHandle file_;
  const uint32_t block_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<uint64_t> pick_;
};

class ReadWorkload : public Workload {
 public:
  ReadWorkload(bool sequential, uint32_t block, const WorkloadOptions& options)
      : sequential_(sequential), block_(block), options_(options) {}

  std::string OpDescription() const override {
    return std::to_string(block_ >> 10) + " KiB READ (" +
           (sequential_ ? "sequential" : "random, aligned") + ")";
  }

  Status Setup(RpcConnection& conn, const FileHandle& root) override {
    GEOFS_ASSIGN_OR_RETURN(file_, LookupSync(conn, root, kBigFileName));
    GEOFS_ASSIGN_OR_RETURN(const uint64_t size, FileSizeSync(conn, file_));
    blocks_ = size / block_;
    if (blocks_ == 0) {
      return Status::InvalidArgument(std::string(kBigFileName) + " is smaller than one block");
    }
    return Status::Ok();
  }

  std::unique_ptr<ConnectionLoad> ForConnection(int index) override {
    if (sequential_) {
      // Each connection starts streaming at its own share of the file.
      return std::make_unique<SequentialLoad>(file_, blocks_,
                                              blocks_ * index / options_.connections);
    }
    return std::make_unique<RandomLoad>(file_, blocks_, block_, options_.seed * 1000003 + index);
  }

 private:
  const bool sequential_;
  const uint32_t block_;
  const WorkloadOptions options_;
  FileHandle file_;
  uint64_t blocks_ = 0;
};

// ---- dataset -------------------------------------------------------------------

// Shared by the connections of a dataset run.
struct DataSetState {
  std::vector<FileHandle> dirs;
  std::vector<uint32_t> order;  // file indices in shuffled order
  std::atomic<uint64_t> next{0};
};

class DataSetLoad : public ConnectionLoad {
 public:
  DataSetLoad(DataSetState* state, const DataSetSpec& spec, uint32_t read_size)
      : state_(state), spec_(spec), read_size_(read_size) {}

  void Start(Op& op) override {
    const uint64_t n = state_->next.fetch_add(1, std::memory_order_relaxed);
    const uint32_t file = state_->order[n % state_->order.size()];
    op.index = file;
    op.step = kLookup;
    op.offset = 0;
    op.bytes = 0;
    op.name = DataSetFileName(file);
    op.Lookup(state_->dirs[file / spec_.files_per_dir], op.name);
  }

  void OnReply(Op& op, void* reply) override {
    switch (op.step) {
      case kLookup: {
        const nfs_fh3& obj = static_cast<LOOKUP3res*>(reply)->LOOKUP3res_u.resok.object;
        auto fh = FileHandle::FromBytes(obj.data.data_val, obj.data.data_len);
        if (!fh.ok()) return op.Fail("LOOKUP " + op.name + ": " + fh.status().ToString());
        op.fh = *fh;
        op.step = kGetAttr;
        return op.GetAttr(op.fh);
      }
      case kGetAttr:
        op.size = static_cast<GETATTR3res*>(reply)->GETATTR3res_u.resok.obj_attributes.size;
        if (op.size == 0) return op.Finish(0, 1);
        op.step = kRead;
        return ReadNext(op);
      case kRead: {
        const READ3resok& res = static_cast<READ3res*>(reply)->READ3res_u.resok;
        op.offset += res.count;
        op.bytes += res.count;
        if (op.offset >= op.size) return op.Finish(op.bytes, 1);
        if (res.count == 0 || res.eof) {
          return op.Fail("READ " + op.name + " ended at " + std::to_string(op.offset) + " of " +
                         std::to_string(op.size) + " bytes");
        }
        return ReadNext(op);
      }
    }
  }

 private:
  enum Step { kLookup, kGetAttr, kRead };

  void ReadNext(Op& op) {
    op.Read(op.fh, op.offset,
            static_cast<uint32_t>(std::min<uint64_t>(op.size - op.offset, read_size_)));
  }

  DataSetState* const state_;
  const DataSetSpec spec_;
  const uint32_t read_size_;
};

class DataSetWorkload : public Workload {
 public:
  explicit DataSetWorkload(const WorkloadOptions& options) : options_(options) {}

  std::string OpDescription() const override {
    return "whole file: LOOKUP + GETATTR + READ, shuffled";
  }

  Status Setup(RpcConnection& conn, const FileHandle& root) override {
    const DataSetSpec& spec = options_.data;
    if (spec.dataset_files == 0) return Status::InvalidArgument("the data set has no files");
    GEOFS_ASSIGN_OR_RETURN(const FileHandle top, LookupSync(conn, root, kDataSetDirName));
    // Directory handles are resolved once, as a client's dentry cache would.
    for (uint32_t d = 0; d < DataSetDirCount(spec); ++d) {
      GEOFS_ASSIGN_OR_RETURN(FileHandle dir, LookupSync(conn, top, DataSetDirName(d)));
      state_.dirs.push_back(dir);
    }
    state_.order.resize(spec.dataset_files);
    std::iota(state_.order.begin(), state_.order.end(), 0);
    std::shuffle(state_.order.begin(), state_.order.end(), std::mt19937_64(options_.seed));
    return Status::Ok();
  }

  std::unique_ptr<ConnectionLoad> ForConnection(int) override {
    return std::make_unique<DataSetLoad>(&state_, options_.data, options_.dataset_read_size);
  }
  DataSetState& state() { return state_; }
  const DataSetSpec& spec() const { return options_.data; }

 private:
  const WorkloadOptions options_;
  DataSetState state_;
};

// ---- meta ----------------------------------------------------------------------

class MetaLoad : public ConnectionLoad {
 public:
  MetaLoad(const FileHandle& dir, std::string prefix) : dir_(dir), prefix_(std::move(prefix)) {}

  void Start(Op& op) override {
    op.name = prefix_ + std::to_string(next_++);
    op.step = kCreate;
    op.Create(dir_, op.name, kMetaCreateMode);
  }

  void OnReply(Op& op, void* reply) override {
    switch (op.step) {
      case kCreate: {
        const post_op_fh3& obj = static_cast<CREATE3res*>(reply)->CREATE3res_u.resok.obj;
        if (!obj.handle_follows) return op.Fail("CREATE " + op.name + " returned no handle");
        auto fh = FileHandle::FromBytes(obj.post_op_fh3_u.handle.data.data_val,
                                        obj.post_op_fh3_u.handle.data.data_len);
        if (!fh.ok()) return op.Fail("CREATE " + op.name + ": " + fh.status().ToString());
        op.fh = *fh;
        op.step = kSetAttr;
        return op.SetAttr(op.fh, kMetaSetMode, kMetaMtime);
      }
      case kSetAttr:
        op.step = kRemove;
        return op.Remove(dir_, op.name);
      case kRemove:
        return op.Finish(0, 1);
    }
  }

 private:
  enum Step { kCreate, kSetAttr, kRemove };

  const FileHandle dir_;
  const std::string prefix_;
  uint64_t next_ = 0;
};

class MetaWorkload : public Workload {
 public:
  std::string OpDescription() const override { return "CREATE + SETATTR + REMOVE"; }

  Status Setup(RpcConnection& conn, const FileHandle& root) override {
    GEOFS_ASSIGN_OR_RETURN(dir_, LookupSync(conn, root, kMetaDirName));
    return Status::Ok();
  }

  std::unique_ptr<ConnectionLoad> ForConnection(int index) override {
    // Unique per process and connection, so concurrent runs never collide.
    std::string prefix = "p";
    prefix += std::to_string(::getpid());
    prefix += "c";
    prefix += std::to_string(index);
    prefix += "-";
    return std::make_unique<MetaLoad>(dir_, std::move(prefix));
  }

 private:
  FileHandle dir_;
};

// ---- probe ---------------------------------------------------------------------

// Each data set file has one missing companion ("<file>.missing"), probed in
// the data set's shuffled order, over and over (as every epoch's loader or
// every process's imports probe the same paths).
class ProbeLoad : public ConnectionLoad {
 public:
  ProbeLoad(DataSetState* state, const DataSetSpec& spec) : state_(state), spec_(spec) {}

  void Start(Op& op) override {
    const uint64_t n = state_->next.fetch_add(1, std::memory_order_relaxed);
    const uint32_t file = state_->order[n % state_->order.size()];
    op.name = DataSetFileName(file) + ".missing";
    op.expect = NFS3ERR_NOENT;
    op.Lookup(state_->dirs[file / spec_.files_per_dir], op.name);
  }

  void OnReply(Op& op, void*) override { op.Finish(0, 1); }

 private:
  DataSetState* const state_;
  const DataSetSpec spec_;
};

class ProbeWorkload : public Workload {
 public:
  explicit ProbeWorkload(const WorkloadOptions& options) : data_set_(options) {}

  std::string OpDescription() const override { return "LOOKUP of a missing name (NOENT)"; }
  Status Setup(RpcConnection& conn, const FileHandle& root) override {
    return data_set_.Setup(conn, root);
  }
  std::unique_ptr<ConnectionLoad> ForConnection(int) override {
    return std::make_unique<ProbeLoad>(&data_set_.state(), data_set_.spec());
  }

 private:
  DataSetWorkload data_set_;  // the directories and the order
};

// ---- readdirplus ---------------------------------------------------------------

class ListingLoad : public ConnectionLoad {
 public:
  ListingLoad(const FileHandle& dir, uint32_t expected, uint32_t maxcount)
      : dir_(dir), expected_(expected), maxcount_(maxcount) {}

  void Start(Op& op) override {
    op.cookie = 0;
    std::memset(op.verifier, 0, sizeof(op.verifier));
    op.items = 0;
    Next(op);
  }

  void OnReply(Op& op, void* reply) override {
    const READDIRPLUS3resok& res = static_cast<READDIRPLUS3res*>(reply)->READDIRPLUS3res_u.resok;
    bool any = false;
    for (const entryplus3* e = res.reply.entries; e != nullptr; e = e->nextentry) {
      any = true;
      op.cookie = e->cookie;
      if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0) ++op.items;
    }
    std::memcpy(op.verifier, res.cookieverf, sizeof(op.verifier));
    if (res.reply.eof) {
      if (op.items != expected_) {
        return op.Fail("listing returned " + std::to_string(op.items) + " entries, expected " +
                       std::to_string(expected_));
      }
      return op.Finish(0, op.items);
    }
    if (!any) return op.Fail("READDIRPLUS returned no entries before eof");
    Next(op);
  }

 private:
  void Next(Op& op) { op.ReaddirPlus(dir_, op.cookie, op.verifier, maxcount_ / 8, maxcount_); }

  const FileHandle dir_;
  const uint32_t expected_;
  const uint32_t maxcount_;
};

class ListingWorkload : public Workload {
 public:
  explicit ListingWorkload(const WorkloadOptions& options) : options_(options) {}

  std::string OpDescription() const override {
    return "complete READDIRPLUS listing of " + std::to_string(options_.data.listing_entries) +
           " entries";
  }

  Status Setup(RpcConnection& conn, const FileHandle& root) override {
    GEOFS_ASSIGN_OR_RETURN(dir_, LookupSync(conn, root, kListingDirName));
    return Status::Ok();
  }

  std::unique_ptr<ConnectionLoad> ForConnection(int) override {
    return std::make_unique<ListingLoad>(dir_, options_.data.listing_entries,
                                         options_.readdir_maxcount);
  }

 private:
  const WorkloadOptions options_;
  FileHandle dir_;
};

}  // namespace

const std::vector<std::string>& WorkloadNames() {
  static const std::vector<std::string> kNames = {"seq",  "rand4k",      "rand128k", "dataset",
                                                  "meta", "readdirplus", "probe"};
  return kNames;
}

Result<std::unique_ptr<Workload>> MakeWorkload(const std::string& name,
                                               const WorkloadOptions& options) {
  if (options.connections <= 0) return Status::InvalidArgument("connections must be positive");
  if (name == "seq") return std::unique_ptr<Workload>(new ReadWorkload(true, kSeqBlock, options));
  if (name == "rand4k") return std::unique_ptr<Workload>(new ReadWorkload(false, 4 << 10, options));
  if (name == "rand128k") {
    return std::unique_ptr<Workload>(new ReadWorkload(false, 128 << 10, options));
  }
  if (name == "dataset") return std::unique_ptr<Workload>(new DataSetWorkload(options));
  if (name == "meta") return std::unique_ptr<Workload>(new MetaWorkload());
  if (name == "readdirplus") return std::unique_ptr<Workload>(new ListingWorkload(options));
  if (name == "probe") return std::unique_ptr<Workload>(new ProbeWorkload(options));
  return Status::InvalidArgument("unknown workload: " + name);
}

}  // namespace geofs::bench
