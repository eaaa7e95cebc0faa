#include "object/s3rver_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string_view>
#include <thread>
#include <vector>

#include "tools/free_port.h"

namespace geofs::objtest {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(30);

// True once an HTTP request to the bucket gets any reply.
bool Answers(uint16_t port, const std::string& bucket) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string req =
        "HEAD /" + bucket + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[16];
      ok = ::recv(fd, buf, sizeof(buf), 0) > 0;
    }
  }
  ::close(fd);
  return ok;
}

void KillAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

std::string S3rverProcess::BinaryPath() {
  if (const char* env = std::getenv("GEOFS_S3RVER"); env != nullptr && *env != '\0') return env;
  return GEOFS_S3RVER_BIN;
}

std::string S3rverProcess::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

Result<std::unique_ptr<S3rverProcess>> S3rverProcess::Start(const std::string& bucket) {
  std::string binary = BinaryPath();
  if (::access(binary.c_str(), X_OK) != 0) {
    return Status::NotFound("s3rver not found at " + binary +
                            " (run scripts/s3rver.sh, or set GEOFS_S3RVER)");
  }
  std::string data_dir = (std::filesystem::temp_directory_path() / "geofs-s3rver-XXXXXX").string();
  if (::mkdtemp(data_dir.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp");

  Status last = Status::Unavailable("s3rver did not start");
  // The port may be taken between picking and binding: try a few.
  for (int attempt = 0; attempt < 3; ++attempt) {
    // s3rver takes no port 0.
    GEOFS_ASSIGN_OR_RETURN(uint16_t port, geofs::testing::PickFreePort());
    std::string port_str = std::to_string(port);
    std::vector<std::string> args = {
        binary, "-d", data_dir, "-a", "127.0.0.1", "-p", port_str, "--silent", "--configure-bucket",
        bucket};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // s3rver makes its continuation tokens with DES, which Node's OpenSSL 3
    // only offers from the legacy provider; without it every paged listing
    // fails with HTTP 500.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!std::string_view(*e).starts_with("NODE_OPTIONS=")) env.emplace_back(*e);
    }
    env.emplace_back("NODE_OPTIONS=--openssl-legacy-provider");
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) return Status::FromErrno(errno, "fork");
    if (pid == 0) {
      // Die with the test process, however it ends.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int wstatus;
      if (::waitpid(pid, &wstatus, WNOHANG) == pid) {
        last = Status::Unavailable("s3rver exited during start-up (status " +
                                   std::to_string(wstatus) + ")");
        pid = -1;
        break;
      }
      if (Answers(port, bucket)) {
        return std::unique_ptr<S3rverProcess>(new S3rverProcess(pid, port, bucket, data_dir));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pid > 0) {
      KillAndReap(pid);
      last = Status::Unavailable("s3rver did not answer within 30 s");
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(data_dir, ignored);
  return last;
}

S3rverProcess::~S3rverProcess() {
  KillAndReap(pid_);
  std::error_code ignored;
  std::filesystem::remove_all(data_dir_, ignored);
}

}  // namespace geofs::objtest
