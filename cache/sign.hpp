#pragma once
// Signed remote values. With KILN_REMOTE_CACHE_KEY set, what kiln publishes to the remote is
//   "KILNSIG1" (8 bytes) | HMAC-SHA256(key, body) (32 bytes) | body
// where the body is an entry (cache/entry.hpp) or a tuning record; readers with the key refuse
// a body that is unsigned or signed otherwise. The checksum inside an entry finds damage; only
// the MAC stops a writer without the key. The MAC is OpenSSL's (cache/hmac.cpp); a kiln built
// without it has cache/hmac_off.cpp, and then a key is a CacheError.

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::cache {

inline constexpr std::string_view kSignatureMagic = "KILNSIG1";
inline constexpr std::size_t kMacBytes = 32;
/// The shortest key taken: 16 bytes (128 bits, from e.g. `openssl rand -hex 32`).
inline constexpr std::size_t kMinSigningKeyBytes = 16;

/// Whether this kiln can sign (OpenSSL's libcrypto at build time; CMake's KILN_OPENSSL).
bool signing_built();

/// HMAC-SHA256 of `data` under `key`: 32 bytes. Throws CacheError in a kiln built without it.
std::string hmac_sha256(std::string_view key, std::string_view data);

/// `body` signed with `key` (the frame above); `key` empty: `body` as it is.
std::string sign_body(std::string_view key, std::string body);

struct Unsigned {
  std::string_view body;  ///< the body inside the frame (or the whole value), when no problem
  std::string problem;    ///< why it is refused; empty when it is not
};
/// The body of a remote value. With a key, only a frame signed with that key is taken (the MAC
/// compared in constant time). Without one, a signed frame's body is taken unchecked (a fleet
/// where some machines sign) and an unsigned value as it is.
Unsigned unsign_body(std::string_view key, std::string_view value);

}  // namespace kiln::cache
