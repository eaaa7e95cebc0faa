// geofs-checkpoint-write: writes one file over NFSv3 the way a training job
// writes a checkpoint: CREATE, then back-to-back UNSTABLE WRITEs of
// --block-size with --qd in flight on one connection, then one COMMIT.
// Contents are pseudo-random and distinct per block (incompressible, nothing
// to deduplicate), like a checkpoint of trained weights. Prints the times of
// the write phase and of the COMMIT, as JSON with --json.
//
// A changed write verifier between the WRITE replies and the COMMIT reply
// (the server restarted and may have lost unstable data) is an error: the
// figure would not be of a complete checkpoint.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "libnfs_raw.h"
#include "nfs_url.h"
#include "rpc_connection.h"

namespace geofs::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kCallTimeout = std::chrono::minutes(5);

// splitmix64 over (block, word): cheap, and no two blocks share a chunk.
void FillBlock(uint64_t block, std::vector<char>& buf) {
  uint64_t x = block * 0x9E3779B97F4A7C15ull;
  auto* words = reinterpret_cast<uint64_t*>(buf.data());
  for (size_t i = 0; i < buf.size() / 8; ++i) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    words[i] = z ^ (z >> 31);
  }
}

struct Call {
  bool done = false;
  Status status;
  FileHandle fh;
  char verifier[NFS3_WRITEVERFSIZE] = {};
  uint32_t count = 0;
};

void Finish(Call* call, const char* what, int rpc_status, void* data, int nfs_status) {
  call->done = true;
  if (rpc_status != RPC_STATUS_SUCCESS) {
    call->status = Status::IoError(std::string(what) + ": RPC failed: " +
                                   (data != nullptr ? static_cast<const char*>(data) : "?"));
  } else if (nfs_status != NFS3_OK) {
    call->status =
        Status::IoError(std::string(what) + ": NFS status " + std::to_string(nfs_status));
  }
}

void OnCreate(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<Call*>(private_data);
  const auto* res = static_cast<const CREATE3res*>(data);
  Finish(call, "CREATE", status, data, status == RPC_STATUS_SUCCESS ? res->status : NFS3_OK);
  if (!call->status.ok()) return;
  const post_op_fh3& obj = res->CREATE3res_u.resok.obj;
  if (!obj.handle_follows) {
    call->status = Status::IoError("CREATE returned no handle");
    return;
  }
  auto fh = FileHandle::FromBytes(obj.post_op_fh3_u.handle.data.data_val,
                                  obj.post_op_fh3_u.handle.data.data_len);
  if (fh.ok()) {
    call->fh = *fh;
  } else {
    call->status = fh.status();
  }
}

