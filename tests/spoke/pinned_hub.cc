#include "pinned_hub.h"

#include <csignal>
#include <regex>
#include <thread>

#include "tools/free_port.h"

namespace geofs::spoke::testing {

using hub::testing::Child;

PinnedHub::PinnedHub(std::vector<std::string> extra_args) : extra_args_(std::move(extra_args)) {}

PinnedHub::~PinnedHub() {
  if (child_ && child_->running()) ::kill(child_->pid(), SIGCONT);
}

Status PinnedHub::Start() {
  if (child_ && child_->running() && !child_->Exited()) {
    return Status::Internal("hub already running");
  }
  if (child_) earlier_logs_ += child_->Stderr();
  // Below the ephemeral range, so nothing else takes it while the hub is down.
  if (grpc_port_ == 0) {
    GEOFS_ASSIGN_OR_RETURN(grpc_port_, geofs::testing::PickFreePort());
  }
  Child::Options o;
  o.argv = {hub::testing::HubdPath(),
            "--data-dir",
            base_.path() + "/data",
            "--listen",
            grpc_address(),
            "--nfs-port",
            "0",
            "--mount-port",
            "0"};
  o.argv.insert(o.argv.end(), extra_args_.begin(), extra_args_.end());
  o.stdout_path = o.stderr_path = base_.path() + "/hub." + std::to_string(++runs_) + ".log";
  static const std::regex kListening(R"(listening grpc=[^ :]+:(\d+) nfs=(\d+) mount=(\d+))");
  // The port of a killed hub may take a moment to be free again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  GEOFS_ASSIGN_OR_RETURN(child_, Child::Start(o));
  for (;;) {
    const std::string log = child_->Stderr();
    std::smatch m;
    if (std::regex_search(log, m, kListening)) {
      grpc_port_ = static_cast<uint16_t>(std::stoi(m[1]));
      nfs_port_ = static_cast<uint16_t>(std::stoi(m[2]));
      mount_port_ = static_cast<uint16_t>(std::stoi(m[3]));
      return Status::Ok();
    }
    int status;
    if (child_->Exited(&status)) {
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::Unavailable("geofs-hubd exited with " + std::to_string(status) + ":\n" +
                                   log);
      }
      earlier_logs_ += log;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      GEOFS_ASSIGN_OR_RETURN(child_, Child::Start(o));
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      child_->Kill();
      return Status(StatusCode::kDeadlineExceeded, "geofs-hubd did not listen:\n" + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status PinnedHub::Stop() {
  if (!child_ || !child_->running()) return Status::Ok();
  ::kill(child_->pid(), SIGCONT);
  ::kill(child_->pid(), SIGTERM);
  GEOFS_ASSIGN_OR_RETURN(int status, child_->Wait(std::chrono::seconds(30)));
  if (status != 0) return Status::Internal("geofs-hubd exited with " + std::to_string(status));
  return Status::Ok();
}

void PinnedHub::Kill() {
  if (child_) child_->Kill();
}

void PinnedHub::Signal(int sig) {
  if (child_ && child_->running()) ::kill(child_->pid(), sig);
}

std::string PinnedHub::NfsUrl() const {
  return "nfs://127.0.0.1/?version=3&nfsport=" + std::to_string(nfs_port_) +
         "&mountport=" + std::to_string(mount_port_) + "&autoreconnect=0&uid=0&gid=0";
}

std::string PinnedHub::Log() const { return earlier_logs_ + (child_ ? child_->Stderr() : ""); }

Result<hub::testing::CommandResult> PinnedHub::Ctl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {hub::testing::GeofsctlPath(), "--hub", grpc_address()};
  argv.insert(argv.end(), args.begin(), args.end());
  return hub::testing::RunCommand(argv);
}

}  // namespace geofs::spoke::testing
