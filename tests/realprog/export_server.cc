#include "export_server.h"

#include <filesystem>
#include <thread>

#include "hub_process.h"
#include "spoke_process.h"
#include "tools/daemon.h"

namespace geofs::realprog {
namespace {

// Root must stay root: the tests write as uid 0 into root-owned directories.
const std::vector<std::string> kNoSquash = {"--squash", "none"};

class StandaloneSpoke : public ExportServer {
 public:
  explicit StandaloneSpoke(std::unique_ptr<testing::Daemon> daemon) : daemon_(std::move(daemon)) {}
  Status Start() override { return daemon_->Start(); }
  Status Stop() override { return daemon_->Stop(); }
  void Kill() override { daemon_->Kill(); }
  std::string Url() const override { return daemon_->Url(0, 0); }
  std::string Log() const override { return daemon_->Log(); }

 private:
  std::unique_ptr<testing::Daemon> daemon_;
};

class HubExport : public ExportServer {
 public:
  explicit HubExport(std::unique_ptr<hub::testing::HubProcess> hub) : hub_(std::move(hub)) {}
  Status Start() override { return hub_->Start(); }
  Status Stop() override { return hub_->Stop(); }
  void Kill() override { hub_->Kill(); }
  std::string Url() const override { return hub_->NfsUrl(0, 0); }
  std::string Log() const override { return hub_->Log(); }

 private:
  std::unique_ptr<hub::testing::HubProcess> hub_;
};

// The hub directory the spoke serves (as export /datasets).
constexpr char kPortal[] = "/datasets";

// The hub listens on a new port at every start, so every Start() makes a new
// SpokeProcess over the same cache directory.
class SpokeOverHub : public ExportServer {
 public:
  explicit SpokeOverHub(std::unique_ptr<hub::testing::HubProcess> hub) : hub_(std::move(hub)) {
    std::filesystem::create_directory(dir_.path() + "/empty");
  }

  Status Start() override {
    if (!hub_->running()) GEOFS_RETURN_IF_ERROR(hub_->Start());
    if (!portal_created_) {
      // Importing an empty directory creates the portal (only once: a
      // later import would empty it again).
      GEOFS_ASSIGN_OR_RETURN(hub::testing::CommandResult r,
                             hub_->Ctl({"import", dir_.path() + "/empty", kPortal}));
      if (r.exit_code != 0) return Status::Internal("creating the portal: " + r.err);
      portal_created_ = true;
    }
    spoke::testing::SpokeProcessOptions options;
    options.hub_address = hub_->grpc_address();
    options.portal = kPortal;
    options.cache_dir = dir_.path() + "/cache";
    options.extra_args = kNoSquash;
    if (spoke_) spoke_log_ += spoke_->Log();
    GEOFS_ASSIGN_OR_RETURN(spoke_, spoke::testing::SpokeProcess::Create(std::move(options)));
    return spoke_->Start();
  }
  // The spoke first: it commits its journal at the hub as it stops.
  Status Stop() override {
    Status spoke = spoke_ ? spoke_->Stop() : Status::Ok();
    Status hub = hub_->Stop();
    return spoke.ok() ? hub : spoke;
  }
  void Kill() override {
    if (spoke_) spoke_->Kill();
    hub_->Kill();
  }
  std::string Url() const override { return spoke_ ? spoke_->NfsUrl(0, 0) : ""; }
  std::string Log() const override {
    return "--- geofs-hubd:\n" + hub_->Log() + "--- geofs-spoked:\n" + spoke_log_ +
           (spoke_ ? spoke_->Log() : "");
  }
  std::string AuthorityUrl() const override {
    return std::string("nfs://127.0.0.1") + kPortal +
           "?version=3&nfsport=" + std::to_string(hub_->nfs_port()) +
           "&mountport=" + std::to_string(hub_->mount_port()) + "&autoreconnect=0&uid=0&gid=0";
  }
  Status WaitSettled(std::chrono::milliseconds timeout) override {
    return spoke_ ? spoke_->WaitJournalDrained(timeout) : Status::Ok();
  }

 private:
  std::unique_ptr<hub::testing::HubProcess> hub_;
  std::unique_ptr<spoke::testing::SpokeProcess> spoke_;
  hub::testing::TempDir dir_;  // cache/ (the spoke's), empty/ (imported as the portal)
  std::string spoke_log_;      // logs of earlier spoke processes
  bool portal_created_ = false;
};

}  // namespace

Result<std::unique_ptr<ExportServer>> CreateStandaloneSpoke() {
  testing::DaemonOptions options;
  options.extra_args = kNoSquash;
  GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<testing::Daemon> daemon,
                         testing::Daemon::Create(std::move(options)));
  return std::unique_ptr<ExportServer>(new StandaloneSpoke(std::move(daemon)));
}

Result<std::unique_ptr<ExportServer>> CreateHubExport() {
  hub::testing::HubOptions options;
  options.nfs = true;
  options.extra_args = kNoSquash;
  GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<hub::testing::HubProcess> hub,
                         hub::testing::HubProcess::Create(std::move(options)));
  return std::unique_ptr<ExportServer>(new HubExport(std::move(hub)));
}

Result<std::unique_ptr<ExportServer>> CreateSpokeOverHub() {
  hub::testing::HubOptions hub_options;
  hub_options.nfs = true;
  hub_options.extra_args = kNoSquash;
  // A restarted hub holds changes for up to 1.5 lease TTLs
  // (docs/coherence.md): keep the crash test's restart short.
  hub_options.extra_args.insert(hub_options.extra_args.end(), {"--lease-ttl", "2"});
  GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<hub::testing::HubProcess> hub,
                         hub::testing::HubProcess::Create(std::move(hub_options)));
  return std::unique_ptr<ExportServer>(new SpokeOverHub(std::move(hub)));
}

std::vector<ExportServerKind> ExportServerKinds() {
  return {{"StandaloneSpoke", CreateStandaloneSpoke},
          {"HubExport", CreateHubExport},
          {"SpokeOverHub", CreateSpokeOverHub}};
}

}  // namespace geofs::realprog
