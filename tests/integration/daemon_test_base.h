// The gtest side of the integration harness: a fixture that runs one
// geofs-spoked per test and connects libnfs clients to it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
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

class DaemonTest : public ::testing::Test {
 protected:
  // Starts geofs-spoked with `options`; fails the test fatally (with the
  // daemon's log) if it does not come up. Call through ASSERT_NO_FATAL_FAILURE.
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

  // Path of `name` inside the export directory on the local disk.
  std::string Local(const std::string& name) const { return daemon_->export_dir() + "/" + name; }

  // Stops the daemon with SIGTERM and expects a clean exit (status 0); on any
  // test failure prints the daemon's log.
  void TearDown() override;

  std::unique_ptr<Daemon> daemon_;
};

}  // namespace geofs::testing
