#include "cache/key.hpp"

#include <fmt/format.h>
#include <xxhash.h>

namespace kiln::cache {
namespace {

// Each field is hashed as tag, length, bytes, so no two different inputs share a stream.
void field(XXH3_state_t* st, char tag, std::string_view bytes) {
  const std::uint64_t n = bytes.size();
  XXH3_128bits_update(st, &tag, 1);
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, bytes.data(), bytes.size());
}

}  // namespace

std::string CacheKey::hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

std::optional<CacheKey> CacheKey::parse(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  CacheKey k;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    std::uint64_t v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      return std::nullopt;
    std::uint64_t& half = i < 16 ? k.hi : k.lo;
    half = (half << 4) | v;
  }
  return k;
}

CacheKey compute_key(const KeyInputs& in) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  const std::uint32_t version = kFormatVersion;
  field(st, 'V', std::string_view(reinterpret_cast<const char*>(&version), sizeof version));
  field(st, 'S', in.source);
  field(st, 'E', in.expression);
  for (auto& [name, bytes] : in.headers) {
    field(st, 'H', name);
    field(st, 'h', bytes);
  }
  for (auto& o : in.options) field(st, 'O', o);
  field(st, 'A', in.arch);
  field(st, 'N', in.nvrtc_version);
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return {h.high64, h.low64};
}

}  // namespace kiln::cache
