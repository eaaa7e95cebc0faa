#include "common/byte_size.h"

#include <cctype>
#include <string>

namespace geofs {

Result<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) return Status::InvalidArgument("size " + std::string(text));
  uint64_t value = std::stoull(std::string(text.substr(0, digits)));
  std::string_view unit = text.substr(digits);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K" || unit == "KiB") {
    shift = 10;
  } else if (unit == "M" || unit == "MiB") {
    shift = 20;
  } else if (unit == "G" || unit == "GiB") {
    shift = 30;
  } else if (unit == "T" || unit == "TiB") {
    shift = 40;
  } else {
    return Status::InvalidArgument("size " + std::string(text) + ": unknown unit");
  }
  if (shift && value > (UINT64_MAX >> shift)) {
    return Status::InvalidArgument("size " + std::string(text) + ": too large");
  }
  return value << shift;
}

}  // namespace geofs
