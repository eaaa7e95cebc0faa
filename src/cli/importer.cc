#include "cli/importer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "chunk/chunk_id.h"
#include "cli/read_arena.h"
#include "common/buffer_pool.h"
#include "common/parallel.h"
#include "hub/grpc_status.h"
#include "hub/proto_convert.h"

namespace geofs::cli {
namespace {

constexpr int kMaxAttempts = 5;  // for calls that fail with kUnavailable
constexpr auto kFirstBackoff = std::chrono::milliseconds(250);
constexpr int kMaxCommitAttempts = 4;
constexpr uint32_t kDirPage = 4096;
// Files per group: two changes each must fit in one ApplyChanges
// batch (at most 1024 changes).
constexpr size_t kMaxGroupFiles = 256;
// The smallest read the importer asks for.
constexpr size_t kMinRead = 4096;

WallTime MtimeOf(const struct stat& st) {
  return {st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec)};
}

std::string TypeName(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFSOCK:
      return "socket";
    case S_IFIFO:
      return "FIFO";
    case S_IFCHR:
      return "character device";
    case S_IFBLK:
      return "block device";
    default:
      return "file of unknown type";
  }
}

std::string BytesOf(const chunk::ChunkId& id) {
  return std::string(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
}

// The attributes of a source entry the hub copy should carry.
v1::SetAttrs OwnershipOf(const struct stat& st) {
  v1::SetAttrs a;
  a.set_mode(st.st_mode & 07777);
  a.set_uid(st.st_uid);
  a.set_gid(st.st_gid);
  return a;
}

bool SameOwnership(const v1::Attr& a, const struct stat& st) {
  return a.mode() == (st.st_mode & 07777) && a.uid() == st.st_uid && a.gid() == st.st_gid;
}

bool SameMtime(const v1::Attr& a, const struct stat& st) {
  return hub::FromProto(a.mtime()) == MtimeOf(st);
}

bool SameExtents(const google::protobuf::RepeatedPtrField<v1::Extent>& hub,
                 const std::vector<v1::Extent>& ours) {
  if (static_cast<size_t>(hub.size()) != ours.size()) return false;
  for (size_t i = 0; i < ours.size(); ++i) {
    const v1::Extent& a = hub[static_cast<int>(i)];
    const v1::Extent& b = ours[i];
    if (a.offset() != b.offset() || a.length() != b.length() || a.chunk_id() != b.chunk_id() ||
        a.chunk_offset() != b.chunk_offset() || a.chunk_length() != b.chunk_length()) {
      return false;
    }
  }
  return true;
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

 private:
  int fd_;
};

// A fixed pool of threads running queued jobs; Submit blocks while
// `capacity` jobs wait, so the walk cannot run far ahead of the workers.
class WorkQueue {
 public:
  WorkQueue(int threads, size_t capacity) : capacity_(capacity) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkQueue() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }

  void Submit(std::function<void()> job) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return queue_.size() < capacity_; });
    queue_.push_back(std::move(job));
    cv_.notify_all();
  }

  // Waits until every submitted job has finished.
  void Drain() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::function<void()> job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      cv_.notify_all();
      lock.unlock();
      job();
      lock.lock();
      --running_;
      cv_.notify_all();
    }
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t running_ = 0;                       // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::vector<std::jthread> threads_;        // last: joined first
};

struct Counters {
  std::atomic<uint64_t> files{0}, files_sent{0}, files_unchanged{0}, files_grouped{0},
      directories{0}, symlinks{0}, logical_bytes{0}, read_bytes{0}, chunks{0}, new_chunks{0},
      new_raw_bytes{0}, new_stored_bytes{0}, removed{0};

  ImportStats Snapshot() const {
    ImportStats s;
    s.files = files;
    s.files_sent = files_sent;
    s.files_unchanged = files_unchanged;
    s.files_grouped = files_grouped;
    s.directories = directories;
    s.symlinks = symlinks;
    s.logical_bytes = logical_bytes;
    s.read_bytes = read_bytes;
    s.chunks = chunks;
    s.new_chunks = new_chunks;
    s.new_raw_bytes = new_raw_bytes;
    s.new_stored_bytes = new_stored_bytes;
    s.removed = removed;
    return s;
  }
};

}  // namespace

Status ImportOptions::Validate() const {
  GEOFS_RETURN_IF_ERROR(chunker.Validate());
  GEOFS_RETURN_IF_ERROR(codec.Validate());
  if (workers < 1 || compress_threads < 1) {
    return Status::InvalidArgument("import: workers and compress_threads must be at least 1");
  }
  if (batch_bytes == 0) return Status::InvalidArgument("import: batch_bytes must be positive");
  if (batches_in_flight < 0) {
    return Status::InvalidArgument("import: batches_in_flight must not be negative");
  }
  return Status::Ok();
}

