// HMAC-SHA256 in a kiln built without OpenSSL (KILN_OPENSSL=OFF, or AUTO where libcrypto was
// not found): signing is a CacheError that says how to get it. cache/hmac.cpp is the real one.
#include <kiln/error.hpp>

#include "cache/sign.hpp"

namespace kiln::cache {

bool signing_built() { return false; }

std::string hmac_sha256(std::string_view, std::string_view) {
  throw CacheError(
      "signed remote cache entries (KILN_REMOTE_CACHE_KEY) need OpenSSL, and this kiln was built "
      "without it (libcrypto was not found at build time, or it was configured with "
      "-DKILN_OPENSSL=OFF): install libssl-dev (scripts/setup.sh does) and rebuild kiln, or "
      "unset KILN_REMOTE_CACHE_KEY");
}

}  // namespace kiln::cache
