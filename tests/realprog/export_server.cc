#include "export_server.h"

#include "hub_process.h"
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

std::vector<ExportServerKind> ExportServerKinds() {
  return {{"StandaloneSpoke", CreateStandaloneSpoke}, {"HubExport", CreateHubExport}};
}

}  // namespace geofs::realprog