class Importer::Impl {
 public:
  Impl(const HubClient* hub, ImportOptions options)
      : hub_(hub),
        options_(std::move(options)),
        read_blocks_(options_.batch_bytes * options_.workers * (options_.batches_in_flight + 1),
                     options_.batch_bytes) {}

  Result<ImportReport> Run(const std::string& src_dir, const std::string& hub_path);
  ImportStats Progress() const { return counters_.Snapshot(); }

 private:
  struct FileJob {
    std::string src;
    std::string rel;
    v1::FileRef dir;
    std::string name;
    std::optional<v1::Entry> existing;  // the hub's regular file of that name
  };
  struct DirAttrs {
    v1::FileRef ref;
    std::string rel;
    struct stat st;
  };
  // A file read, chunked and hashed, ready to be committed.
  struct ReadFileResult {
    FileJob job;
    struct stat st;
    std::vector<v1::Extent> extents;
  };
  using Batch = std::vector<std::pair<chunk::ChunkId, Buffer>>;

  // A hub call, retried with backoff while the hub is unavailable.
  template <typename Req, typename Resp>
  Status Call(grpc::Status (v1::Hub::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
              const Req& req, Resp* resp) {
    auto backoff = kFirstBackoff;
    for (int attempt = 1;; ++attempt) {
      resp->Clear();
      Status s = hub_->Call(method, req, resp);
      if (s.code() != StatusCode::kUnavailable || attempt == kMaxAttempts) return s;
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }

  // Records a problem with one source entry: fatal when the hub is
  // unreachable, else the entry is skipped.
  void Report(const std::string& rel, const Status& s) {
    if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded) {
      Fail(Status(s.code(), rel + ": " + s.ToString()));
    } else {
      Skip(rel, s.ToString());
    }
  }
  void Skip(const std::string& rel, const std::string& why) {
    std::lock_guard lock(mu_);
    skipped_.push_back(rel + ": " + why);
  }
  void Fail(const Status& s) {
    std::lock_guard lock(mu_);
    if (fatal_.ok()) fatal_ = s;
    failed_ = true;
  }
  bool failed() const { return failed_.load(); }

  Result<v1::Entry> EnsureHubDir(const std::string& hub_path);
  Result<std::map<std::string, v1::Entry>> ListHub(const v1::FileRef& dir);
  Status RemoveEntry(const v1::FileRef& dir, const std::string& name, const v1::Entry& entry);
  Result<v1::Entry> Create(const v1::FileRef& dir, const std::string& name, v1::FileType type,
                           const struct stat& st, const std::string& target = {});
  Status SetAttrs(const v1::FileRef& ref, const v1::Attr& attr, const struct stat& st,
                  bool set_mtime);

  void ImportDir(const std::string& src, const std::string& rel, const v1::FileRef& dir);
  void ImportSymlink(const std::string& src, const std::string& rel, const v1::FileRef& dir,
                     const std::string& name, const struct stat& st,
                     std::optional<v1::Entry> existing);
  void ImportFile(const FileJob& job);
  // Queues a new file for a group, submitting the group when full.
  void AddToGroup(FileJob job, uint64_t size);
  void SubmitGroup();
  // Whether a new file of `size` bytes goes in a group: it must fit the
  // group's block with the byte past its end that its read asks for.
  bool Groupable(uint64_t size) const {
    return options_.small_file_bytes > 0 && size <= options_.small_file_bytes &&
           size < options_.batch_bytes;
  }
  // Imports new files together (see importer.h).
  void ImportGroup(const std::vector<FileJob>& jobs);
  // Creates and commits the files of a group in one ApplyChanges; the
  // status of each file's pair of changes, in order.
  Result<std::vector<Status>> CreateAndCommit(const std::vector<ReadFileResult>& files);
  // Reads, chunks and hashes a file into `batch`; kAborted if it changed
  // while being read. Without a `group`, the chunks of each block read go
  // up as a batch (up to batches_in_flight in the background) and are all
  // stored when this returns OK; with one, the file is read into the
  // group's block and its chunks stay in `batch` for the group to send.
  Status ReadFile(const FileJob& job, std::vector<v1::Extent>* extents, struct stat* st,
                  Batch* batch, ReadArena* group);
  // ReadFile, again once if the file changed while being read.
  Status ReadStable(const FileJob& job, std::vector<v1::Extent>* extents, struct stat* st,
                    Batch* batch, ReadArena* group);
  // Makes sure every chunk of `batch` is stored (sent by this call, or by
  // another that claimed it first) and empties it.
  Status SendBatch(Batch& batch);
  // Uploads `chunks` (ids this call claimed): asks the hub which it lacks,
  // compresses and sends those.
  Status Upload(const std::vector<const std::pair<chunk::ChunkId, Buffer>*>& chunks);
  Status CommitFile(const FileJob& job, const struct stat& st,
                    const std::vector<v1::Extent>& extents);

  const HubClient* const hub_;
  const ImportOptions options_;
  Counters counters_;
  // Blocks of batch_bytes for files sent a block at a time, reused from
  // file to file: fresh memory costs a page fault and the kernel's zeroing
  // per 4 KiB on first touch, which cost more CPU than the read's copy.
  BufferPool read_blocks_;
  // Chunks this import has stored or is storing, each with the outcome of
  // its upload: a chunk shared by several files is sent once, and a file
  // commits only after every chunk it names is stored.
  struct Claim {
    std::shared_future<Status> stored;
    uint64_t owner = 0;  // the SendBatch call uploading it
  };
  std::mutex claims_mu_;
  std::unordered_map<chunk::ChunkId, Claim, chunk::ChunkIdHash> claims_;  // guarded by claims_mu_
  std::atomic<uint64_t> next_owner_{1};
  std::unique_ptr<WorkQueue> queue_;
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  Status fatal_;                      // guarded by mu_
  std::vector<std::string> skipped_;  // guarded by mu_
  std::vector<DirAttrs> dir_attrs_;   // walk thread only
  std::vector<FileJob> group_;        // walk thread only: new files to send together
  uint64_t group_bytes_ = 0;          // walk thread only
};

Result<ImportReport> Importer::Impl::Run(const std::string& src_dir, const std::string& hub_path) {
  const auto start = std::chrono::steady_clock::now();
  struct stat root_st;
  if (::stat(src_dir.c_str(), &root_st) != 0) return Status::FromErrno(errno, src_dir);
  if (!S_ISDIR(root_st.st_mode)) return Status::NotDirectory(src_dir + " is not a directory");
  GEOFS_ASSIGN_OR_RETURN(v1::Entry root, EnsureHubDir(hub_path));

  queue_ = std::make_unique<WorkQueue>(options_.workers, 2 * options_.workers);
  dir_attrs_.push_back({root.ref(), ".", root_st});
  ImportDir(src_dir, ".", root.ref());
  SubmitGroup();
  queue_->Drain();
  queue_.reset();
  // Directory times last: creating and removing names moved them.
  for (auto it = dir_attrs_.rbegin(); it != dir_attrs_.rend() && !failed(); ++it) {
    v1::GetAttrRequest req;
    *req.mutable_ref() = it->ref;
    v1::GetAttrResponse resp;
    Status s = Call(&v1::Hub::Stub::GetAttr, req, &resp);
    if (s.ok()) s = SetAttrs(it->ref, resp.attr(), it->st, /*set_mtime=*/true);
    if (!s.ok()) Report(it->rel, s);
  }

  std::lock_guard lock(mu_);
  if (!fatal_.ok()) return fatal_;
  ImportReport report;
  report.stats = counters_.Snapshot();
  report.skipped = skipped_;
  std::sort(report.skipped.begin(), report.skipped.end());
  report.elapsed = std::chrono::steady_clock::now() - start;
  return report;
}

Result<v1::Entry> Importer::Impl::EnsureHubDir(const std::string& hub_path) {
  v1::ResolvePathRequest root_req;
  root_req.set_path("/");
  v1::ResolvePathResponse root_resp;
  GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::ResolvePath, root_req, &root_resp));
  v1::Entry current = root_resp.object();
  std::string walked;
  size_t pos = 0;
  while (pos < hub_path.size()) {
    size_t slash = hub_path.find('/', pos);
    if (slash == std::string::npos) slash = hub_path.size();
    const std::string name = hub_path.substr(pos, slash - pos);
    pos = slash + 1;
    if (name.empty() || name == ".") continue;
    walked += "/" + name;
    v1::LookupRequest req;
    *req.mutable_dir() = current.ref();
    req.set_name(name);
    v1::LookupResponse resp;
    Status s = Call(&v1::Hub::Stub::Lookup, req, &resp);
    if (s.code() == StatusCode::kNotFound) {
      v1::CreateRequest create;
      *create.mutable_dir() = current.ref();
      create.set_name(name);
      create.set_type(v1::DIRECTORY);
      create.mutable_attrs()->set_mode(0755);
      v1::CreateResponse created;
      GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::Create, create, &created));
      current = created.object();
      continue;
    }
    if (!s.ok()) return Status(s.code(), "hub path " + walked + ": " + s.ToString());
    if (resp.object().attr().type() != v1::DIRECTORY) {
      return Status::NotDirectory("hub path " + walked + " is not a directory");
    }
    current = resp.object();
  }
  return current;
}

