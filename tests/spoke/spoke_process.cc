#include "spoke_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <regex>
#include <sstream>
#include <thread>

#include "tools/spoke_metrics.h"

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
  return geofs::testing::FetchSpokeMetrics(metrics_port_);
}

Result<double> SpokeProcess::Metric(const std::string& name) const {
  GEOFS_ASSIGN_OR_RETURN(auto metrics, Metrics());
  auto it = metrics.find(name);
  if (it == metrics.end()) return Status::NotFound("no metric " + name);
  return it->second;
}

Status SpokeProcess::WaitJournalDrained(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    GEOFS_ASSIGN_OR_RETURN(auto metrics, Metrics());
    const double files = metrics["geofs_spoke_journal_files"];
    const double bytes = metrics["geofs_spoke_journal_bytes"];
    const double creates = metrics["geofs_spoke_local_creates_pending"];
    if (files == 0 && bytes == 0 && creates == 0) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(StatusCode::kDeadlineExceeded, "the spoke's journal still holds " +
                                                       std::to_string(bytes) + " bytes of " +
                                                       std::to_string(files) + " files and " +
                                                       std::to_string(creates) + " creates");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace geofs::spoke::testing
