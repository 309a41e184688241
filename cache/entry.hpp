#pragma once
// The on-disk entry format (docs/cache.md), little-endian:
//   0  magic "KILNKERN"        8 bytes
//   8  format version          u32
//  12  metadata length M       u32
//  16  key                     16 bytes (hi, lo)
//  32  payload size P          u64
//  40  checksum                u64, xxh3-64 of metadata and payload
//  48  metadata                M bytes of JSON (names, arch, registers, compile ms)
//  48+M payload                P bytes (cubin or PTX)

#include <optional>
#include <string>
#include <string_view>

#include "cache/key.hpp"
#include "stages/kernel.hpp"

namespace kiln::cache {

inline constexpr std::size_t kHeaderBytes = 48;

std::string encode_entry(const CacheKey& key, const CompiledKernel& kernel);

struct Decoded {
  std::optional<CompiledKernel> kernel;
  std::string problem;  ///< why it was rejected, when kernel is empty
};

/// Verifies magic, version, key, sizes and checksum; never throws on bad bytes.
Decoded decode_entry(std::string_view bytes, const CacheKey& expected);

/// The key stored in an entry's header, if the header is readable (for listing).
std::optional<CacheKey> peek_key(std::string_view bytes);

}  // namespace kiln::cache
