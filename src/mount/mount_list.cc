#include "mount/mount_list.h"

#include <algorithm>

namespace geofs::mount {

void MountList::Add(std::string_view host, std::string_view path) {
  std::lock_guard lock(mu_);
  bool listed = std::any_of(entries_.begin(), entries_.end(),
                            [&](const Entry& e) { return e.host == host && e.path == path; });
  if (listed || max_entries_ == 0) return;
  if (entries_.size() == max_entries_) entries_.pop_front();
  entries_.push_back(Entry{std::string(host), std::string(path)});
}

void MountList::Remove(std::string_view host, std::string_view path) {
  std::lock_guard lock(mu_);
  std::erase_if(entries_, [&](const Entry& e) { return e.host == host && e.path == path; });
}

void MountList::RemoveHost(std::string_view host) {
  std::lock_guard lock(mu_);
  std::erase_if(entries_, [&](const Entry& e) { return e.host == host; });
}

std::vector<MountList::Entry> MountList::Snapshot() const {
  std::lock_guard lock(mu_);
  return {entries_.begin(), entries_.end()};
}

}  // namespace geofs::mount