Result<std::map<std::string, v1::Entry>> Importer::Impl::ListHub(const v1::FileRef& dir) {
  std::map<std::string, v1::Entry> out;
  v1::ReadDirRequest req;
  *req.mutable_dir() = dir;
  req.set_max_entries(kDirPage);
  req.set_with_attrs(true);
  for (;;) {
    v1::ReadDirResponse resp;
    GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::ReadDir, req, &resp));
    for (const v1::DirEntry& e : resp.entries()) {
      req.set_cookie(e.cookie());
      if (e.name() == "." || e.name() == "..") continue;
      out.emplace(e.name(), e.entry());
    }
    req.set_verifier(resp.verifier());
    if (resp.eof() || resp.entries().empty()) return out;
  }
}

Status Importer::Impl::RemoveEntry(const v1::FileRef& dir, const std::string& name,
                                   const v1::Entry& entry) {
  const bool is_dir = entry.attr().type() == v1::DIRECTORY;
  if (is_dir) {
    GEOFS_ASSIGN_OR_RETURN(auto children, ListHub(entry.ref()));
    for (const auto& [child, child_entry] : children) {
      GEOFS_RETURN_IF_ERROR(RemoveEntry(entry.ref(), child, child_entry));
    }
  }
  v1::RemoveRequest req;
  *req.mutable_dir() = dir;
  req.set_name(name);
  req.set_directory(is_dir);
  v1::RemoveResponse resp;
  Status s = Call(&v1::Hub::Stub::Remove, req, &resp);
  // Gone already (a retried call that had succeeded): what we wanted.
  if (s.code() == StatusCode::kNotFound) s = Status::Ok();
  if (s.ok()) ++counters_.removed;
  return s;
}

