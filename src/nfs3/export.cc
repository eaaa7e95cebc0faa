#include "nfs3/export.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace geofs::nfs3 {
namespace {

// Addresses are compared in IPv6 form; IPv4 lives in ::ffff:0:0/96.
constexpr size_t kMappedPrefixBits = 96;

std::array<uint8_t, 16> MapV4(const uint8_t* v4) {
  std::array<uint8_t, 16> out{};
  out[10] = 0xff;
  out[11] = 0xff;
  std::copy(v4, v4 + 4, out.begin() + 12);
  return out;
}

bool IsDotComponent(std::string_view c) { return c == "." || c == ".."; }

}  // namespace

Result<Squash> ParseSquash(std::string_view text) {
  if (text == "root") return Squash::kRoot;
  if (text == "none") return Squash::kNone;
  if (text == "all") return Squash::kAll;
  return Status::InvalidArgument("squash must be root, none or all");
}

Result<Cidr> Cidr::Parse(std::string_view text) {
  std::string_view addr_text = text;
  std::string_view bits_text;
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    addr_text = text.substr(0, slash);
    bits_text = text.substr(slash + 1);
    if (bits_text.empty()) return Status::InvalidArgument("empty prefix length");
  }
  std::string addr(addr_text);  // inet_pton needs a terminated string
  Cidr cidr;
  size_t max_bits;
  uint8_t v4[4];
  if (inet_pton(AF_INET, addr.c_str(), v4) == 1) {
    cidr.is_v4_ = true;
    cidr.prefix_ = MapV4(v4);
    max_bits = 32;
  } else if (inet_pton(AF_INET6, addr.c_str(), cidr.prefix_.data()) == 1) {
    cidr.is_v4_ = false;
    max_bits = 128;
  } else {
    return Status::InvalidArgument("not an IP address: " + addr);
  }
  size_t bits = max_bits;
  if (!bits_text.empty()) {
    auto [end, ec] = std::from_chars(bits_text.data(), bits_text.data() + bits_text.size(), bits);
    if (ec != std::errc() || end != bits_text.data() + bits_text.size() || bits > max_bits) {
      return Status::InvalidArgument("bad prefix length in " + std::string(text));
    }
  }
  cidr.bits_ = static_cast<uint8_t>(cidr.is_v4_ ? bits + kMappedPrefixBits : bits);
  for (size_t i = 0; i < 16; ++i) {
    size_t first_bit = i * 8;
    if (first_bit >= cidr.bits_) {
      cidr.prefix_[i] = 0;
    } else if (cidr.bits_ - first_bit < 8) {
      cidr.prefix_[i] &= static_cast<uint8_t>(0xff << (8 - (cidr.bits_ - first_bit)));
    }
  }
  return cidr;
}

bool Cidr::Contains(const rpc::PeerAddress& peer) const {
  std::array<uint8_t, 16> addr = peer.is_v4 ? MapV4(peer.bytes.data()) : peer.bytes;
  size_t full = bits_ / 8;
  if (!std::equal(prefix_.begin(), prefix_.begin() + full, addr.begin())) return false;
  size_t rest = bits_ % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (addr[full] & mask) == prefix_[full];
}

std::string Cidr::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (is_v4_) {
    inet_ntop(AF_INET, prefix_.data() + 12, text, sizeof(text));
    return std::string(text) + "/" + std::to_string(bits_ - kMappedPrefixBits);
  }
  inet_ntop(AF_INET6, prefix_.data(), text, sizeof(text));
  return std::string(text) + "/" + std::to_string(bits_);
}

bool Export::Allows(const rpc::PeerAddress& peer) const {
  if (options.allow.empty()) return true;
  return std::any_of(options.allow.begin(), options.allow.end(),
                     [&](const Cidr& c) { return c.Contains(peer); });
}

vfs::Credentials Export::CredentialsFor(const rpc::CallContext& ctx) const {
  vfs::Credentials cred;
  if (ctx.flavor != rpc::AuthFlavor::kSys || !ctx.auth_sys || options.squash == Squash::kAll) {
    cred.uid = options.anon_uid;
    cred.gid = options.anon_gid;
    return cred;
  }
  const rpc::AuthSys& sys = *ctx.auth_sys;
  cred.uid = sys.uid;
  cred.gid = sys.gid;
  size_t ngroups = std::min(sys.gids.size(), vfs::kMaxGroups);
  cred.groups.assign(sys.gids.begin(), sys.gids.begin() + ngroups);
  if (options.squash == Squash::kRoot) {
    if (cred.uid == 0) cred.uid = options.anon_uid;
    if (cred.gid == 0) cred.gid = options.anon_gid;
    std::replace(cred.groups.begin(), cred.groups.end(), uint32_t{0}, options.anon_gid);
  }
  return cred;
}

std::string NormalizeExportPath(std::string_view path) {
  std::string out;
  out.reserve(path.size() + 1);
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    if (end > i) {
      out += '/';
      out.append(path.substr(i, end - i));
    }
    i = end;
  }
  return out.empty() ? "/" : out;
}

uint32_t ExportIdForPath(std::string_view normalized_path) {
  uint32_t h = 2166136261u;
  for (char c : normalized_path) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  return h;
}

Result<const Export*> ExportTable::Add(ExportOptions options, vfs::Backend* backend) {
  if (options.path.empty() || options.path[0] != '/') {
    return Status::InvalidArgument("export path must be absolute: " + options.path);
  }
  std::string path = NormalizeExportPath(options.path);
  for (size_t i = 1; i < path.size();) {
    size_t end = std::min(path.find('/', i), path.size());
    if (IsDotComponent(std::string_view(path).substr(i, end - i))) {
      return Status::InvalidArgument("export path has a . or .. component: " + path);
    }
    i = end + 1;
  }
  uint32_t id = ExportIdForPath(path);
  for (const auto& e : exports_) {
    if (e->options.path == path || e->id == id) {
      return Status::AlreadyExists("export path or id already in use: " + path);
    }
  }
  GEOFS_ASSIGN_OR_RETURN(vfs::Handle root, backend->Root());
  auto exp = std::make_unique<Export>();
  exp->id = id;
  options.path = std::move(path);
  exp->options = std::move(options);
  exp->backend = backend;
  exp->root = root;
  exports_.push_back(std::move(exp));
  return static_cast<const Export*>(exports_.back().get());
}

const Export* ExportTable::FindByPath(std::string_view path) const {
  std::string normalized = NormalizeExportPath(path);
  for (const auto& e : exports_) {
    if (e->options.path == normalized) return e.get();
  }
  return nullptr;
}

const Export* ExportTable::FindById(uint32_t id) const {
  for (const auto& e : exports_) {
    if (e->id == id) return e.get();
  }
  return nullptr;
}

Result<ExportOptions> ParseExportOptions(std::string path, const ExportPolicyText& policy) {
  ExportOptions options;
  options.path = std::move(path);
  options.read_only = policy.read_only;
  options.anon_uid = policy.anon_uid;
  options.anon_gid = policy.anon_gid;
  auto squash = ParseSquash(policy.squash);
  if (!squash.ok()) {
    return Status::InvalidArgument("--squash " + policy.squash + ": " + squash.status().ToString());
  }
  options.squash = *squash;
  for (const std::string& text : policy.allow) {
    auto cidr = Cidr::Parse(text);
    if (!cidr.ok())
      return Status::InvalidArgument("--allow " + text + ": " + cidr.status().ToString());
    options.allow.push_back(*cidr);
  }
  return options;
}

}  // namespace geofs::nfs3
