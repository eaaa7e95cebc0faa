#include "meta/kv_store.h"

namespace geofs::meta {

void WriteBatch::Put(std::string_view key, std::string_view value) {
  ops_.push_back(Op{Op::Kind::kPut, std::string(key), std::string(value)});
  bytes_ += key.size() + value.size();
}

void WriteBatch::Delete(std::string_view key) {
  ops_.push_back(Op{Op::Kind::kDelete, std::string(key), {}});
  bytes_ += key.size();
}

void WriteBatch::Clear() {
  ops_.clear();
  bytes_ = 0;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    if (static_cast<uint8_t>(s.back()) != 0xff) {
      s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
      return s;
    }
    s.pop_back();
  }
  return s;
}

}  // namespace geofs::meta