Result<v1::Entry> Importer::Impl::Create(const v1::FileRef& dir, const std::string& name,
                                         v1::FileType type, const struct stat& st,
                                         const std::string& target) {
  v1::CreateRequest req;
  *req.mutable_dir() = dir;
  req.set_name(name);
  req.set_type(type);
  // UNCHECKED without a size: creating a name that exists (a retry) is a
  // no-op that returns it.
  req.set_mode(v1::UNCHECKED);
  *req.mutable_attrs() = OwnershipOf(st);
  if (type == v1::SYMLINK) {
    req.mutable_attrs()->clear_mode();
    req.set_symlink_target(target);
  }
  v1::CreateResponse resp;
  GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::Create, req, &resp));
  return resp.object();
}

Status Importer::Impl::SetAttrs(const v1::FileRef& ref, const v1::Attr& attr, const struct stat& st,
                                bool set_mtime) {
  const bool ownership = !SameOwnership(attr, st);
  const bool mtime = set_mtime && !SameMtime(attr, st);
  if (!ownership && !mtime) return Status::Ok();
  v1::SetAttrRequest req;
  *req.mutable_ref() = ref;
  if (ownership) *req.mutable_attrs() = OwnershipOf(st);
  if (mtime) {
    req.mutable_attrs()->set_mtime_how(v1::CLIENT_TIME);
    *req.mutable_attrs()->mutable_mtime() = hub::ToProto(MtimeOf(st));
  }
  v1::SetAttrResponse resp;
  return Call(&v1::Hub::Stub::SetAttr, req, &resp);
}

