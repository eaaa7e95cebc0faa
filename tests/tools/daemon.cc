#include "tools/daemon.h"
#include "tools/free_port.h"
#include "tools/spoke_metrics.h"

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

#if !defined(GEOFS_SPOKED_PATH) || !defined(GEOFS_HUBD_PATH) || !defined(GEOFS_GEOFSCTL_PATH)
#error "GEOFS_SPOKED_PATH, GEOFS_HUBD_PATH and GEOFS_GEOFSCTL_PATH must name the binaries"
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

// True if a TCP connection to 127.0.0.1:port is accepted.
bool PortAcceptsConnections(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr = Loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

std::string EnvOr(const char* name, const char* fallback) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' ? env : fallback;
}

// The port in "listening grpc=HOST:PORT" at or after `from`; 0 if absent or
// not yet written out whole.
uint16_t GrpcPortIn(const std::string& log, size_t from) {
  static constexpr std::string_view kKey = "listening grpc=";
  size_t at = log.find(kKey, from);
  if (at == std::string::npos) return 0;
  size_t end = log.find_first_of(" \n", at + kKey.size());
  if (end == std::string::npos) return 0;
  std::string address = log.substr(at + kKey.size(), end - at - kKey.size());
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return 0;
  return static_cast<uint16_t>(std::strtoul(address.c_str() + colon + 1, nullptr, 10));
}

// Runs argv to completion with stdout and stderr appended to `log_path`;
// OK if it exits with status 0 within `timeout`.
Status RunToCompletion(const std::vector<std::string>& args, const std::string& log_path,
                       std::chrono::milliseconds timeout) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::FromErrno(errno, log_path);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int fork_errno = errno;
  close(log_fd);
  if (pid < 0) return Status::FromErrno(fork_errno, "fork");
  auto deadline = Clock::now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return Status::FromErrno(errno, "waitpid");
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Status(StatusCode::kDeadlineExceeded, args[0] + " did not finish in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  return Status::Internal(args[0] + " " + DescribeWaitStatus(status));
}


// The port in "metrics on HOST:PORT" at or after `from`; 0 if absent.
uint16_t MetricsPortIn(const std::string& log, size_t from) {
  static constexpr std::string_view kKey = "metrics on ";
  size_t at = log.find(kKey, from);
  if (at == std::string::npos) return 0;
  size_t end = log.find_first_of(" \n", at + kKey.size());
  if (end == std::string::npos) return 0;
  size_t colon = log.rfind(':', end);
  if (colon == std::string::npos || colon < at) return 0;
  return static_cast<uint16_t>(std::strtoul(log.c_str() + colon + 1, nullptr, 10));
}

// The hub directory a spoke over a hub serves (also its export path).
constexpr char kPortal[] = "/datasets";
}  // namespace

std::string_view ServerKindName(ServerKind kind) {
  switch (kind) {
    case ServerKind::kSpoke:
      return "Spoke";
    case ServerKind::kHub:
      return "Hub";
    case ServerKind::kSpokeOverHub:
      return "SpokeOverHub";
  }
  return "?";
}

std::string SpokedPath() { return EnvOr("GEOFS_SPOKED", GEOFS_SPOKED_PATH); }
std::string HubdPath() { return EnvOr("GEOFS_HUBD", GEOFS_HUBD_PATH); }
std::string GeofsctlPath() { return EnvOr("GEOFS_GEOFSCTL", GEOFS_GEOFSCTL_PATH); }

