// Exports: which backend tree is served under which MOUNT path, and the
// policy (read-only, client allowlist, identity squashing) applied to calls.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"
#include "geofs/vfs.h"
#include "rpc/program.h"

namespace geofs::nfs3 {

// How caller identities are mapped before any permission check.
enum class Squash : uint8_t {
  kRoot,  // uid 0 -> anon_uid, gid 0 -> anon_gid (also among the groups)
  kNone,  // identities are used as sent
  kAll,   // every caller is anon_uid/anon_gid with no supplementary groups
};

// Parses "root", "none" or "all".
Result<Squash> ParseSquash(std::string_view text);

// An IPv4 or IPv6 address prefix: "10.0.0.0/8", "127.0.0.1" (= /32),
// "fd00::/8", "::1" (= /128). Host bits beyond the prefix are ignored.
class Cidr {
 public:
  static Result<Cidr> Parse(std::string_view text);

  // IPv4-mapped IPv6 peers (::ffff:a.b.c.d) match IPv4 prefixes.
  bool Contains(const rpc::PeerAddress& peer) const;
  // Canonical text, e.g. "10.0.0.0/8"; also the group name MOUNT EXPORT shows.
  std::string ToString() const;

 private:
  Cidr() = default;

  bool is_v4_ = true;
  std::array<uint8_t, 16> prefix_{};  // host bits cleared
  uint8_t bits_ = 0;
};

struct ExportOptions {
  // The MOUNT path clients ask for. Normalised on Add ("//a/b/" -> "/a/b").
  std::string path = "/";
  // Refuse every modifying procedure with NFS3ERR_ROFS.
  bool read_only = false;
  Squash squash = Squash::kRoot;
  // The identity of squashed and AUTH_NONE callers ("nobody").
  uint32_t anon_uid = 65534;
  uint32_t anon_gid = 65534;
  // Clients allowed to use the export; empty means every client.
  std::vector<Cidr> allow;
};

// The export policy as daemons take it on their command lines
// (--read-only, --squash, --anon-uid, --anon-gid, --allow).
struct ExportPolicyText {
  bool read_only = false;
  std::string squash = "root";
  uint32_t anon_uid = 65534;
  uint32_t anon_gid = 65534;
  std::vector<std::string> allow;
};

// ExportOptions for `path` under `policy`; kInvalidArgument naming the flag
// (e.g. "--allow 10.0.0.0/33: ...") if a value does not parse.
Result<ExportOptions> ParseExportOptions(std::string path, const ExportPolicyText& policy);

// One served tree. Immutable once added to an ExportTable.
struct Export {
  // Stable identity derived from the path: carried in every file handle and
  // reported as the fsid of every object in the export.
  uint32_t id = 0;
  ExportOptions options;
  vfs::Backend* backend = nullptr;
  vfs::Handle root;

  bool Allows(const rpc::PeerAddress& peer) const;
  // The caller's identity after squashing; AUTH_NONE (and any flavour other
  // than AUTH_SYS) is the anonymous identity.
  vfs::Credentials CredentialsFor(const rpc::CallContext& ctx) const;
};

// "/" for the root; otherwise a leading '/', single separators and no
// trailing '/'. "." and ".." components are not resolved.
std::string NormalizeExportPath(std::string_view path);

// The export id of a normalised path (32-bit FNV-1a: stable across releases
// and machines, so handles survive restarts and upgrades).
uint32_t ExportIdForPath(std::string_view normalized_path);

// Thread safety: Add must happen before the table is shared with programs;
// after that the table is read-only and lookups are safe from any thread.
class ExportTable {
 public:
  // Registers `backend` (not owned; must outlive the table) under
  // options.path. Fails with kAlreadyExists if the path, or another path with
  // the same id, is taken, and kInvalidArgument for a relative path or one
  // with "." or ".." components.
  Result<const Export*> Add(ExportOptions options, vfs::Backend* backend);

  // `path` need not be normalised. Null if unknown.
  const Export* FindByPath(std::string_view path) const;
  const Export* FindById(uint32_t id) const;

  const std::vector<std::unique_ptr<Export>>& exports() const { return exports_; }

 private:
  std::vector<std::unique_ptr<Export>> exports_;
};

}  // namespace geofs::nfs3
