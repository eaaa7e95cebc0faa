#include "object/local_object_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include "common/parallel.h"

namespace geofs::object {
namespace {

// Temp files older than this at Open are leftovers of a crashed writer.
constexpr auto kStaleTempAge = std::chrono::hours(1);

std::string KeyContext(std::string_view op, std::string_view key) {
  std::string s(op);
  s += ' ';
  s += key;
  return s;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error close() may carry for written data.
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

WallTime ModifiedOf(const struct stat& st) {
  return WallTime{st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec)};
}

void RemoveStaleTemps(const std::string& tmp_dir) {
  std::error_code ec;
  auto cutoff = std::filesystem::file_time_type::clock::now() - kStaleTempAge;
  for (const auto& entry : std::filesystem::directory_iterator(tmp_dir, ec)) {
    auto mtime = entry.last_write_time(ec);
    if (!ec && mtime < cutoff) std::filesystem::remove(entry.path(), ec);
  }
}

// One List call: walks the directory tree in key order, collecting up to
// `limit` objects under `prefix` whose keys are greater than `after`.
class Lister {
 public:
  Lister(std::string_view prefix, std::string_view after, size_t limit)
      : prefix_(prefix), after_(after), limit_(limit) {}

  // Lists directory `dir`, whose keys all begin with `key_prefix` ("" for the
  // root, else ending in '/'). Returns false once the page is full.
  Result<bool> Walk(const std::string& dir, const std::string& key_prefix) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      // A directory removed under us holds nothing to list.
      if (errno == ENOENT || errno == ENOTDIR) return true;
      return Status::FromErrno(errno, "list " + std::string(prefix_));
    }
    struct Entry {
      std::string sort_name;  // name, plus '/' for a directory: orders like full keys
      bool is_dir;
    };
    std::vector<Entry> entries;
    int dfd = ::dirfd(d);
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st;
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        is_dir = S_ISDIR(st.st_mode);
      }
      entries.push_back({is_dir ? std::string(name) + "/" : std::string(name), is_dir});
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.sort_name < b.sort_name; });

    for (const Entry& entry : entries) {
      std::string key = key_prefix + entry.sort_name;
      if (entry.is_dir) {
        // Every key below starts with `key`: skip the subtree when none of
        // them can match the prefix or come after the token.
        if (!key.starts_with(prefix_) && !prefix_.starts_with(key)) continue;
        if (!after_.empty() && key < after_ && !after_.starts_with(key)) continue;
        std::string sub = dir + "/" + entry.sort_name;
        sub.pop_back();
        auto more = Walk(sub, key);
        if (!more.ok() || !*more) {
          ::closedir(d);
          return more;
        }
        continue;
      }
      if (!key.starts_with(prefix_) || (!after_.empty() && key <= after_)) continue;
      struct stat st;
      if (::fstatat(dfd, entry.sort_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // deleted while listing
        int err = errno;
        ::closedir(d);
        return Status::FromErrno(err, "list " + key);
      }
      if (!S_ISREG(st.st_mode)) continue;
      if (objects_.size() == limit_) {
        truncated_ = true;
        ::closedir(d);
        return false;
      }
      objects_.push_back({std::move(key), static_cast<uint64_t>(st.st_size), ModifiedOf(st)});
    }
    ::closedir(d);
    return true;
  }

  ObjectListing TakeListing() {
    ObjectListing out;
    if (truncated_) out.next_page_token = objects_.back().key;
    out.objects = std::move(objects_);
    return out;
  }

 private:
  const std::string_view prefix_;
  const std::string_view after_;
  const size_t limit_;
  std::vector<ObjectInfo> objects_;
  bool truncated_ = false;
};

}  // namespace

