// Sizes on command lines: "4096", "512K", "10M", "20G", "1T" (or "KiB",
// "MiB"...: powers of 1024 either way).
#pragma once

#include <cstdint>
#include <string_view>

#include "geofs/status.h"

namespace geofs {

// kInvalidArgument for anything else, or a size past 2^64.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace geofs