void Importer::Impl::ImportDir(const std::string& src, const std::string& rel,
                               const v1::FileRef& dir) {
  if (failed()) return;
  struct Child {
    std::string name;
    struct stat st;
  };
  std::vector<Child> children;
  {
    DIR* d = ::opendir(src.c_str());
    if (d == nullptr) return Report(rel, Status::FromErrno(errno, "listing " + src));
    errno = 0;
    while (struct dirent* de = ::readdir(d)) {
      std::string name = de->d_name;
      if (name == "." || name == "..") continue;
      Child c{name, {}};
      if (::fstatat(::dirfd(d), name.c_str(), &c.st, AT_SYMLINK_NOFOLLOW) != 0) {
        const int err = errno;
        Skip(rel + "/" + name, err == ENOENT ? std::string("vanished during the import")
                                             : Status::FromErrno(err, "lstat").ToString());
        errno = 0;
        continue;
      }
      children.push_back(std::move(c));
      errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) return Report(rel, Status::FromErrno(err, "listing " + src));
  }
  std::sort(children.begin(), children.end(),
            [](const Child& a, const Child& b) { return a.name < b.name; });

  auto hub = ListHub(dir);
  if (!hub.ok()) return Report(rel, hub.status());
  if (options_.delete_extraneous) {
    std::unordered_set<std::string> names;
    for (const Child& c : children) names.insert(c.name);
    for (const auto& [name, entry] : *hub) {
      if (names.count(name)) continue;
      if (Status s = RemoveEntry(dir, name, entry); !s.ok()) Report(rel + "/" + name, s);
    }
  }

  for (const Child& c : children) {
    if (failed()) return;
    const std::string child_src = src + "/" + c.name;
    const std::string child_rel = rel == "." ? c.name : rel + "/" + c.name;
    std::optional<v1::Entry> existing;
    if (auto it = hub->find(c.name); it != hub->end()) existing = it->second;
    const mode_t type = c.st.st_mode & S_IFMT;
    const v1::FileType wanted = type == S_IFDIR   ? v1::DIRECTORY
                                : type == S_IFREG ? v1::REGULAR
                                : type == S_IFLNK ? v1::SYMLINK
                                                  : v1::FILE_TYPE_UNSPECIFIED;
    if (wanted == v1::FILE_TYPE_UNSPECIFIED) {
      Skip(child_rel, TypeName(c.st.st_mode) + ": not imported");
      continue;
    }
    if (existing && existing->attr().type() != wanted) {
      // Replaced by another kind of object in the source.
      if (Status s = RemoveEntry(dir, c.name, *existing); !s.ok()) {
        Report(child_rel, s);
        continue;
      }
      existing.reset();
    }
    switch (wanted) {
      case v1::DIRECTORY: {
        ++counters_.directories;
        v1::Entry entry;
        if (existing) {
          entry = *existing;
        } else {
          auto created = Create(dir, c.name, v1::DIRECTORY, c.st);
          if (!created.ok()) {
            Report(child_rel, created.status());
            continue;
          }
          entry = *created;
        }
        dir_attrs_.push_back({entry.ref(), child_rel, c.st});
        ImportDir(child_src, child_rel, entry.ref());
        break;
      }
      case v1::REGULAR: {
        ++counters_.files;
        counters_.logical_bytes += c.st.st_size;
        if (existing && existing->attr().size() == static_cast<uint64_t>(c.st.st_size) &&
            SameMtime(existing->attr(), c.st)) {
          ++counters_.files_unchanged;
          if (Status s = SetAttrs(existing->ref(), existing->attr(), c.st, false); !s.ok()) {
            Report(child_rel, s);
          }
          break;
        }
        FileJob job{child_src, child_rel, dir, c.name, existing};
        if (!existing && Groupable(c.st.st_size)) {
          AddToGroup(std::move(job), c.st.st_size);
        } else {
          queue_->Submit([this, job = std::move(job)] { ImportFile(job); });
        }
        break;
      }
      default:
        ImportSymlink(child_src, child_rel, dir, c.name, c.st, existing);
        break;
    }
  }
}

void Importer::Impl::ImportSymlink(const std::string& src, const std::string& rel,
                                   const v1::FileRef& dir, const std::string& name,
                                   const struct stat& st, std::optional<v1::Entry> existing) {
  ++counters_.symlinks;
  std::string target(std::max<off_t>(st.st_size, 0) + 1, '\0');
  const ssize_t n = ::readlink(src.c_str(), target.data(), target.size());
  if (n < 0) return Report(rel, Status::FromErrno(errno, "readlink"));
  if (static_cast<size_t>(n) >= target.size()) {
    return Skip(rel, "symlink changed while being read");
  }
  target.resize(n);
  struct stat followed;
  if (::stat(src.c_str(), &followed) != 0 && errno == ELOOP) {
    return Skip(rel, "symlink loop (-> " + target + ")");
  }
  if (existing) {
    v1::ReadLinkRequest req;
    *req.mutable_ref() = existing->ref();
    v1::ReadLinkResponse resp;
    Status s = Call(&v1::Hub::Stub::ReadLink, req, &resp);
    if (s.ok() && resp.target() == target) return;
    if (Status removed = RemoveEntry(dir, name, *existing); !removed.ok()) {
      return Report(rel, removed);
    }
  }
  auto created = Create(dir, name, v1::SYMLINK, st, target);
  if (!created.ok()) Report(rel, created.status());
}

void Importer::Impl::ImportFile(const FileJob& job) {
  if (failed()) return;
  std::vector<v1::Extent> extents;
  struct stat st;
  Batch batch;
  Status s = ReadStable(job, &extents, &st, &batch, /*group=*/nullptr);
  if (s.code() == StatusCode::kAborted) return;  // skipped
  if (s.ok()) s = CommitFile(job, st, extents);
  if (!s.ok()) return Report(job.rel, s);
  ++counters_.files_sent;
}

void Importer::Impl::AddToGroup(FileJob job, uint64_t size) {
  // What the file takes of the group's block: ReadFile asks for one byte
  // past the end (to see it) and for at least a page.
  const uint64_t room = std::max<uint64_t>(size + 1, kMinRead);
  if (!group_.empty() && group_bytes_ + room > options_.batch_bytes) SubmitGroup();
  group_.push_back(std::move(job));
  group_bytes_ += room;
  if (group_.size() >= kMaxGroupFiles) SubmitGroup();
}

void Importer::Impl::SubmitGroup() {
  if (group_.empty()) return;
  queue_->Submit([this, jobs = std::move(group_)] { ImportGroup(jobs); });
  group_.clear();
  group_bytes_ = 0;
}

