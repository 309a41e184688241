#pragma once
// Cache keys: xxh3-128 over everything that can change a compiled kernel's bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache {

/// Version of the entry format and of the key recipe; part of every key.
inline constexpr std::uint32_t kFormatVersion = 1;

struct CacheKey {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  std::string hex() const;  ///< 32 lowercase hex digits
  static std::optional<CacheKey> parse(std::string_view hex);
  bool operator==(const CacheKey& o) const { return hi == o.hi && lo == o.lo; }
  bool operator!=(const CacheKey& o) const { return !(*this == o); }
};

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const {
    return std::size_t(k.hi ^ (k.lo * 0x9e3779b97f4a7c15ull));
  }
};

/// Everything a key covers (docs/cache.md).
struct KeyInputs {
  std::string_view source;      ///< main translation unit (with any generated functors)
  std::string_view expression;  ///< template instantiation
  /// (name, bytes) of every header the source includes, directly or not.
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  std::vector<std::string> options;  ///< NVRTC options, arch-free
  std::string_view arch;             ///< "sm_90a"
  std::string_view nvrtc_version;    ///< "13.0"
};

CacheKey compute_key(const KeyInputs& in);

}  // namespace kiln::cache
