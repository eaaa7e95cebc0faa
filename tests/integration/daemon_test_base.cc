#include "integration/daemon_test_base.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <sstream>

namespace geofs::testing {

void PrintTo(ServerKind kind, std::ostream* os) { *os << ServerKindName(kind); }

void DaemonTest::StartDaemonWith(DaemonOptions options) {
  options.kind = server_kind();
  // Ports are picked free, closed, then bound by the daemon: two picks in a
  // row can coincide, and a test running in parallel can bind one in
  // between. Both show as kUnavailable / "Address already in use"; a fresh
  // daemon on fresh ports practically never collides twice.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    auto created = Daemon::Create(options);
    if (!created.ok() && created.status().code() == StatusCode::kUnavailable &&
        attempt < kAttempts) {
      continue;
    }
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    daemon_ = std::move(created).value();
    Status started = daemon_->Start();
    if (!started.ok() && attempt < kAttempts &&
        started.ToString().find("Address already in use") != std::string::npos) {
      continue;
    }
    ASSERT_TRUE(started.ok()) << started.ToString();
    return;
  }
}

std::unique_ptr<NfsClient> DaemonTest::Mount(uint32_t uid, uint32_t gid) {
  auto client = NfsClient::Mount(daemon_->Url(uid, gid));
  if (!client.ok()) {
    ADD_FAILURE() << "mount as uid " << uid << ": " << client.status().ToString();
    return nullptr;
  }
  return std::move(client).value();
}

RawOptions DaemonTest::RawOptionsFor(uint32_t uid, uint32_t gid) const {
  RawOptions options;
  options.nfs_port = daemon_->nfs_port();
  options.mount_port = daemon_->mount_port();
  options.uid = uid;
  options.gid = gid;
  options.export_path = daemon_->export_path();
  return options;
}

std::unique_ptr<RawNfs> DaemonTest::Raw(uint32_t uid, uint32_t gid) {
  auto raw = RawNfs::Connect(RawOptionsFor(uid, gid));
  if (!raw.ok()) {
    ADD_FAILURE() << "raw connect as uid " << uid << ": " << raw.status().ToString();
    return nullptr;
  }
  return std::move(raw).value();
}

void DaemonTest::Publish() {
  Status published = daemon_->Publish();
  ASSERT_TRUE(published.ok()) << published.ToString();
}

Result<std::unique_ptr<NfsClient>> DaemonTest::HubView() const {
  GEOFS_RETURN_IF_ERROR(daemon_->WaitForWriteBack());
  return NfsClient::Mount(daemon_->HubUrl(0, 0));
}

Result<ServerStat> DaemonTest::ServerLstat(const std::string& name) {
  ServerStat out;
  if (hub_backed()) {
    GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<NfsClient> view, HubView());
    GEOFS_ASSIGN_OR_RETURN(nfs_stat_64 st, view->Stat(daemon_->HubPath(name)));
    out.mode = static_cast<uint32_t>(st.nfs_mode);
    out.uid = static_cast<uint32_t>(st.nfs_uid);
    out.gid = static_cast<uint32_t>(st.nfs_gid);
    out.size = st.nfs_size;
    out.nlink = st.nfs_nlink;
    out.ino = st.nfs_ino;
    out.mtime_sec = static_cast<int64_t>(st.nfs_mtime);
    out.mtime_nsec = static_cast<int64_t>(st.nfs_mtime_nsec);
    return out;
  }
  struct stat st;
  if (lstat(Local(name).c_str(), &st) != 0) return Status::FromErrno(errno, Local(name));
  out.mode = st.st_mode;
  out.uid = st.st_uid;
  out.gid = st.st_gid;
  out.size = static_cast<uint64_t>(st.st_size);
  out.nlink = st.st_nlink;
  out.ino = st.st_ino;
  out.mtime_sec = st.st_mtim.tv_sec;
  out.mtime_nsec = st.st_mtim.tv_nsec;
  return out;
}

Result<std::string> DaemonTest::ServerRead(const std::string& name) {
  if (hub_backed()) {
    GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<NfsClient> view, HubView());
    return view->ReadFile(daemon_->HubPath(name));
  }
  std::ifstream in(Local(name), std::ios::binary);
  if (!in) return Status::FromErrno(errno, Local(name));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string DaemonTest::ServerContent(const std::string& name) {
  Result<std::string> content = ServerRead(name);
  return content.ok() ? *content : "<error: " + content.status().ToString() + ">";
}

Result<std::string> DaemonTest::ServerReadlink(const std::string& name) {
  char target[4096] = {};
  if (hub_backed()) {
    GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<NfsClient> view, HubView());
    const std::string path = daemon_->HubPath(name);
    int rc = nfs_readlink(view->ctx(), path.c_str(), target, sizeof(target) - 1);
    if (rc < 0) return Status::FromErrno(-rc, "readlink " + path + ": " + view->Error());
    return std::string(target);
  }
  ssize_t n = readlink(Local(name).c_str(), target, sizeof(target) - 1);
  if (n < 0) return Status::FromErrno(errno, Local(name));
  return std::string(target, static_cast<size_t>(n));
}

std::string DaemonTest::StorageDir() const {
  return hub_backed() ? daemon_->hub_data_dir() : daemon_->export_dir();
}

void DaemonTest::TearDown() {
  if (daemon_ == nullptr) return;
  if (daemon_->running()) {
    Status stopped = daemon_->Stop();
    EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  }
  if (HasFailure()) {
    constexpr size_t kTail = 16 << 10;
    std::string log = daemon_->Log();
    if (log.size() > kTail) log = "...\n" + log.substr(log.size() - kTail);
    std::cerr << "---- " << ServerKindName(server_kind()) << " log ----\n"
              << log << "----\n";
  }
}

}  // namespace geofs::testing
