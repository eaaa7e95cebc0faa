#include "meta/types.h"

namespace geofs::meta {

std::string ChunkIdHex(const ChunkId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(id.size() * 2);
  for (uint8_t b : id) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace geofs::meta
