#include "hub/service_util.h"

#include <cstdio>

#include "hub/proto_convert.h"
#include "meta/namespace.h"

namespace geofs::hub::service {

Status Context(const Status& s, std::string_view what) {
  if (s.ok()) return s;
  std::string message(what);
  if (!s.message().empty()) {
    message += ": ";
    message += s.message();
  }
  return Status(s.code(), message);
}

std::string Quote(std::string_view name) {
  constexpr size_t kShown = 64;
  std::string out = "\"";
  for (size_t i = 0; i < name.size() && i < kShown; ++i) {
    const unsigned char c = name[i];
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "\"";
  if (name.size() > kShown) out += "... (" + std::to_string(name.size()) + " bytes)";
  return out;
}

Status CheckName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("empty name");
  if (name == "." || name == "..")
    return Status::InvalidArgument("name " + Quote(name) + " is reserved");
  if (name.find('/') != std::string_view::npos) {
    return Status::InvalidArgument("name " + Quote(name) + " contains '/'");
  }
  if (name.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("name " + Quote(name) + " contains a NUL byte");
  }
  if (name.size() > vfs::kMaxNameBytes) {
    return Status::NameTooLong("name " + Quote(name) + " is longer than " +
                               std::to_string(vfs::kMaxNameBytes) + " bytes");
  }
  return Status::Ok();
}

std::string RefText(const v1::FileRef& ref) { return "inode " + std::to_string(ref.ino()); }

vfs::Handle HandleOf(const v1::FileRef& ref) {
  return meta::Namespace::MakeHandle(ref.ino(), ref.gen());
}

void ToProto(const vfs::Entry& entry, v1::Entry* out) {
  auto parts = meta::Namespace::ParseHandle(entry.handle);
  if (parts.ok()) {
    out->mutable_ref()->set_ino(parts->ino);
    out->mutable_ref()->set_gen(parts->generation);
  }
  hub::ToProto(entry.attr, out->mutable_attr());
}

}  // namespace geofs::hub::service
