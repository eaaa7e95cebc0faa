#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace geofs {
namespace {

std::mutex g_mu;
spdlog::level::level_enum g_level = spdlog::level::info;

}  // namespace

std::shared_ptr<spdlog::logger> GetLogger(const std::string& component) {
  std::lock_guard lock(g_mu);
  if (auto existing = spdlog::get(component)) return existing;
  // Logs go to stderr so that tools can keep stdout for their results.
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_level(g_level);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [%n] %v");
  return logger;
}

bool SetLogLevel(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") return false;
  std::lock_guard lock(g_mu);
  g_level = parsed;
  spdlog::set_level(parsed);
  return true;
}

}  // namespace geofs
