#include "tools/daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#ifndef GEOFS_SPOKED_PATH
#error "GEOFS_SPOKED_PATH must name the geofs-spoked binary"
#endif

namespace geofs::testing {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read
// back, closed). Another process may take it before the daemon binds it;
// tests accept that small race rather than coordinate.
Result<uint16_t> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, "bind 127.0.0.1:0");
  }
  close(fd);
  return static_cast<uint16_t>(ntohs(addr.sin_port));
}

// True if a TCP connection to 127.0.0.1:port is accepted.
bool PortAcceptsConnections(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr = Loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string SpokedPath() {
  const char* env = std::getenv("GEOFS_SPOKED");
  return env != nullptr && *env != '\0' ? env : GEOFS_SPOKED_PATH;
}

Result<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options) {
  if (options.binary.empty()) options.binary = SpokedPath();
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  std::string pattern = (std::filesystem::temp_directory_path() / "geofs-integ-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp");
  d->base_dir_ = pattern;
  d->export_dir_ = d->base_dir_ + "/export";
  d->state_dir_ = d->base_dir_ + "/state";
  d->log_path_ = d->base_dir_ + "/daemon.log";
  // The export root is a typical root-owned 0755 directory, so permission
  // tests can rely on it: only root may create entries in it.
  for (const std::string& dir : {d->export_dir_, d->state_dir_}) {
    if (mkdir(dir.c_str(), 0755) != 0 || chmod(dir.c_str(), 0755) != 0) {
      return Status::FromErrno(errno, dir);
    }
  }

  GEOFS_ASSIGN_OR_RETURN(d->nfs_port_, PickFreePort());
  if (d->options_.shared_port) {
    d->mount_port_ = d->nfs_port_;
  } else {
    GEOFS_ASSIGN_OR_RETURN(d->mount_port_, PickFreePort());
  }
  if (d->options_.portmap) {
    GEOFS_ASSIGN_OR_RETURN(d->portmap_port_, PickFreePort());
  }
  // Ports picked one after another may repeat once the first is closed.
  if (!d->options_.shared_port && d->mount_port_ == d->nfs_port_) {
    return Status::Unavailable("picked the same port twice; retry");
  }
  return d;
}

Daemon::~Daemon() {
  Kill();
  const char* keep = std::getenv("GEOFS_TEST_KEEP");
  if (!base_dir_.empty() && (keep == nullptr || std::string(keep) != "1")) {
    std::error_code ignored;
    std::filesystem::remove_all(base_dir_, ignored);
  }
}

std::vector<uint16_t> Daemon::Ports() const {
  std::vector<uint16_t> ports = {nfs_port_};
  if (mount_port_ != nfs_port_) ports.push_back(mount_port_);
  if (portmap_port_ != 0) ports.push_back(portmap_port_);
  return ports;
}

Status Daemon::Start() {
  if (running()) return Status::Internal("daemon already running");
  if (access(options_.binary.c_str(), X_OK) != 0) {
    return Status::NotFound("no executable geofs-spoked at " + options_.binary);
  }
  std::vector<std::string> args = {options_.binary,
                                   "--export-dir",
                                   export_dir_,
                                   "--listen",
                                   "127.0.0.1",
                                   "--nfs-port",
                                   std::to_string(nfs_port_),
                                   "--mount-port",
                                   std::to_string(mount_port_),
                                   "--state-dir",
                                   state_dir_};
  if (portmap_port_ != 0) {
    args.push_back("--portmap-port");
    args.push_back(std::to_string(portmap_port_));
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Earlier runs' lines stay in the log; only this run's count.
  const size_t log_start = Log().size();
  int log_fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::FromErrno(errno, log_path_);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return Status::FromErrno(errno, "/dev/null");
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec. The daemon must not outlive a
    // crashed test run.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int fork_errno = errno;
  close(log_fd);
  close(null_fd);
  if (pid < 0) return Status::FromErrno(fork_errno, "fork");
  pid_ = pid;
  Status serving = WaitUntilServing(log_start);
  if (!serving.ok()) Kill();
  return serving;
}

Status Daemon::WaitUntilServing(size_t log_start) {
  auto deadline = Clock::now() + options_.timeout;
  while (true) {
    std::string how;
    if (Exited(&how)) {
      return Status::Unavailable("geofs-spoked " + how + " before serving; log:\n" + Log());
    }
    bool all_accept = true;
    for (uint16_t port : Ports()) all_accept = all_accept && PortAcceptsConnections(port);
    if (all_accept && Log().find("listening", log_start) != std::string::npos) return Status::Ok();
    if (Clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    "geofs-spoked did not accept connections on its ports within " +
                        std::to_string(options_.timeout.count()) + " ms; log:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Daemon::Exited(std::string* how) {
  if (!running()) {
    if (how != nullptr) *how = "not running";
    return true;
  }
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  if (how != nullptr) *how = r == pid_ ? DescribeWaitStatus(status) : "lost (waitpid failed)";
  pid_ = -1;
  return true;
}

Status Daemon::Stop() {
  if (!running()) return Status::Internal("daemon not running");
  if (kill(pid_, SIGTERM) != 0) return Status::FromErrno(errno, "kill SIGTERM");
  auto deadline = Clock::now() + options_.timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
      return Status::Internal("geofs-spoked " + DescribeWaitStatus(status) +
                              " after SIGTERM; log:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  return Status(StatusCode::kDeadlineExceeded, "geofs-spoked ignored SIGTERM for " +
                                                   std::to_string(options_.timeout.count()) +
                                                   " ms; log:\n" + Log());
}

void Daemon::Kill() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

Status Daemon::Restart() {
  GEOFS_RETURN_IF_ERROR(Stop());
  return Start();
}

std::string Daemon::Url(uint32_t uid, uint32_t gid) const {
  std::ostringstream url;
  url << "nfs://127.0.0.1/?version=3&nfsport=" << nfs_port_ << "&mountport=" << mount_port_
      << "&autoreconnect=0&uid=" << uid << "&gid=" << gid;
  return url.str();
}

std::string Daemon::Log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Result<uint64_t> Daemon::RssBytes() const {
  if (!running()) return Status::Internal("daemon not running");
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return static_cast<uint64_t>(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
    }
  }
  return Status::NotFound("no VmRSS in /proc/" + std::to_string(pid_) + "/status");
}

}  // namespace geofs::testing
