// S3rverProcess: a private s3rver (the npm S3 emulator) on a free loopback
// port with one bucket, for tests and benchmarks of the S3 object store.
//
// The binary is $GEOFS_S3RVER if set, else the path CMake compiled in (where
// scripts/s3rver.sh installs it). The server's data lives in a fresh temp
// directory; the process is killed and the directory removed by the
// destructor, and the kernel kills it if the test process dies first.
// Reports through Status (no gtest), so non-test tools can use it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "geofs/status.h"

namespace geofs::objtest {

class S3rverProcess {
 public:
  // s3rver's fixed credentials.
  static constexpr const char* kAccessKey = "S3RVER";
  static constexpr const char* kSecretKey = "S3RVER";

  // Starts s3rver with `bucket` created, and waits until it answers.
  static Result<std::unique_ptr<S3rverProcess>> Start(const std::string& bucket);
  ~S3rverProcess();
  S3rverProcess(const S3rverProcess&) = delete;
  S3rverProcess& operator=(const S3rverProcess&) = delete;

  // Where the binary is looked for.
  static std::string BinaryPath();

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const;
  const std::string& bucket() const { return bucket_; }

 private:
  S3rverProcess(pid_t pid, uint16_t port, std::string bucket, std::string data_dir)
      : pid_(pid), port_(port), bucket_(std::move(bucket)), data_dir_(std::move(data_dir)) {}

  pid_t pid_;
  uint16_t port_;
  std::string bucket_;
  std::string data_dir_;
};

}  // namespace geofs::objtest
