// CRC32C (Castagnoli): the checksum of cache files and journal records.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run
// time; inputs of 12 KiB and more as three interleaved streams) and a
// table-driven fallback otherwise; all give identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace geofs {

// The CRC32C of `data` continued from `crc` (the value returned for the bytes
// before it; 0 for the first piece), so that
// Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b). Thread-safe.
uint32_t Crc32c(uint32_t crc, std::span<const uint8_t> data);

// The portable implementation, exposed so tests can compare both paths.
uint32_t Crc32cPortable(uint32_t crc, std::span<const uint8_t> data);

// Whether Crc32c() uses the hardware instruction.
bool Crc32cIsHardware();

}  // namespace geofs
