// The CPU that importing directories into a hub spends on the work the
// design requires, measured stage by stage with geofs's own code on one
// thread, and nothing else: no gRPC, no loopback socket, no threads, no
// writes, no namespace. Divided by the machine's cores it is a floor under
// the wall time of `geofsctl import`: no implementation of this design
// imports faster on that machine, however little overhead it has.
//
// The sources are taken in order as imports into one hub, so a chunk seen
// before is named (the client hashes it to ask the hub for it) but not
// encoded or verified again. Stages:
//   read    the files' bytes from the page cache, 16 MiB per read() as the
//           importer reads them
//   chunk   content-defined boundaries (Chunker, default options)
//   name    the client's SHA-256 of every chunk (ChunkId::Of)
//   encode  the stored form of each new chunk: the compressibility probe,
//           and zstd where it pays (EncodeChunkParts)
//   verify  the hub's check of each new chunk: decoding and SHA-256
//           (DecodeChunk)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunk/chunk_codec.h"
#include "geofs/status.h"

namespace geofs::bench {

struct ImportFloor {
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  uint64_t new_chunks = 0;
  uint64_t stored_bytes = 0;  // of the new chunks, in stored form
  // Thread CPU seconds per stage.
  double read = 0, chunk = 0, name = 0, encode = 0, verify = 0;

  double TotalCpu() const { return read + chunk + name + encode + verify; }
};

// Measures the regular files under each of `sources` (symlinks are not
// followed). An unreadable file, or a chunk that does not verify, is an
// error naming it.
Result<ImportFloor> MeasureImportFloor(const std::vector<std::string>& sources,
                                       const chunk::ChunkCodecOptions& codec);

}  // namespace geofs::bench