Result<std::unique_ptr<LocalObjectStore>> LocalObjectStore::Open(std::string_view root,
                                                                 LocalObjectStoreOptions options) {
  if (root.empty()) return Status::InvalidArgument("local object store: empty root path");
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(std::filesystem::path(root), ec);
  if (ec) return Status::FromErrno(ec.value(), "local object store " + std::string(root));
  std::string root_str = abs.lexically_normal().string();
  if (root_str.size() > 1 && root_str.back() == '/') root_str.pop_back();
  for (const char* sub : {"/objects", "/tmp"}) {
    std::filesystem::create_directories(root_str + sub, ec);
    if (ec) return Status::FromErrno(ec.value(), "local object store: create " + root_str + sub);
  }
  const int root_fd = ::open(root_str.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return Status::FromErrno(errno, "local object store: open " + root_str);
  auto store = std::unique_ptr<LocalObjectStore>(
      new LocalObjectStore(root_str, root_fd, std::move(options)));
  RemoveStaleTemps(store->tmp_dir_);
  return store;
}

LocalObjectStore::LocalObjectStore(std::string root, int root_fd, LocalObjectStoreOptions options)
    : root_(std::move(root)),
      objects_dir_(root_ + "/objects"),
      tmp_dir_(root_ + "/tmp"),
      tmp_prefix_(std::to_string(::getpid()) + "." + std::to_string(std::random_device{}() >> 1) +
                  "."),
      root_fd_(root_fd),
      keep_free_bytes_(options.keep_free_bytes),
      syncer_(root_fd, std::move(options.barrier)) {}

LocalObjectStore::~LocalObjectStore() { ::close(root_fd_); }

Status LocalObjectStore::WriteTemp(const std::string& tmp, std::span<const uint8_t> data,
                                   std::string_view key) {
  std::string context = KeyContext("put", key);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::FromErrno(errno, context);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, context);
    }
    done += static_cast<size_t>(n);
  }
  // Start write-back now, so the data is on its way while this Put waits
  // for a barrier round (a hint; the barrier is what guarantees it).
  ::sync_file_range(fd.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
  if (fd.Close() != 0) return Status::FromErrno(errno, context);
  return Status::Ok();
}

// Creates the missing directories above `path`. They become durable with
// the barrier that follows the rename.
Status LocalObjectStore::MakeParents(const std::string& path, std::string_view key) {
  std::string context = KeyContext("put", key);
  size_t pos = objects_dir_.size();
  size_t last = path.rfind('/');
  while (pos < last) {
    size_t next = path.find('/', pos + 1);
    std::string dir = path.substr(0, next);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      if (errno == ENOTDIR) {
        return Status::InvalidArgument(context + ": a prefix of the key is stored as an object");
      }
      return Status::FromErrno(errno, context);
    }
    pos = next;
  }
  return Status::Ok();
}

Status LocalObjectStore::RenameIntoPlace(const std::string& tmp, const std::string& path,
                                         std::string_view key) {
  int rc = ::rename(tmp.c_str(), path.c_str());
  if (rc != 0 && errno == ENOENT) {
    GEOFS_RETURN_IF_ERROR(MakeParents(path, key));
    rc = ::rename(tmp.c_str(), path.c_str());
  }
  if (rc == 0) return Status::Ok();
  if (errno == EISDIR || errno == ENOTDIR || errno == ENOTEMPTY || errno == EEXIST) {
    return Status::InvalidArgument(KeyContext("put", key) +
                                   ": the key is a prefix of stored objects, or has a prefix "
                                   "stored as an object");
  }
  return Status::FromErrno(errno, KeyContext("put", key));
}

Result<LocalObjectStore::SpaceClaim> LocalObjectStore::ClaimSpace(uint64_t size,
                                                                  const std::string& context) {
  if (keep_free_bytes_ == 0) return SpaceClaim(nullptr, 0);
  struct statvfs fs;
  if (::fstatvfs(root_fd_, &fs) != 0) return Status::FromErrno(errno, context);
  const uint64_t available = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  SpaceClaim claim(&claimed_bytes_, size);
  if (available < keep_free_bytes_ + claimed_bytes_.load()) {
    return Status::NoSpace(context + ": " + std::to_string(available) + " bytes free, and " +
                           std::to_string(keep_free_bytes_) + " are kept free for the namespace");
  }
  return claim;
}

Status LocalObjectStore::Put(std::string_view key, std::span<const uint8_t> data) {
  const ObjectPut one{key, data};
  return std::move(PutMany(std::span(&one, 1), 1)[0]);
}

std::string LocalObjectStore::NewTempPath() {
  return tmp_dir_ + "/" + tmp_prefix_ + std::to_string(tmp_counter_.fetch_add(1));
}

