// The gtest side of the integration harness: fixtures that run one server
// under test per test (geofs-spoked over a directory, geofs-hubd, or
// geofs-spoked over a geofs-hubd) and connect libnfs clients to it. ServerTest suites run once per server:
// declare them with TEST_P and GEOFS_INSTANTIATE_FOR_EACH_SERVER(Suite).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "geofs/status.h"
#include "tools/daemon.h"
#include "tools/nfs_client.h"
#include "tools/raw_nfs.h"

namespace geofs::testing {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

}  // namespace geofs::testing

#define GEOFS_ASSERT_OK(expr)                                                        \
  do {                                                                               \
    const auto& geofs_ok_ = (expr);                                                  \
    ASSERT_TRUE(geofs_ok_.ok()) << ::geofs::testing::StatusOf(geofs_ok_).ToString(); \
  } while (0)

#define GEOFS_EXPECT_OK(expr)                                                        \
  do {                                                                               \
    const auto& geofs_ok_ = (expr);                                                  \
    EXPECT_TRUE(geofs_ok_.ok()) << ::geofs::testing::StatusOf(geofs_ok_).ToString(); \
  } while (0)

// `lhs = value of expr` (a Result), or fail the test fatally.
#define GEOFS_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  GEOFS_ASSERT_OK_AND_ASSIGN_IMPL_(GEOFS_CONCAT_(geofs_assign_, __LINE__), lhs, expr)
#define GEOFS_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();      \
  lhs = std::move(tmp).value()

// Expects an nfsstat3 (compares by name so failures read well).
#define EXPECT_NFS_STATUS(expected, actual) \
  EXPECT_EQ(::geofs::testing::NfsStatName(expected), ::geofs::testing::NfsStatName(actual))
#define ASSERT_NFS_STATUS(expected, actual) \
  ASSERT_EQ(::geofs::testing::NfsStatName(expected), ::geofs::testing::NfsStatName(actual))

namespace geofs::testing {

// What the server itself holds for one object, seen without going through
// the client under test: lstat() of the export directory for a spoke, a
// separate uid-0 NFS mount of the hub's export for a hub (whose namespace
// lives in RocksDB; that mount is subject to the export's squash policy like
// any client) and for a spoke over a hub (the hub is the authority: what the
// spoke acknowledged must be there once its write-back has drained).
struct ServerStat {
  uint32_t mode = 0;  // type and permission bits (S_IFMT | 07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t nlink = 0;
  uint64_t ino = 0;
  int64_t mtime_sec = 0;
  int64_t mtime_nsec = 0;
};

class DaemonTest : public ::testing::Test {
 protected:
  // The server StartDaemon() runs; ServerTest takes it from the parameter.
  virtual ServerKind server_kind() const { return ServerKind::kSpoke; }
  bool hub() const { return server_kind() == ServerKind::kHub; }
  bool spoke_over_hub() const { return server_kind() == ServerKind::kSpokeOverHub; }
  // Whether the data lives in a hub's namespace (kHub, kSpokeOverHub).
  bool hub_backed() const { return hub() || spoke_over_hub(); }

  // Starts the server with `options` (options.kind is set to server_kind());
  // fails the test fatally (with the daemon's log) if it does not come up.
  // Call through ASSERT_NO_FATAL_FAILURE.
  void StartDaemonWith(DaemonOptions options);
  // The same with default options plus `extra_args` (e.g. {"--read-only"}).
  void StartDaemon(std::vector<std::string> extra_args = {}) {
    DaemonOptions options;
    options.extra_args = std::move(extra_args);
    StartDaemonWith(std::move(options));
  }

  // A libnfs client mounted with AUTH_SYS uid/gid; null (and a test
  // failure) if the mount fails.
  std::unique_ptr<NfsClient> Mount(uint32_t uid = 0, uint32_t gid = 0);
  // A raw NFS connection with AUTH_SYS uid/gid; null (and a test failure)
  // if it cannot connect.
  std::unique_ptr<RawNfs> Raw(uint32_t uid = 0, uint32_t gid = 0);
  RawOptions RawOptionsFor(uint32_t uid, uint32_t gid) const;

  // Path of `name` inside the export directory on the local disk. For the
  // hub kinds this is a staging tree: call Publish() to make what is there
  // visible.
  std::string Local(const std::string& name) const { return daemon_->export_dir() + "/" + name; }
  // Makes files made under Local() visible through the export (a no-op for a
  // spoke; geofsctl import into the hub for the hub kinds). Fails the test
  // fatally on error.
  void Publish();

  // The server's own view of `name` (relative to the export root), for
  // checking that the server really did what a client was told it did.
  // kNotFound if there is no such object. For a spoke over a hub these wait
  // until the spoke's journal has drained to the hub, then look at the hub.
  Result<ServerStat> ServerLstat(const std::string& name);
  Result<std::string> ServerRead(const std::string& name);
  // ServerRead's content, or "<error: ...>" so that a comparison fails
  // readably.
  std::string ServerContent(const std::string& name);
  // Whether ServerLstat finds `name`.
  bool ServerHas(const std::string& name) { return ServerLstat(name).ok(); }
  Result<std::string> ServerReadlink(const std::string& name);
  // A directory on the file system that holds the server's data, whose
  // statvfs() FSSTAT reports.
  std::string StorageDir() const;

  // Stops the daemon with SIGTERM and expects a clean exit (status 0); on any
  // test failure prints the daemon's log.
  void TearDown() override;

  std::unique_ptr<Daemon> daemon_;

 private:
  // A fresh root mount of the hub's export, once the spoke (if any) has
  // written back everything: the view for ServerLstat and friends.
  Result<std::unique_ptr<NfsClient>> HubView() const;
};

// A DaemonTest run once per server kind.
class ServerTest : public DaemonTest, public ::testing::WithParamInterface<ServerKind> {
 protected:
  ServerKind server_kind() const override { return GetParam(); }
};

// Prints "Spoke" / "Hub" / "SpokeOverHub": gtest shows it as GetParam(), and
// CTest names each test after it (Suite.Test/Spoke, Suite.Test/Hub, ...).
void PrintTo(ServerKind kind, std::ostream* os);

}  // namespace geofs::testing

// Instantiates the TEST_P tests of `suite` (a ServerTest) once per server.
#define GEOFS_INSTANTIATE_FOR_EACH_SERVER(suite)                                               \
  INSTANTIATE_TEST_SUITE_P(, suite,                                                            \
                           ::testing::Values(::geofs::testing::ServerKind::kSpoke,             \
                                             ::geofs::testing::ServerKind::kHub,               \
                                             ::geofs::testing::ServerKind::kSpokeOverHub))