void Importer::Impl::ImportGroup(const std::vector<FileJob>& jobs) {
  if (failed()) return;
  std::vector<ReadFileResult> files;
  Batch batch;
  // The group's files are read into one pooled block (AddToGroup made them
  // fit), so a group touches no fresh pages.
  uint8_t* block_data;
  Buffer block = read_blocks_.Allocate(options_.batch_bytes, &block_data);
  ReadArena group(std::move(block), block_data);
  for (const FileJob& job : jobs) {
    if (failed()) return;
    ReadFileResult file{job, {}, {}};
    const size_t mark = batch.size();
    Status s = ReadStable(job, &file.extents, &file.st, &batch, &group);
    if (!s.ok()) {
      batch.resize(mark);  // none of its chunks are needed now
      if (s.code() != StatusCode::kAborted) Report(job.rel, s);
      continue;
    }
    files.push_back(std::move(file));
  }
  if (files.empty()) return;
  if (Status s = SendBatch(batch); !s.ok()) {
    for (const ReadFileResult& file : files) Report(file.job.rel, s);
    return;
  }
  // Files whose changes did not go through are committed one by one,
  // which copes with whatever stood in the way.
  auto together = CreateAndCommit(files);
  for (size_t i = 0; i < files.size(); ++i) {
    const ReadFileResult& file = files[i];
    Status s = together.ok() ? (*together)[i] : together.status();
    if (s.ok()) {
      ++counters_.files_grouped;
    } else {
      s = CommitFile(file.job, file.st, file.extents);
    }
    if (!s.ok()) {
      Report(file.job.rel, s);
    } else {
      ++counters_.files_sent;
    }
  }
}

Result<std::vector<Status>> Importer::Impl::CreateAndCommit(
    const std::vector<ReadFileResult>& files) {
  // Numbers reserved first, so each file's commit can name the file its
  // create makes in the same batch. Numbers of files whose create fails
  // stay unused.
  v1::ReserveInodesRequest reserve;
  reserve.set_count(static_cast<uint32_t>(files.size()));
  v1::ReserveInodesResponse reserved;
  GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::ReserveInodes, reserve, &reserved));
  if (static_cast<size_t>(reserved.generations_size()) != files.size()) {
    return Status::Internal("the hub reserved " + std::to_string(reserved.generations_size()) +
                            " inode numbers, not " + std::to_string(files.size()));
  }
  v1::ApplyChangesRequest req;
  std::vector<v1::FileRef> refs(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const ReadFileResult& file = files[i];
    refs[i].set_ino(reserved.first() + i);
    refs[i].set_gen(reserved.generations(static_cast<int>(i)));
    v1::CreateRequest* create = req.add_changes()->mutable_create();
    *create->mutable_dir() = file.job.dir;
    create->set_name(file.job.name);
    create->set_type(v1::REGULAR);
    create->set_mode(v1::UNCHECKED);
    *create->mutable_attrs() = OwnershipOf(file.st);
    create->set_reserved_ino(refs[i].ino());
    v1::CommitFileRequest* commit = req.add_changes()->mutable_commit_file();
    *commit->mutable_ref() = refs[i];
    commit->set_expected_version(1);  // a new file's first version
    commit->set_replace_all(true);
    for (const v1::Extent& e : file.extents) *commit->add_extents() = e;
    commit->set_new_size(file.st.st_size);
    *commit->mutable_mtime() = hub::ToProto(MtimeOf(file.st));
  }
  v1::ApplyChangesResponse resp;
  GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::ApplyChanges, req, &resp));
  if (resp.results_size() != req.changes_size()) {
    return Status::Internal("the hub answered " + std::to_string(resp.results_size()) + " of " +
                            std::to_string(req.changes_size()) + " changes");
  }
  auto outcome = [](const v1::ChangeResult& r) {
    if (r.deferred()) return Status::Unavailable("deferred by the hub");
    return hub::ChangeStatus(r);
  };
  std::vector<Status> results(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const v1::ChangeResult& created = resp.results(static_cast<int>(2 * i));
    const v1::ChangeResult& committed = resp.results(static_cast<int>(2 * i + 1));
    results[i] = outcome(created);
    if (results[i].ok()) results[i] = outcome(committed);
    // Ownership the hub did not take as given (its rules on mode bits).
    if (results[i].ok()) {
      results[i] = SetAttrs(refs[i], committed.commit_file().wcc().after(), files[i].st, false);
    }
  }
  return results;
}

Status Importer::Impl::ReadStable(const FileJob& job, std::vector<v1::Extent>* extents,
                                  struct stat* st, Batch* batch, ReadArena* group) {
  const size_t mark = batch->size();
  Status s = ReadFile(job, extents, st, batch, group);
  if (s.code() != StatusCode::kAborted) return s;
  extents->clear();
  batch->resize(mark);
  s = ReadFile(job, extents, st, batch, group);
  if (s.code() == StatusCode::kAborted) {
    Skip(job.rel, "changed while being read (twice): " + std::string(s.message()));
  }
  return s;
}

