#include "cache/sign.hpp"

namespace kiln::cache {

namespace {

bool same_bytes(std::string_view a, std::string_view b) {  // in time independent of the bytes
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string sign_body(std::string_view key, std::string body) {
  if (key.empty()) return body;
  std::string out(kSignatureMagic);
  out += hmac_sha256(key, body);
  out += body;
  return out;
}

Unsigned unsign_body(std::string_view key, std::string_view value) {
  const bool framed = value.substr(0, kSignatureMagic.size()) == kSignatureMagic;
  if (!framed) {
    if (key.empty()) return {value, ""};
    return {{},
            "it is unsigned, and KILN_REMOTE_CACHE_KEY is set: only entries signed with that "
            "key are loaded (a writer without it published this one)"};
  }
  constexpr std::size_t kHead = kSignatureMagic.size() + kMacBytes;
  if (value.size() < kHead) return {{}, "its signature is truncated"};
  const std::string_view body = value.substr(kHead);
  if (key.empty()) return {body, ""};
  if (!same_bytes(value.substr(kSignatureMagic.size(), kMacBytes), hmac_sha256(key, body)))
    return {{},
            "its signature does not match KILN_REMOTE_CACHE_KEY (signed with another key, or "
            "altered after signing)"};
  return {body, ""};
}

}  // namespace kiln::cache
