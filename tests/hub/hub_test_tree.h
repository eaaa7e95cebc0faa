// Source trees for import tests: files written to a local directory with
// the expected content remembered.
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "hub_test_util.h"

namespace geofs::hub::testing {

class SourceTree {
 public:
  explicit SourceTree(std::string root) : root_(std::move(root)) {
    std::filesystem::create_directories(root_);
    ::chmod(root_.c_str(), 0755);
  }

  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }
  // Regular files and their content, by relative path.
  const std::map<std::string, std::string>& files() const { return files_; }

  void File(const std::string& rel, const std::string& content, mode_t mode = 0644) {
    const std::filesystem::path p = Path(rel);
    std::filesystem::create_directories(p.parent_path());
    for (auto d = p.parent_path(); d.string().size() > root_.size(); d = d.parent_path()) {
      ::chmod(d.c_str(), 0755);
    }
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
    ::chmod(p.c_str(), mode);
    files_[rel] = content;
  }
  void Remove(const std::string& rel) {
    std::filesystem::remove(Path(rel));
    Forget(rel);
  }
  // Leaves the file on disk but no longer expects it (an import skips it).
  void Forget(const std::string& rel) { files_.erase(rel); }
  void Symlink(const std::string& rel, const std::string& target) {
    ::symlink(target.c_str(), Path(rel).c_str());
  }
  void Fifo(const std::string& rel) { ::mkfifo(Path(rel).c_str(), 0644); }
  // A bound Unix socket; the file stays after the descriptor is closed.
  void Socket(const std::string& rel) {
    const std::string path = Path(rel);
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::close(fd);
  }
  // Text-like content: words from a small vocabulary (compresses well).
  static std::string Text(size_t n, uint64_t seed) {
    static const char* kWords[] = {"tensor ", "gradient ", "epoch ", "batch ", "loss\n",
                                   "shard ",  "sample ",   "label ", "the ",   "of "};
    std::mt19937_64 rng(seed);
    std::string out;
    while (out.size() < n) out += kWords[rng() % 10];
    out.resize(n);
    return out;
  }

 private:
  std::string root_;
  std::map<std::string, std::string> files_;
};

}  // namespace geofs::hub::testing