std::vector<Status> LocalObjectStore::PutMany(std::span<const ObjectPut> puts, int parallelism) {
  std::vector<Status> out(puts.size());
  std::vector<std::string> tmps(puts.size());  // empty where nothing was written
  (void)ParallelFor(puts.size(), parallelism, [&](size_t i) {
    const ObjectPut& put = puts[i];
    out[i] = ValidateObjectKey(put.key);
    if (!out[i].ok()) return Status::Ok();
    // Held while the file is written: once written, the file system counts
    // its bytes itself, and holding the claim on would count them twice
    // for the rest of the set.
    auto claim = ClaimSpace(put.data.size(), KeyContext("put", put.key));
    if (!claim.ok()) {
      out[i] = claim.status();
      return Status::Ok();
    }
    tmps[i] = NewTempPath();
    out[i] = WriteTemp(tmps[i], put.data, put.key);
    return Status::Ok();
  });
  const std::string context = puts.size() == 1
                                  ? KeyContext("put", puts[0].key)
                                  : "put of " + std::to_string(puts.size()) + " objects";
  // The data must be durable before any name is: a crash must not leave a
  // torn object at its final name.
  const bool any_written =
      std::any_of(out.begin(), out.end(), [](const Status& s) { return s.ok(); });
  const Status data_durable = any_written ? syncer_.Barrier(context) : Status::Ok();
  bool renamed = false;
  for (size_t i = 0; i < puts.size(); ++i) {
    if (tmps[i].empty()) continue;  // refused before anything was written
    if (out[i].ok() && !data_durable.ok()) out[i] = data_durable;
    if (out[i].ok()) out[i] = RenameIntoPlace(tmps[i], PathOf(puts[i].key), puts[i].key);
    if (out[i].ok()) {
      renamed = true;
    } else {
      ::unlink(tmps[i].c_str());
    }
  }
  if (renamed) {
    const Status names_durable = syncer_.Barrier(context);
    for (Status& s : out) {
      if (s.ok()) s = names_durable;
    }
  }
  return out;
}

Result<Buffer> LocalObjectStore::Get(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  std::string context = KeyContext("get", key);
  std::string path = PathOf(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOTDIR) return Status::NotFound(context);
    return Status::FromErrno(errno, context);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, context);
  if (!S_ISREG(st.st_mode)) return Status::NotFound(context);
  // The file never changes once renamed into place, so its size is final.
  size_t size = static_cast<size_t>(st.st_size);
  uint8_t* data;
  Buffer buffer = Buffer::Allocate(size, &data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd.get(), data + done, size - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, context);
    }
    if (n == 0) return Status::IoError(context + ": file shorter than its size");
    done += static_cast<size_t>(n);
  }
  return buffer;
}

Result<ObjectInfo> LocalObjectStore::Head(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  std::string context = KeyContext("head", key);
  struct stat st;
  if (::stat(PathOf(key).c_str(), &st) != 0) {
    if (errno == ENOTDIR) return Status::NotFound(context);
    return Status::FromErrno(errno, context);
  }
  if (!S_ISREG(st.st_mode)) return Status::NotFound(context);
  return ObjectInfo{std::string(key), static_cast<uint64_t>(st.st_size), ModifiedOf(st)};
}

Status LocalObjectStore::Delete(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  std::string path = PathOf(key);
  if (::unlink(path.c_str()) != 0) {
    // Nothing stored under this key: a directory or a missing path.
    if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR) return Status::Ok();
    return Status::FromErrno(errno, KeyContext("delete", key));
  }
  return syncer_.Barrier(KeyContext("delete", key));
}

Result<ObjectListing> LocalObjectStore::List(std::string_view prefix, std::string_view page_token,
                                             size_t max_keys) {
  if (max_keys == 0 || max_keys > kMaxListPage) {
    return Status::InvalidArgument("list " + std::string(prefix) + ": max_keys out of range");
  }
  Lister lister(prefix, page_token, max_keys);
  auto done = lister.Walk(objects_dir_, "");
  if (!done.ok()) return done.status();
  return lister.TakeListing();
}

}  // namespace geofs::object
