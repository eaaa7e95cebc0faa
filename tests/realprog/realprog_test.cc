// Real programs (cp -r, diff, sha256sum, coreutils, a PyTorch DataLoader) on
// a geofs export mounted through geofs-nfs-fuse, once per kind of server.
// What the programs wrote is checked again through a separate libnfs client,
// so the bridge cannot vouch for itself, and where the export is not the
// authority (a spoke over a hub) at the authority once the export settled.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "export_server.h"
#include "fuse_mount.h"
#include "hub_process.h"
#include "tools/nfs_client.h"

#ifndef GEOFS_DATALOADER_SCRIPT
#error "GEOFS_DATALOADER_SCRIPT must name tests/realprog/dataloader_check.py"
#endif

namespace geofs::realprog {

void PrintTo(const ExportServerKind& kind, std::ostream* os) { *os << kind.name; }

namespace {

namespace fs = std::filesystem;
using hub::testing::CommandResult;

constexpr size_t kBigFileBytes = 50u << 20;
constexpr char kPython[] = "/usr/bin/python3";
// How long a spoke may take to commit what the tests write at its hub.
constexpr auto kSettleTimeout = std::chrono::seconds(60);

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t word = rng();
    std::memcpy(out.data() + i, &word, std::min<size_t>(8, n - i));
  }
  return out;
}

void WriteLocalFile(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

// A tree like a small data set: 5 x 4 nested directories of 15 files each
// (sizes from empty to a few hundred KiB, some on 4 KiB and 128 KiB edges),
// an empty directory, symlinks to a file and to a directory, and optionally
// one 50 MiB file. Returns the number of regular files.
int MakeTree(const fs::path& root, bool with_big_file) {
  std::mt19937_64 rng(42);
  static constexpr size_t kEdgeSizes[] = {0, 1, 4095, 4096, 4097, 131072, 131073, 300000};
  int files = 0;
  fs::create_directories(root / "empty-dir");
  for (int d = 0; d < 5; ++d) {
    for (int s = 0; s < 4; ++s) {
      const fs::path dir = root / ("d" + std::to_string(d)) / ("s" + std::to_string(s));
      fs::create_directories(dir);
      for (int f = 0; f < 15; ++f) {
        const size_t size = f < 8 ? kEdgeSizes[(d + s + f) % 8] : rng() % 40000;
        WriteLocalFile(dir / ("f" + std::to_string(f) + ".bin"), RandomBytes(rng, size));
        ++files;
      }
    }
  }
  fs::create_symlink("d0/s0/f9.bin", root / "file-link");
  fs::create_directory_symlink("../d0", root / "d1" / "dir-link");
  if (with_big_file) {
    WriteLocalFile(root / "big.bin", RandomBytes(rng, kBigFileBytes));
    ++files;
  }
  return files;
}

std::string ReadLocalFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Runs a shell command line; the result carries stdout, stderr, exit code.
CommandResult Shell(const std::string& script) {
  auto r =
      hub::testing::RunCommand({"/bin/sh", "-c", script}, std::nullopt, std::chrono::minutes(5));
  if (!r.ok()) {
    ADD_FAILURE() << script << ": " << r.status().ToString();
    return {};
  }
  return *r;
}

std::string Quote(const fs::path& path) { return "'" + path.string() + "'"; }

#define EXPECT_SHELL_OK(script)                                                                   \
  do {                                                                                            \
    const CommandResult r_ = Shell(script);                                                       \
    EXPECT_EQ(r_.exit_code, 0) << (script) << "\nstdout:\n" << r_.out << "\nstderr:\n" << r_.err; \
  } while (0)

class RealProgramTest : public ::testing::TestWithParam<ExportServerKind> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(base_.path().empty());
    auto server = GetParam().create();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    started_ = true;
    fs::create_directory(mnt_);
    auto mount = FuseMount::Mount(server_->Url(), mnt_.string());
    ASSERT_TRUE(mount.ok()) << mount.status().ToString() << "\nserver log:\n" << server_->Log();
    mount_ = std::move(*mount);
    auto client = testing::NfsClient::Mount(server_->Url());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    nfs_ = std::move(*client);
  }

  void TearDown() override {
    nfs_.reset();
    if (mount_) {
      Status unmounted = mount_->Unmount();
      EXPECT_TRUE(unmounted.ok()) << unmounted.ToString();
      mount_.reset();
    }
    if (started_) {
      Status stopped = server_->Stop();
      EXPECT_TRUE(stopped.ok()) << stopped.ToString();
    }
  }

  fs::path Base() const { return base_.path(); }

  // A libnfs client of the authority, once what the export acknowledged
  // reached it.
  std::unique_ptr<testing::NfsClient> SettledAuthority() {
    Status settled = server_->WaitSettled(kSettleTimeout);
    EXPECT_TRUE(settled.ok()) << settled.ToString() << "\nserver log:\n" << server_->Log();
    if (!settled.ok()) return nullptr;
    auto client = testing::NfsClient::Mount(server_->AuthorityUrl());
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  hub::testing::TempDir base_;
  const fs::path mnt_ = Base() / "mnt";
  std::unique_ptr<ExportServer> server_;
  bool started_ = false;
  std::unique_ptr<FuseMount> mount_;
  // An independent client of the same export, to check what the programs did.
  std::unique_ptr<testing::NfsClient> nfs_;
};

