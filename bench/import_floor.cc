#include "import_floor.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <span>
#include <unordered_set>

#include "chunk/chunk_id.h"
#include "chunk/chunker.h"

namespace geofs::bench {
namespace {

namespace fs = std::filesystem;

constexpr size_t kReadBytes = size_t{16} << 20;  // the importer's block

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Adds the thread CPU time from its construction to its destruction to
// `*total`.
class StageTimer {
 public:
  explicit StageTimer(double* total) : total_(total), start_(ThreadCpuSeconds()) {}
  ~StageTimer() { *total_ += ThreadCpuSeconds() - start_; }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  double* const total_;
  const double start_;
};

// Regular files under `root`, sorted: the importer's order within a
// directory, which decides which copy of a repeated chunk is the new one.
Result<std::vector<fs::path>> FilesUnder(const fs::path& root) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) files.push_back(it->path());
  }
  if (ec) return Status::FromErrno(ec.value(), "listing " + root.string());
  std::sort(files.begin(), files.end());
  return files;
}

// Reads the first `size` bytes of `path` into `buf`.
Status ReadInto(const fs::path& path, size_t size, uint8_t* buf) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "opening " + path.string());
  size_t done = 0;
  int err = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, buf + done, std::min(kReadBytes, size - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : 0;
      break;
    }
    done += n;
  }
  ::close(fd);
  if (err != 0) return Status::FromErrno(err, "reading " + path.string());
  if (done != size) return Status::Aborted(path.string() + " shrank while being read");
  return Status::Ok();
}

}  // namespace

Result<ImportFloor> MeasureImportFloor(const std::vector<std::string>& sources,
                                       const chunk::ChunkCodecOptions& codec) {
  GEOFS_RETURN_IF_ERROR(codec.Validate());
  const chunk::ChunkerOptions chunker;
  std::unordered_set<chunk::ChunkId, chunk::ChunkIdHash> seen;
  std::vector<uint8_t> file;  // reused, as the importer reuses its blocks
  ImportFloor floor;
  for (const std::string& source : sources) {
    GEOFS_ASSIGN_OR_RETURN(std::vector<fs::path> paths, FilesUnder(source));
    for (const fs::path& path : paths) {
      std::error_code ec;
      const size_t size = fs::file_size(path, ec);
      if (ec) return Status::FromErrno(ec.value(), path.string());
      if (file.size() < size) file.resize(size);  // first touch, not timed
      Status read;
      {
        StageTimer t(&floor.read);
        read = ReadInto(path, size, file.data());
      }
      GEOFS_RETURN_IF_ERROR(read);
      // The file as a Buffer the codec can slice; `file` outlives it.
      const Buffer whole(nullptr, file.data(), size);
      std::vector<size_t> lengths;
      {
        StageTimer t(&floor.chunk);
        lengths = chunk::ChunkLengths(whole.span(), chunker);
      }
      size_t offset = 0;
      for (const size_t length : lengths) {
        const Buffer raw = whole.Slice(offset, length);
        offset += length;
        chunk::ChunkId id;
        {
          StageTimer t(&floor.name);
          id = chunk::ChunkId::Of(raw.span());
        }
        ++floor.chunks;
        if (!seen.insert(id).second) continue;
        ++floor.new_chunks;
        chunk::EncodedParts parts;
        {
          StageTimer t(&floor.encode);
          parts = chunk::EncodeChunkParts(raw, codec);
        }
        // Joined, as the hub holds it after receiving it (the receive is
        // not part of the floor).
        uint8_t* joined;
        const Buffer stored = Buffer::Allocate(parts.size(), &joined);
        std::memcpy(joined, parts.header.data(), parts.header.size());
        std::memcpy(joined + parts.header.size(), parts.payload.data(), parts.payload.size());
        floor.stored_bytes += stored.size();
        Status verified;
        {
          StageTimer t(&floor.verify);
          verified = chunk::DecodeChunk(stored, id).status();
        }
        if (!verified.ok()) {
          return Status::Internal(path.string() +
                                  ": a chunk did not verify: " + verified.ToString());
        }
      }
      ++floor.files;
      floor.bytes += size;
    }
  }
  return floor;
}

}  // namespace geofs::bench
