#include "spoke_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <regex>
#include <sstream>
#include <thread>

namespace geofs::spoke::testing {

Result<std::unique_ptr<SpokeProcess>> SpokeProcess::Create(SpokeProcessOptions options) {
  std::unique_ptr<SpokeProcess> p(new SpokeProcess(std::move(options)));
  p->cache_dir_ =
      p->options_.cache_dir.empty() ? p->base_.path() + "/cache" : p->options_.cache_dir;
  return p;
}

Status SpokeProcess::Start() {
  if (child_) log_ += child_->Stderr();
  hub::testing::Child::Options o;
  o.argv = {GEOFS_SPOKED_PATH,
            "--hub",
            options_.hub_address,
            "--portal",
            options_.portal,
            "--cache-dir",
            cache_dir_,
            "--listen",
            "127.0.0.1",
            "--nfs-port",
            "0",
            "--mount-port",
            "0",
            "--metrics-port",
            "0",
            "--hub-connect-timeout",
            "10"};
  o.argv.insert(o.argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  static int run = 0;
  o.stdout_path = base_.path() + "/out." + std::to_string(++run);
  o.stderr_path = base_.path() + "/err." + std::to_string(run);
  GEOFS_ASSIGN_OR_RETURN(child_, hub::testing::Child::Start(o));
  static const std::regex kListening(R"(listening on \S+ nfs=(\d+) mount=(\d+))");
  static const std::regex kMetrics(R"(metrics on [^:]+:(\d+))");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string log = child_->Stderr();
    std::smatch m, mm;
    if (std::regex_search(log, m, kListening) && std::regex_search(log, mm, kMetrics)) {
      nfs_port_ = static_cast<uint16_t>(std::stoi(m[1]));
      mount_port_ = static_cast<uint16_t>(std::stoi(m[2]));
      metrics_port_ = static_cast<uint16_t>(std::stoi(mm[1]));
      return Status::Ok();
    }
    int status;
    if (child_->Exited(&status)) {
      return Status::Internal("geofs-spoked exited with " + std::to_string(status) + ":\n" + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  child_->Kill();
  return Status(StatusCode::kDeadlineExceeded, "geofs-spoked did not start:\n" + child_->Stderr());
}

Status SpokeProcess::Stop() {
  if (!child_ || !child_->running()) return Status::Ok();
  ::kill(child_->pid(), SIGTERM);
  GEOFS_ASSIGN_OR_RETURN(int status, child_->Wait(std::chrono::seconds(30)));
  if (status != 0) {
    return Status::Internal("geofs-spoked exited with " + std::to_string(status) + ":\n" + Log());
  }
  return Status::Ok();
}

void SpokeProcess::Kill() {
  if (child_) child_->Kill();
}

void SpokeProcess::Signal(int sig) {
  if (child_ && child_->running()) ::kill(child_->pid(), sig);
}

bool SpokeProcess::Alive() { return child_ && child_->running() && !child_->Exited(); }

std::string SpokeProcess::NfsUrl(uint32_t uid, uint32_t gid) const {
  return "nfs://127.0.0.1" + options_.portal + "?version=3&nfsport=" + std::to_string(nfs_port_) +
         "&mountport=" + std::to_string(mount_port_) +
         "&autoreconnect=0&uid=" + std::to_string(uid) + "&gid=" + std::to_string(gid);
}

std::string SpokeProcess::Log() const { return log_ + (child_ ? child_->Stderr() : ""); }

Result<std::map<std::string, double>> SpokeProcess::Metrics() const {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(metrics_port_);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return Status::Unavailable("metrics endpoint");
  }
  std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return Status::IoError("metrics request");
  }
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (response.rfind("HTTP/1.0 200", 0) != 0) return Status::IoError("metrics: " + response);
  std::map<std::string, double> out;
  std::istringstream lines(response.substr(response.find("\r\n\r\n") + 4));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t brace = line.find('{');
    size_t space = line.rfind(' ');
    if (brace == std::string::npos || space == std::string::npos) continue;
    out[line.substr(0, brace)] = std::stod(line.substr(space + 1));
  }
  return out;
}

}  // namespace geofs::spoke::testing