TEST_P(RealProgramTest, CpTreeInAndOutMatchesDiff) {
  const fs::path src = Base() / "src", out = Base() / "out";
  MakeTree(src, /*with_big_file=*/true);

  EXPECT_SHELL_OK("cp -r " + Quote(src) + " " + Quote(mnt_ / "tree"));
  EXPECT_SHELL_OK("cp -r " + Quote(mnt_ / "tree") + " " + Quote(out));
  EXPECT_SHELL_OK("diff -r --no-dereference " + Quote(src) + " " + Quote(out));

  // The symlinks stayed symlinks on the server.
  EXPECT_TRUE(fs::is_symlink(mnt_ / "tree" / "file-link"));
  EXPECT_EQ(fs::read_symlink(mnt_ / "tree" / "d1" / "dir-link"), "../d0");

  // The authority holds the same tree (for a spoke: the hub, once the
  // spoke's journal is committed), seen through a second bridge.
  auto authority = SettledAuthority();
  ASSERT_TRUE(authority);
  const fs::path authority_mnt = Base() / "authority";
  fs::create_directory(authority_mnt);
  auto authority_mount = FuseMount::Mount(server_->AuthorityUrl(), authority_mnt.string());
  ASSERT_TRUE(authority_mount.ok()) << authority_mount.status().ToString();
  EXPECT_SHELL_OK("diff -r --no-dereference " + Quote(src) + " " + Quote(authority_mnt / "tree"));
  Status unmounted = (*authority_mount)->Unmount();
  EXPECT_TRUE(unmounted.ok()) << unmounted.ToString();

  auto link = authority->Stat("/tree/file-link");
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  EXPECT_TRUE(S_ISLNK(link->nfs_mode));
  // The big file reached the authority byte for byte (read without a bridge).
  auto big = authority->ReadFile("/tree/big.bin");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->size(), kBigFileBytes);
  EXPECT_TRUE(*big == ReadLocalFile(src / "big.bin")) << "big.bin differs on the server";
}

TEST_P(RealProgramTest, Sha256sumChecksMountedFilesAndSeesChanges) {
  const fs::path src = Base() / "src", manifest = Base() / "manifest.sha256";
  const int files = MakeTree(src, /*with_big_file=*/false);
  EXPECT_SHELL_OK("cd " + Quote(src) + " && find . -type f | sort | xargs sha256sum > " +
                  Quote(manifest));
  EXPECT_SHELL_OK("cp -r " + Quote(src) + " " + Quote(mnt_ / "tree"));

  const std::string check =
      "cd " + Quote(mnt_ / "tree") + " && sha256sum --strict -c " + Quote(manifest);
  CommandResult all_good = Shell(check);
  EXPECT_EQ(all_good.exit_code, 0) << all_good.out << all_good.err;
  EXPECT_EQ(std::count(all_good.out.begin(), all_good.out.end(), '\n'), files);

  // Another client changes one file; the mount must show the new bytes.
  Status changed = nfs_->WriteFile("/tree/d2/s1/f3.bin", "changed elsewhere");
  ASSERT_TRUE(changed.ok()) << changed.ToString();
  CommandResult one_bad = Shell(check);
  EXPECT_EQ(one_bad.exit_code, 1) << one_bad.out << one_bad.err;
  EXPECT_NE(one_bad.out.find("./d2/s1/f3.bin: FAILED"), std::string::npos) << one_bad.out;
  EXPECT_EQ(std::count(one_bad.out.begin(), one_bad.out.end(), '\n'), files);
  size_t failed = 0;
  for (size_t at = 0; (at = one_bad.out.find(": FAILED", at)) != std::string::npos; ++at) ++failed;
  EXPECT_EQ(failed, 1u) << one_bad.out;
}

