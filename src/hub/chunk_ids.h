// Conversions between the two spellings of a chunk's name: the chunk
// layer's chunk::ChunkId and the namespace's meta::ChunkId (raw bytes).
#pragma once

#include <algorithm>

#include "chunk/chunk_id.h"
#include "meta/types.h"

namespace geofs::hub {

inline meta::ChunkId ToMetaId(const chunk::ChunkId& id) {
  meta::ChunkId out;
  std::copy(id.bytes().begin(), id.bytes().end(), out.begin());
  return out;
}

inline chunk::ChunkId ToChunkId(const meta::ChunkId& id) {
  // 32 bytes into a 32-byte id cannot fail.
  return *chunk::ChunkId::FromBytes(id);
}

}  // namespace geofs::hub