Status Importer::Impl::ReadFile(const FileJob& job, std::vector<v1::Extent>* extents,
                                struct stat* st, Batch* batch, ReadArena* group) {
  Fd fd(::open(job.src.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Status::NotFound("vanished during the import");
    return Status::FromErrno(errno, "open " + job.src);
  }
  struct stat before;
  if (::fstat(fd.get(), &before) != 0) return Status::FromErrno(errno, "fstat " + job.src);
  if (!S_ISREG(before.st_mode)) return Status::InvalidArgument("no longer a regular file");
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);

  // The file is read a block (one batch) at a time; chunks inside a block
  // are slices of it, not copies.
  Buffer block;
  const uint8_t* block_data = nullptr;
  size_t block_filled = 0;
  uint64_t offset = 0;
  chunk::ChunkSplitter splitter(options_.chunker, [&](std::span<const uint8_t> data) -> Status {
    const chunk::ChunkId id = chunk::ChunkId::Of(data);
    v1::Extent e;
    e.set_offset(offset);
    e.set_length(data.size());
    e.set_chunk_id(BytesOf(id));
    e.set_chunk_offset(0);
    e.set_chunk_length(data.size());
    extents->push_back(std::move(e));
    offset += data.size();
    ++counters_.chunks;
    const auto at = reinterpret_cast<uintptr_t>(data.data());
    const auto begin = reinterpret_cast<uintptr_t>(block_data);
    const bool in_block = at >= begin && at + data.size() <= begin + block_filled;
    batch->emplace_back(id, in_block ? block.Slice(at - begin, data.size()) : Buffer::CopyOf(data));
    return Status::Ok();
  });
  // Uploads of earlier blocks of the file; a future of std::async waits for
  // its task when destroyed, so none outlives this call, whatever it
  // returns. The last block's batch goes up on this thread.
  std::deque<std::future<Status>> uploads;
  auto upload_batch = [&](bool last) -> Status {
    if (last || options_.batches_in_flight == 0) return SendBatch(*batch);
    if (uploads.size() == static_cast<size_t>(options_.batches_in_flight)) {
      Status oldest = uploads.front().get();
      uploads.pop_front();
      GEOFS_RETURN_IF_ERROR(oldest);
    }
    auto sent = std::make_shared<Batch>(std::move(*batch));
    batch->clear();
    try {
      uploads.push_back(std::async(std::launch::async, [this, sent] { return SendBatch(*sent); }));
    } catch (const std::system_error&) {
      // No thread to be had (the machine is at its limit): send it here.
      return SendBatch(*sent);
    }
    return Status::Ok();
  };
  const uint64_t expected = before.st_size;
  uint64_t read_total = 0;
  for (bool eof = false; !eof;) {
    if (failed()) return Status::Unavailable("import stopped");
    // One byte more than the rest of the file, so the read that finds the
    // end usually comes in the same block.
    const uint64_t rest = expected > read_total ? expected - read_total : 0;
    const size_t want =
        static_cast<size_t>(std::clamp<uint64_t>(rest + 1, kMinRead, options_.batch_bytes));
    uint8_t* p;
    // A pooled block: this file's last block is let go first, so once its
    // upload is done (always, when it went up on this thread) it is the one
    // handed out again. A group's file takes the next piece of the group's
    // block, which the group keeps until it is sent.
    block = Buffer();
    block = group == nullptr ? read_blocks_.Allocate(options_.batch_bytes, &p)
                             : group->Reserve(want, &p);
    block_data = p;
    block_filled = 0;
    while (block_filled < want) {
      const ssize_t n = ::read(fd.get(), p + block_filled, want - block_filled);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "read " + job.src);
      }
      if (n == 0) {
        eof = true;
        break;
      }
      block_filled += n;
      read_total += n;
      counters_.read_bytes += n;
    }
    if (group != nullptr) group->Filled(block_filled);
    GEOFS_RETURN_IF_ERROR(eof ? splitter.WriteLast({p, block_filled})
                              : splitter.Write({p, block_filled}));
    if (group == nullptr) GEOFS_RETURN_IF_ERROR(upload_batch(eof));
  }
  for (; !uploads.empty(); uploads.pop_front()) GEOFS_RETURN_IF_ERROR(uploads.front().get());

  if (::fstat(fd.get(), st) != 0) return Status::FromErrno(errno, "fstat " + job.src);
  if (st->st_size != before.st_size || MtimeOf(*st) != MtimeOf(before) || offset != expected) {
    return Status::Aborted("size or mtime moved while reading");
  }
  return Status::Ok();
}

