// The mounts MOUNT DUMP reports. Advisory, as in every NFSv3 server: a client
// that never unmounts stays listed, and nothing depends on the list.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace geofs::mount {

// Thread-safe. Holds at most `max_entries` (host, path) pairs; when full,
// adding drops the oldest pair, so a client mounting in a loop cannot grow it.
class MountList {
 public:
  struct Entry {
    std::string host;
    std::string path;
  };

  explicit MountList(size_t max_entries) : max_entries_(max_entries) {}

  // No effect if the pair is already listed.
  void Add(std::string_view host, std::string_view path);
  void Remove(std::string_view host, std::string_view path);
  void RemoveHost(std::string_view host);
  // Oldest first.
  std::vector<Entry> Snapshot() const;

 private:
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;  // guarded by mu_
};

}  // namespace geofs::mount
