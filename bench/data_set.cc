#include "data_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

namespace geofs::bench {
namespace {

namespace fs = std::filesystem;

constexpr char kManifestName[] = ".nfs-load-manifest";
constexpr size_t kWriteChunk = 1 << 20;

// SplitMix64: fast, and good enough that the bytes do not compress.
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void FillRandom(std::vector<uint64_t>& words, uint64_t& state) {
  for (uint64_t& w : words) w = SplitMix64(state);
}

std::string Numbered(char prefix, uint32_t n, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%c%0*u", prefix, width, n);
  return buf;
}

// Writes `size` pseudo-random bytes, seeded by `seed`, to a new file at `path`.
Status WriteFile(const fs::path& path, uint64_t size, uint64_t seed, std::vector<uint64_t>& buf) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, path.string());
  uint64_t state = seed;
  uint64_t left = size;
  Status status;
  while (left > 0 && status.ok()) {
    FillRandom(buf, state);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size() * sizeof(uint64_t)));
    const char* p = reinterpret_cast<const char*>(buf.data());
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fd, p + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        status = Status::FromErrno(errno, path.string());
        break;
      }
      done += static_cast<size_t>(w);
    }
    left -= n;
  }
  if (::close(fd) != 0 && status.ok()) status = Status::FromErrno(errno, path.string());
  return status;
}

Status MakeDir(const fs::path& path, fs::perms perms) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (!ec) fs::permissions(path, perms, ec);
  if (ec) return Status::IoError(path.string() + ": " + ec.message());
  return Status::Ok();
}

Status RemoveAll(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return Status::IoError(path.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

std::string DataSetSpec::Fingerprint() const {
  std::ostringstream out;
  out << "v1 big=" << big_file_bytes << " files=" << dataset_files << " per_dir=" << files_per_dir
      << " min=" << min_file_bytes << " max=" << max_file_bytes << " listing=" << listing_entries
      << " seed=" << seed;
  return out.str();
}

std::string DataSetDirName(uint32_t dir_index) { return Numbered('d', dir_index, 3); }
std::string DataSetFileName(uint32_t file_index) { return Numbered('f', file_index, 6) + ".bin"; }
std::string ListingEntryName(uint32_t entry_index) { return Numbered('e', entry_index, 6); }

std::string DataSetDirFor(const DataSetSpec& spec, uint32_t file_index) {
  return DataSetDirName(file_index / spec.files_per_dir);
}

uint32_t DataSetDirCount(const DataSetSpec& spec) {
  return (spec.dataset_files + spec.files_per_dir - 1) / spec.files_per_dir;
}

Status PrepareDataSet(const std::string& root_dir, const DataSetSpec& spec, bool* reused) {
  *reused = false;
  if (spec.files_per_dir == 0 || spec.min_file_bytes > spec.max_file_bytes) {
    return Status::InvalidArgument("bad data set spec: " + spec.Fingerprint());
  }
  const fs::path root(root_dir);
  if (!fs::is_directory(root)) return Status::NotFound(root_dir + " is not a directory");
  const fs::path manifest = root / kManifestName;
  {
    std::ifstream in(manifest);
    std::string line;
    if (in && std::getline(in, line) && line == spec.Fingerprint()) {
      *reused = true;
      // Files an interrupted meta run left behind would only slow the directory down.
      GEOFS_RETURN_IF_ERROR(RemoveAll(root / kMetaDirName));
      return MakeDir(root / kMetaDirName, fs::perms::all);
    }
  }

  // Invalidate first so that an interrupted preparation is never reused.
  GEOFS_RETURN_IF_ERROR(RemoveAll(manifest));
  for (const char* name : {kBigFileName, kDataSetDirName, kListingDirName, kMetaDirName}) {
    GEOFS_RETURN_IF_ERROR(RemoveAll(root / name));
  }

  std::vector<uint64_t> buf(kWriteChunk / sizeof(uint64_t));
  GEOFS_RETURN_IF_ERROR(WriteFile(root / kBigFileName, spec.big_file_bytes, spec.seed, buf));

  constexpr auto kDirPerms = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec;
  const fs::path dataset = root / kDataSetDirName;
  for (uint32_t d = 0; d < DataSetDirCount(spec); ++d) {
    GEOFS_RETURN_IF_ERROR(MakeDir(dataset / DataSetDirName(d), kDirPerms));
  }
  std::mt19937_64 sizes(spec.seed);
  std::uniform_int_distribution<uint32_t> size_dist(spec.min_file_bytes, spec.max_file_bytes);
  for (uint32_t i = 0; i < spec.dataset_files; ++i) {
    const fs::path path = dataset / DataSetDirFor(spec, i) / DataSetFileName(i);
    GEOFS_RETURN_IF_ERROR(WriteFile(path, size_dist(sizes), spec.seed + 1 + i, buf));
  }

  const fs::path listing = root / kListingDirName;
  GEOFS_RETURN_IF_ERROR(MakeDir(listing, kDirPerms));
  for (uint32_t i = 0; i < spec.listing_entries; ++i) {
    GEOFS_RETURN_IF_ERROR(WriteFile(listing / ListingEntryName(i), 0, 0, buf));
  }
  GEOFS_RETURN_IF_ERROR(MakeDir(root / kMetaDirName, fs::perms::all));

  std::ofstream out(manifest, std::ios::trunc);
  out << spec.Fingerprint() << "\n";
  out.close();
  if (!out) return Status::IoError(manifest.string() + ": write failed");
  return Status::Ok();
}

}  // namespace geofs::bench
