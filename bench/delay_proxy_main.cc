// geofs-delay-proxy: forwards one TCP port to a target, delaying each
// direction by --delay-ms (bench/delay_proxy.h). Prints
// "listening HOST:PORT" once it accepts. SIGUSR1 writes the byte counters
// as JSON to --stats-file (atomically: write, then rename); SIGTERM/SIGINT
// write them too and exit.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "delay_proxy.h"

namespace geofs::bench {
namespace {

Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("want HOST:PORT, got " + s);
  try {
    const int port = std::stoi(s.substr(colon + 1));
    if (port < 0 || port > 65535) return Status::InvalidArgument("bad port in " + s);
    return std::make_pair(s.substr(0, colon), static_cast<uint16_t>(port));
  } catch (const std::exception&) {
    return Status::InvalidArgument("bad port in " + s);
  }
}

void WriteStats(const std::string& path, const DelayProxyCounters& c) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"connections\": " << c.connections << ", \"upstream_bytes\": " << c.upstream_bytes
        << ", \"downstream_bytes\": " << c.downstream_bytes << "}\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

int Main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  std::string target;
  double delay_ms = 10;
  size_t window_bytes = DelayProxyOptions{}.window_bytes;
  std::string stats_file;
  CLI::App app{"geofs-delay-proxy: TCP forwarder adding a fixed one-way delay each way"};
  app.add_option("--listen", listen, "HOST:PORT to accept on (port 0: any)")->capture_default_str();
  app.add_option("--target", target, "HOST:PORT to forward to (IPv4)")->required();
  app.add_option("--delay-ms", delay_ms, "One-way delay in ms (RTT/2)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--window", window_bytes, "Bytes held per direction and connection")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--stats-file", stats_file, "Where SIGUSR1 and exit write the counters (JSON)");
  CLI11_PARSE(app, argc, argv);

  // Blocked before any thread starts, so that every thread inherits the mask
  // and only sigwait below sees these signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  DelayProxyOptions options;
  options.one_way_delay = std::chrono::microseconds(static_cast<int64_t>(delay_ms * 1000));
  options.window_bytes = window_bytes;
  auto listen_addr = SplitHostPort(listen);
  auto target_addr = SplitHostPort(target);
  if (!listen_addr.ok() || !target_addr.ok()) {
    std::fprintf(
        stderr, "geofs-delay-proxy: %s\n",
        std::string((listen_addr.ok() ? target_addr.status() : listen_addr.status()).message())
            .c_str());
    return 2;
  }
  std::tie(options.listen_host, options.listen_port) = *listen_addr;
  std::tie(options.target_host, options.target_port) = *target_addr;
  auto proxy = DelayProxy::Start(options);
  if (!proxy.ok()) {
    std::fprintf(stderr, "geofs-delay-proxy: %s\n", std::string(proxy.status().message()).c_str());
    return 1;
  }
  std::printf("listening %s:%u\n", options.listen_host.c_str(), (*proxy)->port());
  std::fflush(stdout);
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    WriteStats(stats_file, (*proxy)->Counters());
    if (sig != SIGUSR1) return 0;
  }
}

}  // namespace
}  // namespace geofs::bench

int main(int argc, char** argv) { return geofs::bench::Main(argc, argv); }