Result<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options) {
  if (options.kind == ServerKind::kHub && options.portmap) {
    return Status::InvalidArgument("geofs-hubd serves no PORTMAP");
  }
  if (options.binary.empty()) {
    options.binary = options.kind == ServerKind::kHub ? HubdPath() : SpokedPath();
  }
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  std::string pattern = (std::filesystem::temp_directory_path() / "geofs-integ-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp");
  d->base_dir_ = pattern;
  d->export_dir_ = d->base_dir_ + "/export";
  d->front_.log_path = d->base_dir_ + "/daemon.log";
  std::vector<std::string> dirs = {d->export_dir_};
  switch (d->options_.kind) {
    case ServerKind::kSpoke:
      d->front_.name = "geofs-spoked";
      d->state_dir_ = d->base_dir_ + "/state";
      dirs.push_back(d->state_dir_);
      break;
    case ServerKind::kHub:
      d->front_.name = "geofs-hubd";
      d->state_dir_ = d->hub_data_dir_ = d->base_dir_ + "/state";
      dirs.push_back(d->state_dir_);
      break;
    case ServerKind::kSpokeOverHub:
      d->front_.name = "geofs-spoked";
      d->hub_.name = "geofs-hubd";
      d->hub_.log_path = d->base_dir_ + "/hub.log";
      d->export_path_ = kPortal;
      d->hub_data_dir_ = d->base_dir_ + "/hub";
      d->cache_dir_ = d->base_dir_ + "/cache";
      // The spoke makes it; the handle key lives there (src/spoke/hub_spoke.h).
      d->state_dir_ = d->cache_dir_ + "/state";
      dirs.push_back(d->hub_data_dir_);
      dirs.push_back(d->cache_dir_);
      break;
  }
  // The export root is a typical root-owned 0755 directory, so permission
  // tests can rely on it: only root may create entries in it. (Under a spoke
  // over a hub, the first import gives the hub's /datasets the same.)
  for (const std::string& dir : dirs) {
    if (mkdir(dir.c_str(), 0755) != 0 || chmod(dir.c_str(), 0755) != 0) {
      return Status::FromErrno(errno, dir);
    }
  }

  std::vector<uint16_t*> ports = {&d->nfs_port_};
  if (!d->options_.shared_port) ports.push_back(&d->mount_port_);
  if (d->options_.portmap) ports.push_back(&d->portmap_port_);
  if (d->has_hub_process()) ports.push_back(&d->hub_nfs_port_);
  for (uint16_t* port : ports) {
    GEOFS_ASSIGN_OR_RETURN(*port, PickFreePort());
  }
  if (d->options_.shared_port) d->mount_port_ = d->nfs_port_;
  // Ports picked one after another may repeat once the first is closed.
  for (size_t i = 0; i < ports.size(); ++i) {
    for (size_t j = i + 1; j < ports.size(); ++j) {
      if (*ports[i] == *ports[j]) return Status::Unavailable("picked the same port twice; retry");
    }
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

std::vector<std::string> Daemon::HubArguments(uint16_t nfs_port, uint16_t mount_port,
                                              const std::vector<std::string>& extra) const {
  std::vector<std::string> args = {HubdPath(), "--data-dir", hub_data_dir_, "--listen",
                                   "127.0.0.1:0", "--nfs-port", std::to_string(nfs_port)};
  if (options_.kind == ServerKind::kHub) args[0] = options_.binary;
  // A restarted hub holds changes for up to 1.5 lease TTLs (docs/coherence.md);
  // keep that short for the spoke's sake.
  if (options_.kind == ServerKind::kSpokeOverHub) args.insert(args.end(), {"--lease-ttl", "2"});
  // Without --mount-port the hub serves MOUNT on the NFS port.
  if (mount_port != nfs_port) {
    args.insert(args.end(), {"--mount-port", std::to_string(mount_port)});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> Daemon::FrontEndArguments() const {
  if (options_.kind == ServerKind::kHub) {
    return HubArguments(nfs_port_, mount_port_, options_.extra_args);
  }
  std::vector<std::string> args = {options_.binary};
  if (options_.kind == ServerKind::kSpoke) {
    args.insert(args.end(), {"--export-dir", export_dir_, "--state-dir", state_dir_});
  } else {
    args.insert(args.end(), {"--hub", grpc_address_, "--portal", kPortal, "--cache-dir",
                             cache_dir_, "--metrics-port", "0"});
  }
  args.insert(args.end(), {"--listen", "127.0.0.1", "--nfs-port", std::to_string(nfs_port_),
                           "--mount-port", std::to_string(mount_port_)});
  if (portmap_port_ != 0) {
    args.insert(args.end(), {"--portmap-port", std::to_string(portmap_port_)});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  return args;
}

Status Daemon::Spawn(const std::vector<std::string>& args, Process& p) {
  if (access(args[0].c_str(), X_OK) != 0) {
    return Status::NotFound("no executable " + p.name + " at " + args[0]);
  }
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  int log_fd = open(p.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::FromErrno(errno, p.log_path);
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
  p.pid = pid;
  return Status::Ok();
}

Status Daemon::StartHub() {
  const size_t log_start = ProcessLog(hub_).size();
  GEOFS_RETURN_IF_ERROR(Spawn(HubArguments(hub_nfs_port_, hub_nfs_port_, {}), hub_));
  Status serving = WaitUntilServing(hub_, {hub_nfs_port_}, /*is_hub=*/true, log_start);
  if (!serving.ok()) {
    KillProcess(hub_);
    return serving;
  }
  if (!portal_made_) {
    // The portal must exist before the spoke resolves it; importing the
    // still empty staging tree makes it, root-owned 0755.
    GEOFS_RETURN_IF_ERROR(Publish());
    portal_made_ = true;
  }
  return Status::Ok();
}

Status Daemon::Start() {
  if (running()) return Status::Internal("daemon already running");
  if (has_hub_process() && hub_.pid <= 0) GEOFS_RETURN_IF_ERROR(StartHub());
  // Earlier runs' lines stay in the log; only this run's count.
  const size_t log_start = ProcessLog(front_).size();
  GEOFS_RETURN_IF_ERROR(Spawn(FrontEndArguments(), front_));
  Status serving =
      WaitUntilServing(front_, Ports(), options_.kind == ServerKind::kHub, log_start);
  if (!serving.ok()) {
    KillProcess(front_);
    return serving;
  }
  if (has_hub_process()) {
    metrics_port_ = MetricsPortIn(ProcessLog(front_), log_start);
    if (metrics_port_ == 0) return Status::Internal("the spoke logged no metrics port:\n" + Log());
  }
  return Status::Ok();
}

Status Daemon::WaitUntilServing(Process& p, const std::vector<uint16_t>& ports, bool is_hub,
                                size_t log_start) {
  auto deadline = Clock::now() + options_.timeout;
  while (true) {
    std::string how;
    if (ProcessExited(p, &how)) {
      return Status::Unavailable(p.name + " " + how + " before serving; log:\n" + Log());
    }
    bool all_accept = true;
    for (uint16_t port : ports) all_accept = all_accept && PortAcceptsConnections(port);
    const std::string log = ProcessLog(p);
    if (all_accept && is_hub) {
      // The hub's last start-up line names its gRPC port.
      if (uint16_t grpc_port = GrpcPortIn(log, log_start); grpc_port != 0) {
        grpc_address_ = "127.0.0.1:" + std::to_string(grpc_port);
        return Status::Ok();
      }
    } else if (all_accept && log.find("listening", log_start) != std::string::npos) {
      return Status::Ok();
    }
    if (Clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    p.name + " did not accept connections on its ports within " +
                        std::to_string(options_.timeout.count()) + " ms; log:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Daemon::ProcessExited(Process& p, std::string* how) {
  if (p.pid <= 0) {
    if (how != nullptr) *how = "not running";
    return true;
  }
  int status = 0;
  pid_t r = waitpid(p.pid, &status, WNOHANG);
  if (r == 0) return false;
  if (how != nullptr) *how = r == p.pid ? DescribeWaitStatus(status) : "lost (waitpid failed)";
  p.pid = -1;
  return true;
}

bool Daemon::Exited(std::string* how) {
  if (has_hub_process() && hub_.pid > 0 && ProcessExited(hub_, how)) {
    if (how != nullptr) *how = "hub " + *how;
    return true;
  }
  return ProcessExited(front_, how);
}

Status Daemon::StopProcess(Process& p) {
  if (p.pid <= 0) return Status::Internal(p.name + " not running");
  if (kill(p.pid, SIGTERM) != 0) return Status::FromErrno(errno, "kill SIGTERM");
  auto deadline = Clock::now() + options_.timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) {
      p.pid = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
      return Status::Internal(p.name + " " + DescribeWaitStatus(status) +
                              " after SIGTERM; log:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  KillProcess(p);
  return Status(StatusCode::kDeadlineExceeded, p.name + " ignored SIGTERM for " +
                                                   std::to_string(options_.timeout.count()) +
                                                   " ms; log:\n" + Log());
}

void Daemon::KillProcess(Process& p) {
  if (p.pid <= 0) return;
  kill(p.pid, SIGKILL);
  int status = 0;
  while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
  }
  p.pid = -1;
}

Status Daemon::Stop() {
  if (!running()) return Status::Internal("daemon not running");
  Status front = StopProcess(front_);
  if (!has_hub_process() || hub_.pid <= 0) return front;
  Status hub = StopProcess(hub_);
  return front.ok() ? hub : front;
}

void Daemon::Kill() {
  KillProcess(front_);
  KillProcess(hub_);
}

Status Daemon::StopFrontEnd() {
  if (!running()) return Status::Internal("daemon not running");
  return has_hub_process() ? StopProcess(front_) : Stop();
}

void Daemon::KillFrontEnd() { KillProcess(front_); }

Status Daemon::Restart() {
  GEOFS_RETURN_IF_ERROR(Stop());
  return Start();
}

Status Daemon::Publish() {
  if (options_.kind == ServerKind::kSpoke) return Status::Ok();
  // Many workers: the trees tests publish are many small files, each bounded
  // by the hub's synced commits rather than by bytes.
  return Ctl({"import", "--keep-extraneous", "--workers", "32", export_dir_, HubPath("")})
      .status();
}

Result<std::string> Daemon::Ctl(const std::vector<std::string>& args) {
  if (options_.kind == ServerKind::kSpoke) return Status::InvalidArgument("geofsctl needs a hub");
  if ((has_hub_process() ? hub_.pid : front_.pid) <= 0) return Status::Internal("hub not running");
  std::vector<std::string> argv = {GeofsctlPath(), "--hub", grpc_address_};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string ctl_log = base_dir_ + "/geofsctl.log";
  std::error_code ignored;
  std::filesystem::remove(ctl_log, ignored);
  Status ran = RunToCompletion(argv, ctl_log, std::chrono::minutes(2));
  std::ifstream in(ctl_log, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  if (!ran.ok()) return Status(ran.code(), std::string(ran.message()) + "; output:\n" + out.str());
  return out.str();
}

Status Daemon::WaitForWriteBack(std::chrono::milliseconds stall_timeout) {
  if (!has_hub_process()) return Status::Ok();
  if (!running()) return Status::Internal("spoke not running");
  // A large backlog drains at the machine's speed: give up only when it
  // stops shrinking, not after a fixed time.
  auto deadline = Clock::now() + stall_timeout;
  double least = -1;
  while (true) {
    GEOFS_ASSIGN_OR_RETURN(auto metrics, FetchSpokeMetrics(metrics_port_));
    auto it = metrics.find("geofs_spoke_journal_bytes");
    if (it == metrics.end()) return Status::NotFound("no metric geofs_spoke_journal_bytes");
    const double pending = it->second;
    if (pending == 0) return Status::Ok();
    if (least < 0 || pending < least) {
      least = pending;
      deadline = Clock::now() + stall_timeout;
    }
    if (Clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    "the spoke's journal still holds " + std::to_string(pending) +
                        " bytes and has not shrunk for " + std::to_string(stall_timeout.count()) +
                        " ms; log:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string Daemon::Url(uint32_t uid, uint32_t gid) const {
  std::ostringstream url;
  url << "nfs://127.0.0.1" << (export_path_ == "/" ? "/" : export_path_)
      << "?version=3&nfsport=" << nfs_port_ << "&mountport=" << mount_port_
      << "&autoreconnect=0&uid=" << uid << "&gid=" << gid;
  return url.str();
}

std::string Daemon::HubUrl(uint32_t uid, uint32_t gid) const {
  if (!has_hub_process()) return Url(uid, gid);
  std::ostringstream url;
  url << "nfs://127.0.0.1/?version=3&nfsport=" << hub_nfs_port_ << "&mountport=" << hub_nfs_port_
      << "&autoreconnect=0&uid=" << uid << "&gid=" << gid;
  return url.str();
}

std::string Daemon::HubPath(const std::string& name) const {
  std::string root = has_hub_process() ? kPortal : "";
  return name.empty() ? (root.empty() ? "/" : root) : root + "/" + name;
}

std::string Daemon::ProcessLog(const Process& p) {
  std::ifstream in(p.log_path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Daemon::Log() const {
  if (!has_hub_process()) return ProcessLog(front_);
  return "==== geofs-hubd ====\n" + ProcessLog(hub_) + "==== geofs-spoked ====\n" +
         ProcessLog(front_);
}

Result<uint64_t> Daemon::RssBytes() const {
  if (!running()) return Status::Internal("daemon not running");
  std::ifstream in("/proc/" + std::to_string(front_.pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return static_cast<uint64_t>(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
    }
  }
  return Status::NotFound("no VmRSS in /proc/" + std::to_string(front_.pid) + "/status");
}

}  // namespace geofs::testing
