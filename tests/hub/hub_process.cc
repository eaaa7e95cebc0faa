#include "hub_process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace geofs::hub::testing {
namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string HubdPath() { return GEOFS_HUBD_PATH; }
std::string GeofsctlPath() { return GEOFS_GEOFSCTL_PATH; }

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "geofs-hub-XXXXXX").string();
  if (::mkdtemp(pattern.data()) != nullptr) {
    path_ = pattern;
    ::chmod(path_.c_str(), 0755);
  }
}

TempDir::~TempDir() {
  const char* keep = std::getenv("GEOFS_TEST_KEEP");
  if (path_.empty() || (keep != nullptr && std::string(keep) == "1")) return;
  std::error_code ignored;
  // Tests make unreadable entries; let removal through.
  std::filesystem::remove_all(path_, ignored);
}

Result<std::unique_ptr<Child>> Child::Start(Options options) {
  std::unique_ptr<Child> child(new Child(std::move(options)));
  const Options& o = child->options_;
  std::vector<std::string> args = o.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.push_back(*e);
  env_strings.insert(env_strings.end(), o.env.begin(), o.env.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int out_fd = ::open(o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int err_fd = ::open(o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out_fd < 0 || err_fd < 0 || null_fd < 0) {
    return Status::FromErrno(errno, "opening output files of " + o.argv[0]);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    // Undo the parent's blocked signals (a test may block some).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    if (o.uid) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(*o.uid) != 0 || ::setuid(*o.uid) != 0) {
        ::_exit(125);
      }
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(out_fd);
  ::close(err_fd);
  ::close(null_fd);
  if (pid < 0) return Status::FromErrno(fork_errno, "fork");
  child->pid_ = pid;
  return child;
}

Child::~Child() { Kill(); }

bool Child::Exited(int* status) {
  if (pid_ <= 0) return true;
  int raw = 0;
  const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
  if (r == 0) return false;
  pid_ = -1;
  if (status) *status = r > 0 ? DecodeWaitStatus(raw) : -1;
  return true;
}

Result<int> Child::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (!Exited(&status)) {
    if (std::chrono::steady_clock::now() > deadline) {
      Kill();
      return Status(StatusCode::kDeadlineExceeded, options_.argv[0] + " still running after " +
                                                       std::to_string(timeout.count()) +
                                                       " ms; stderr:\n" + Stderr());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

void Child::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int raw;
  while (::waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string Child::Stdout() const { return ReadWhole(options_.stdout_path); }
std::string Child::Stderr() const { return ReadWhole(options_.stderr_path); }

Result<CommandResult> RunCommand(const std::vector<std::string>& argv, std::optional<uid_t> uid,
                                 std::chrono::milliseconds timeout) {
  TempDir dir;
  Child::Options options;
  options.argv = argv;
  options.uid = uid;
  if (uid) {
    // Another user may not be able to reach the build tree (a checkout under
    // a 0700 directory): run a copy from this world-readable directory.
    std::string copy = dir.path() + "/" + std::filesystem::path(argv[0]).filename().string();
    std::error_code ec;
    std::filesystem::copy_file(argv[0], copy, ec);
    if (ec) return Status::IoError("copying " + argv[0] + ": " + ec.message());
    ::chmod(copy.c_str(), 0755);
    options.argv[0] = copy;
  }
  options.stdout_path = dir.path() + "/out";
  options.stderr_path = dir.path() + "/err";
  GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<Child> child, Child::Start(options));
  CommandResult result;
  GEOFS_ASSIGN_OR_RETURN(result.exit_code, child->Wait(timeout));
  result.out = child->Stdout();
  result.err = child->Stderr();
  return result;
}

Result<std::unique_ptr<HubProcess>> HubProcess::Create(HubOptions options) {
  std::unique_ptr<HubProcess> hub(new HubProcess(std::move(options)));
  if (hub->base_.path().empty()) return Status::Internal("no temporary directory");
  hub->data_dir_ =
      hub->options_.data_dir.empty() ? hub->base_.path() + "/data" : hub->options_.data_dir;
  hub->log_path_ = hub->base_.path() + "/hubd.log";
  return hub;
}

HubProcess::~HubProcess() { Kill(); }

Status HubProcess::Start() {
  if (running()) return Status::Internal("hub already running");
  const size_t log_offset = Log().size();
  Child::Options o;
  o.argv = {HubdPath(), "--data-dir", data_dir_, "--listen", "127.0.0.1:0"};
  if (options_.nfs) {
    o.argv.insert(o.argv.end(), {"--nfs-port", "0", "--mount-port", "0"});
  }
  if (!options_.object_store.empty()) {
    o.argv.insert(o.argv.end(), {"--object-store", options_.object_store});
  }
  o.argv.insert(o.argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  o.env = options_.env;
  o.stdout_path = o.stderr_path = log_path_;
  GEOFS_ASSIGN_OR_RETURN(child_, Child::Start(o));

  static const std::regex kListening(R"(listening grpc=[^ :]+:(\d+)(?: nfs=(\d+) mount=(\d+))?)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    const std::string log = Log().substr(log_offset);
    std::smatch m;
    if (std::regex_search(log, m, kListening)) {
      grpc_port_ = static_cast<uint16_t>(std::stoi(m[1]));
      if (m[2].matched) {
        nfs_port_ = static_cast<uint16_t>(std::stoi(m[2]));
        mount_port_ = static_cast<uint16_t>(std::stoi(m[3]));
      }
      return Status::Ok();
    }
    int status;
    if (child_->Exited(&status)) {
      return Status::Unavailable("geofs-hubd exited with " + std::to_string(status) +
                                 " before listening; log:\n" + log);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      child_->Kill();
      return Status(StatusCode::kDeadlineExceeded, "geofs-hubd did not listen; log:\n" + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status HubProcess::Stop() {
  if (!running()) return Status::Internal("hub not running");
  ::kill(child_->pid(), SIGTERM);
  auto status = child_->Wait(std::chrono::seconds(30));
  if (!status.ok()) return status.status();
  if (*status != 0) {
    return Status::Internal("geofs-hubd exited with " + std::to_string(*status) +
                            " after SIGTERM; log:\n" + Log());
  }
  return Status::Ok();
}

void HubProcess::Kill() {
  if (child_) child_->Kill();
}

void HubProcess::Signal(int sig) {
  if (child_ && child_->running()) ::kill(child_->pid(), sig);
}

std::string HubProcess::NfsUrl(uint32_t uid, uint32_t gid) const {
  return "nfs://127.0.0.1/?version=3&nfsport=" + std::to_string(nfs_port_) +
         "&mountport=" + std::to_string(mount_port_) +
         "&autoreconnect=0&uid=" + std::to_string(uid) + "&gid=" + std::to_string(gid);
}

std::string HubProcess::Log() const { return ReadWhole(log_path_); }

Result<CommandResult> HubProcess::Ctl(const std::vector<std::string>& args,
                                      std::optional<uid_t> uid) const {
  std::vector<std::string> argv = {GeofsctlPath(), "--hub", grpc_address()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, uid);
}

}  // namespace geofs::hub::testing
