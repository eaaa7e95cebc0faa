// Per-component loggers. Each component asks for its logger by name once and
// keeps the pointer; the level is set process-wide from a flag.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace geofs {

// The logger for `component` ("rpc", "nfs3", "vfs.local", ...), created on
// first use. Thread-safe; never null.
std::shared_ptr<spdlog::logger> GetLogger(const std::string& component);

// Sets the level of every logger, present and future. Returns false if
// `level` is not one of trace, debug, info, warn, error, critical, off.
bool SetLogLevel(const std::string& level);

}  // namespace geofs
