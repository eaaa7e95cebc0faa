#include "nfs_url.h"

#include <charconv>

namespace geofs::bench {
namespace {

constexpr std::string_view kScheme = "nfs://";

Result<int> ParseInt(std::string_view key, std::string_view text, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Status::InvalidArgument(std::string(key) + "=" + std::string(text) + " is out of range");
  }
  return value;
}

}  // namespace

Result<NfsUrl> ParseNfsUrl(std::string_view url) {
  if (!url.starts_with(kScheme)) return Status::InvalidArgument("URL must start with nfs://");
  url.remove_prefix(kScheme.size());

  NfsUrl out;
  std::string_view query;
  if (const auto q = url.find('?'); q != std::string_view::npos) {
    query = url.substr(q + 1);
    url = url.substr(0, q);
  }
  const auto slash = url.find('/');
  if (slash == 0 || slash == std::string_view::npos) {
    return Status::InvalidArgument("URL needs a host and an export path: nfs://HOST/EXPORT");
  }
  out.host = std::string(url.substr(0, slash));
  if (out.host.find(':') != std::string::npos) {
    return Status::InvalidArgument("give ports as nfsport=/mountport=, not HOST:PORT");
  }
  out.export_path = std::string(url.substr(slash));

  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("URL parameter without a value: " + std::string(item));
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (key == "version") {
      if (value != "3") return Status::InvalidArgument("only version=3 is supported");
    } else if (key == "nfsport") {
      GEOFS_ASSIGN_OR_RETURN(out.nfs_port, ParseInt(key, value, 1, 65535));
    } else if (key == "mountport") {
      GEOFS_ASSIGN_OR_RETURN(out.mount_port, ParseInt(key, value, 1, 65535));
    } else if (key == "uid") {
      GEOFS_ASSIGN_OR_RETURN(out.uid, ParseInt(key, value, 0, 0x7fffffff));
    } else if (key == "gid") {
      GEOFS_ASSIGN_OR_RETURN(out.gid, ParseInt(key, value, 0, 0x7fffffff));
    } else if (key != "autoreconnect") {
      return Status::InvalidArgument("unknown URL parameter: " + std::string(key));
    }
  }
  if (out.nfs_port == 0 || out.mount_port == 0) {
    return Status::InvalidArgument("URL needs nfsport= and mountport=");
  }
  return out;
}

}  // namespace geofs::bench