TEST_P(RealProgramTest, CoreutilsChangesReachTheServer) {
  const std::string a = Quote(mnt_ / "a");
  EXPECT_SHELL_OK("mkdir -p " + Quote(mnt_ / "a" / "b" / "c"));
  EXPECT_SHELL_OK("echo hello > " + Quote(mnt_ / "a" / "b" / "c" / "f"));
  EXPECT_SHELL_OK("echo world >> " + Quote(mnt_ / "a" / "b" / "c" / "f"));
  EXPECT_SHELL_OK("mv " + Quote(mnt_ / "a" / "b" / "c" / "f") + " " + Quote(mnt_ / "a" / "g"));
  EXPECT_SHELL_OK("chmod 640 " + Quote(mnt_ / "a" / "g"));
  EXPECT_SHELL_OK("truncate -s 100000 " + Quote(mnt_ / "a" / "g"));
  EXPECT_SHELL_OK("touch -m -d @1600000000 " + Quote(mnt_ / "a" / "g"));
  EXPECT_SHELL_OK("ln -s g " + Quote(mnt_ / "a" / "lnk"));
  EXPECT_SHELL_OK("rm -r " + Quote(mnt_ / "a" / "b"));

  auto authority = SettledAuthority();
  ASSERT_TRUE(authority);
  auto names = authority->ListNames("/a");
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  std::vector<std::string> listed;
  for (const std::string& n : *names) {
    if (n != "." && n != "..") listed.push_back(n);
  }
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, (std::vector<std::string>{"g", "lnk"}));

  auto g = authority->Stat("/a/g");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->nfs_mode & 07777, 0640u);
  EXPECT_EQ(g->nfs_size, 100000u);
  EXPECT_EQ(g->nfs_mtime, 1600000000u);
  struct stat local {};
  ASSERT_EQ(lstat((mnt_ / "a" / "g").c_str(), &local), 0);
  EXPECT_EQ(local.st_ino, g->nfs_ino) << "the bridge reports the NFS fileid as st_ino";

  auto content = authority->ReadFile("/a/g");
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  std::string expected = "hello\nworld\n";
  expected.resize(100000, '\0');
  EXPECT_TRUE(*content == expected);

  char* target = nullptr;
  ASSERT_EQ(nfs_readlink2(authority->ctx(), "/a/lnk", &target), 0) << authority->Error();
  EXPECT_STREQ(target, "g");
  free(target);
}

// What cp wrote and closed survives a server crash. The bridge COMMITs on
// close as the kernel NFS client does; today's servers also keep UNSTABLE
// data durably, so this guards the servers (and a future spoke journal) more
// than the bridge.
TEST_P(RealProgramTest, CopiedFilesSurviveAServerCrash) {
  const fs::path src = Base() / "src";
  fs::create_directory(src);
  std::mt19937_64 rng(3);
  std::vector<std::pair<std::string, std::string>> files;
  for (int i = 0; i < 8; ++i) {
    files.emplace_back("f" + std::to_string(i), RandomBytes(rng, (1 << 20) + i * 4099));
    WriteLocalFile(src / files.back().first, files.back().second);
  }
  EXPECT_SHELL_OK("cp -r " + Quote(src) + " " + Quote(mnt_ / "tree"));
  nfs_.reset();
  Status unmounted = mount_->Unmount();
  ASSERT_TRUE(unmounted.ok()) << unmounted.ToString();
  mount_.reset();

  server_->Kill();
  Status restarted = server_->Start();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  auto client = testing::NfsClient::Mount(server_->Url());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (const auto& [name, data] : files) {
    auto read = (*client)->ReadFile("/tree/" + name);
    ASSERT_TRUE(read.ok()) << name << ": " << read.status().ToString();
    EXPECT_EQ(read->size(), data.size()) << name;
    EXPECT_TRUE(*read == data) << name << " differs after the crash";
  }
  auto authority = SettledAuthority();
  ASSERT_TRUE(authority);
  for (const auto& [name, data] : files) {
    auto read = authority->ReadFile("/tree/" + name);
    ASSERT_TRUE(read.ok()) << name << ": " << read.status().ToString();
    EXPECT_TRUE(*read == data) << name << " differs at the authority after the crash";
  }
}

TEST_P(RealProgramTest, PyTorchDataLoaderReadsEverySampleTwiceWithFourWorkers) {
  const fs::path samples = Base() / "samples", manifest = Base() / "samples.sha256";
  fs::create_directory(samples);
  std::mt19937_64 rng(7);
  constexpr int kSamples = 200;
  for (int i = 0; i < kSamples; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "sample_%03d.bin", i);
    WriteLocalFile(samples / name, RandomBytes(rng, (64 << 10) + rng() % (192 << 10)));
  }
  EXPECT_SHELL_OK("cd " + Quote(samples) + " && sha256sum *.bin > " + Quote(manifest));
  EXPECT_SHELL_OK("cp -r " + Quote(samples) + " " + Quote(mnt_ / "samples"));

  ASSERT_EQ(access(kPython, X_OK), 0) << kPython << " missing: scripts/install-deps.sh";
  auto run = hub::testing::RunCommand(
      {kPython, GEOFS_DATALOADER_SCRIPT, "--root", (mnt_ / "samples").string(), "--manifest",
       manifest.string(), "--workers", "4", "--epochs", "2"},
      std::nullopt, std::chrono::minutes(5));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 0) << "stdout:\n" << run->out << "\nstderr:\n" << run->err;
  EXPECT_NE(run->out.find("OK: 2 epochs x 200 samples verified with 4 workers"), std::string::npos)
      << run->out;
  std::cout << "[" << GetParam().name << "] " << run->out;
}

INSTANTIATE_TEST_SUITE_P(Servers, RealProgramTest, ::testing::ValuesIn(ExportServerKinds()),
                         [](const ::testing::TestParamInfo<ExportServerKind>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace geofs::realprog