Status Importer::Impl::SendBatch(Batch& batch) {
  if (batch.empty()) return Status::Ok();
  const uint64_t owner = next_owner_++;
  std::promise<Status> promise;
  const std::shared_future<Status> stored = promise.get_future().share();
  std::vector<const std::pair<chunk::ChunkId, Buffer>*> mine;
  std::vector<std::shared_future<Status>> others;
  {
    std::lock_guard lock(claims_mu_);
    for (const auto& entry : batch) {
      auto [it, claimed] = claims_.try_emplace(entry.first, Claim{stored, owner});
      if (claimed) {
        mine.push_back(&entry);
      } else if (it->second.owner != owner) {
        others.push_back(it->second.stored);
      }
    }
  }
  const Status uploaded = Upload(mine);
  promise.set_value(uploaded);
  if (!uploaded.ok()) {
    // Let a later file try these chunks again.
    std::lock_guard lock(claims_mu_);
    for (const auto* entry : mine) {
      auto it = claims_.find(entry->first);
      if (it != claims_.end() && it->second.owner == owner) claims_.erase(it);
    }
  }
  batch.clear();
  GEOFS_RETURN_IF_ERROR(uploaded);
  for (const auto& other : others) GEOFS_RETURN_IF_ERROR(other.get());
  return Status::Ok();
}

Status Importer::Impl::Upload(const std::vector<const std::pair<chunk::ChunkId, Buffer>*>& chunks) {
  if (chunks.empty()) return Status::Ok();
  v1::FindMissingChunksRequest find;
  for (const auto* entry : chunks) {
    v1::ChunkRef* ref = find.add_chunks();
    ref->set_chunk_id(BytesOf(entry->first));
    ref->set_raw_length(entry->second.size());
  }
  v1::FindMissingChunksResponse found;
  GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::FindMissingChunks, find, &found));
  std::unordered_set<std::string> missing(found.missing().begin(), found.missing().end());
  std::vector<const std::pair<chunk::ChunkId, Buffer>*> to_send;
  for (const auto* entry : chunks) {
    if (missing.count(BytesOf(entry->first))) to_send.push_back(entry);
  }
  std::vector<hub::StoredChunk> uploads(to_send.size());
  GEOFS_RETURN_IF_ERROR(ParallelFor(to_send.size(), options_.compress_threads, [&](size_t i) {
    const auto& [id, raw] = *to_send[i];
    chunk::EncodedParts parts = chunk::EncodeChunkParts(raw, options_.codec);
    uploads[i] = {BytesOf(id), std::move(parts.header), std::move(parts.payload)};
    return Status::Ok();
  }));
  if (uploads.empty()) return Status::Ok();
  auto backoff = kFirstBackoff;
  for (int attempt = 1;; ++attempt) {
    auto put = hub_->PutChunks(uploads);
    if (put.ok()) {
      counters_.new_chunks += put->stored();
      counters_.new_raw_bytes += put->raw_bytes_stored();
      counters_.new_stored_bytes += put->bytes_stored();
      return Status::Ok();
    }
    if (put.status().code() != StatusCode::kUnavailable || attempt == kMaxAttempts) {
      return put.status();
    }
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
}

Status Importer::Impl::CommitFile(const FileJob& job, const struct stat& st,
                                  const std::vector<v1::Extent>& extents) {
  v1::Entry entry;
  if (job.existing) {
    entry = *job.existing;
  } else {
    GEOFS_ASSIGN_OR_RETURN(entry, Create(job.dir, job.name, v1::REGULAR, st));
  }
  const uint64_t size = st.st_size;
  v1::Attr attr = entry.attr();
  bool committed = false;
  for (int attempt = 1; !committed; ++attempt) {
    v1::GetChunkMapRequest map_req;
    *map_req.mutable_ref() = entry.ref();
    v1::GetChunkMapResponse map;
    GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::Stub::GetChunkMap, map_req, &map));
    attr = map.attr();
    if (map.attr().size() == size && SameExtents(map.extents(), extents)) break;

    v1::CommitFileRequest req;
    *req.mutable_ref() = entry.ref();
    req.set_expected_version(map.version());
    req.set_replace_all(true);
    for (const v1::Extent& e : extents) *req.add_extents() = e;
    req.set_new_size(size);
    *req.mutable_mtime() = hub::ToProto(MtimeOf(st));
    v1::CommitFileResponse resp;
    Status s = Call(&v1::Hub::Stub::CommitFile, req, &resp);
    if (s.ok()) {
      committed = true;
      attr = resp.wcc().after();
    } else if (s.code() != StatusCode::kAborted || attempt == kMaxCommitAttempts) {
      return s;
    }
  }
  return SetAttrs(entry.ref(), attr, st, /*set_mtime=*/!committed);
}

Importer::Importer(const HubClient* hub, ImportOptions options)
    : impl_(std::make_unique<Impl>(hub, std::move(options))) {}
Importer::~Importer() = default;

Result<ImportReport> Importer::Run(const std::string& src_dir, const std::string& hub_path) {
  return impl_->Run(src_dir, hub_path);
}

ImportStats Importer::Progress() const { return impl_->Progress(); }

}  // namespace geofs::cli
