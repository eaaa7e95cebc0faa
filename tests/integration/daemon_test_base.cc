#include "integration/daemon_test_base.h"

#include <iostream>

namespace geofs::testing {

void DaemonTest::StartDaemonWith(DaemonOptions options) {
  auto created = Daemon::Create(options);
  // Two ports picked in a row can coincide; a second pick practically never.
  if (!created.ok() && created.status().code() == StatusCode::kUnavailable) {
    created = Daemon::Create(options);
  }
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  daemon_ = std::move(created).value();
  Status started = daemon_->Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
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
    std::cerr << "---- geofs-spoked log ----\n" << log << "----\n";
  }
}

}  // namespace geofs::testing