void OnWrite(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<Call*>(private_data);
  const auto* res = static_cast<const WRITE3res*>(data);
  Finish(call, "WRITE", status, data, status == RPC_STATUS_SUCCESS ? res->status : NFS3_OK);
  if (!call->status.ok()) return;
  call->count = res->WRITE3res_u.resok.count;
  std::memcpy(call->verifier, res->WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
}

void OnCommit(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<Call*>(private_data);
  const auto* res = static_cast<const COMMIT3res*>(data);
  Finish(call, "COMMIT", status, data, status == RPC_STATUS_SUCCESS ? res->status : NFS3_OK);
  if (!call->status.ok()) return;
  std::memcpy(call->verifier, res->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
}

struct Options {
  std::string url;
  std::string name = "checkpoint.bin";
  uint64_t bytes = uint64_t{4} << 30;
  uint32_t block = 1 << 20;
  int qd = 8;
  std::string json_path;
};

struct Report {
  double write_seconds = 0;
  double commit_seconds = 0;
};

// One buffer per slot: libnfs may still hold a call's data until its reply.
struct Slot {
  std::vector<char> buf;
  Call call;
  bool busy = false;
};

Result<Report> Run(const Options& opt) {
  // Declared before the connection, so that they outlive it: destroying a
  // connection completes its calls still in flight (as cancelled), and those
  // callbacks write into these.
  Call create;
  Call commit;
  std::vector<Slot> slots(opt.qd);

  GEOFS_ASSIGN_OR_RETURN(const NfsUrl url, ParseNfsUrl(opt.url));
  GEOFS_ASSIGN_OR_RETURN(const FileHandle root, MountExport(url));
  GEOFS_ASSIGN_OR_RETURN(
      auto conn, RpcConnection::Connect(url, url.nfs_port, NFS_PROGRAM, NFS_V3, kCallTimeout));

  {
    std::string name = opt.name;
    CREATE3args args{};
    args.where.dir = ToNfsFh3(root);
    args.where.name = name.data();
    args.how.mode = UNCHECKED;
    args.how.createhow3_u.obj_attributes.mode.set_it = 1;
    args.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
    args.how.createhow3_u.obj_attributes.size.set_it = 1;  // truncate an earlier run's file
    args.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
    if (rpc_nfs3_create_async(conn->rpc(), OnCreate, &args, &create) != 0) {
      return Status::IoError("CREATE: " + conn->LastError());
    }
    GEOFS_RETURN_IF_ERROR(conn->ServiceUntil([&] { return create.done; }, kCallTimeout));
    GEOFS_RETURN_IF_ERROR(create.status);
  }
  const FileHandle fh = create.fh;

  for (Slot& s : slots) s.buf.resize(opt.block);
  const uint64_t blocks = (opt.bytes + opt.block - 1) / opt.block;
  uint64_t next = 0;
  uint64_t completed = 0;
  bool have_verifier = false;
  char verifier[NFS3_WRITEVERFSIZE] = {};

  const Clock::time_point t0 = Clock::now();
  while (completed < blocks) {
    for (Slot& s : slots) {
      if (s.busy && s.call.done) {
        GEOFS_RETURN_IF_ERROR(s.call.status);
        if (s.call.count != s.buf.size()) {
          return Status::IoError("short WRITE: " + std::to_string(s.call.count) + " bytes");
        }
        if (have_verifier && std::memcmp(verifier, s.call.verifier, sizeof(verifier)) != 0) {
          return Status::IoError("write verifier changed during the run");
        }
        std::memcpy(verifier, s.call.verifier, sizeof(verifier));
        have_verifier = true;
        s.busy = false;
        ++completed;
      }
      if (!s.busy && next < blocks) {
        const uint64_t offset = next * opt.block;
        s.buf.resize(std::min<uint64_t>(opt.block, opt.bytes - offset));
        FillBlock(next, s.buf);
        s.call = Call{};
        WRITE3args args{};
        args.file = ToNfsFh3(fh);
        args.offset = offset;
        args.count = static_cast<count3>(s.buf.size());
        args.stable = UNSTABLE;
        args.data.data_len = static_cast<u_int>(s.buf.size());
        args.data.data_val = s.buf.data();
        if (rpc_nfs3_write_async(conn->rpc(), OnWrite, &args, &s.call) != 0) {
          return Status::IoError("WRITE: " + conn->LastError());
        }
        s.busy = true;
        ++next;
      }
    }
    if (completed < blocks) GEOFS_RETURN_IF_ERROR(conn->Service(1000));
  }
  const Clock::time_point t1 = Clock::now();

  COMMIT3args args{};
  args.file = ToNfsFh3(fh);
  if (rpc_nfs3_commit_async(conn->rpc(), OnCommit, &args, &commit) != 0) {
    return Status::IoError("COMMIT: " + conn->LastError());
  }
  GEOFS_RETURN_IF_ERROR(conn->ServiceUntil([&] { return commit.done; }, kCallTimeout));
  GEOFS_RETURN_IF_ERROR(commit.status);
  if (have_verifier && std::memcmp(verifier, commit.verifier, sizeof(verifier)) != 0) {
    return Status::IoError("COMMIT verifier differs from the WRITEs': data may be lost");
  }
  const Clock::time_point t2 = Clock::now();
  return Report{std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count()};
}

int Main(int argc, char** argv) {
  Options opt;
  CLI::App app{"geofs-checkpoint-write: one file as UNSTABLE WRITEs + COMMIT over NFSv3"};
  app.add_option("--url", opt.url, "nfs://HOST/EXPORT?version=3&nfsport=P&mountport=M")->required();
  app.add_option("--name", opt.name, "File created in the export's root")->capture_default_str();
  app.add_option("--size", opt.bytes, "Bytes to write (e.g. 4GiB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--block-size", opt.block, "Bytes per WRITE")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(4096u, 1u << 20))
      ->capture_default_str();
  app.add_option("--qd", opt.qd, "WRITEs in flight")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--json", opt.json_path, "Write the result as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  if (opt.block % 8 != 0) {
    std::fprintf(stderr, "geofs-checkpoint-write: --block-size must be a multiple of 8\n");
    return 2;
  }

  auto report = Run(opt);
  if (!report.ok()) {
    std::fprintf(stderr, "geofs-checkpoint-write: %s\n", report.status().ToString().c_str());
    return 1;
  }
  const double mib = static_cast<double>(opt.bytes) / (1 << 20);
  std::printf("wrote %.0f MiB: WRITEs %.2f s (%.0f MiB/s), COMMIT %.2f s\n", mib,
              report->write_seconds, mib / report->write_seconds, report->commit_seconds);
  if (!opt.json_path.empty()) {
    std::ofstream out(opt.json_path, std::ios::trunc);
    out << "{\"bytes\": " << opt.bytes << ", \"block_size\": " << opt.block
        << ", \"qd\": " << opt.qd << ", \"write_seconds\": " << report->write_seconds
        << ", \"commit_seconds\": " << report->commit_seconds << "}\n";
  }
  return 0;
}

}  // namespace
}  // namespace geofs::bench

int main(int argc, char** argv) { return geofs::bench::Main(argc, argv); }
