// HMAC-SHA256 with OpenSSL's libcrypto (libssl-dev). cache/hmac_off.cpp stands in without it.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <kiln/error.hpp>

#include "cache/sign.hpp"

namespace kiln::cache {

bool signing_built() { return true; }

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key.data(), int(key.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &n) ||
      n != kMacBytes)
    throw CacheError(
        "OpenSSL could not compute an HMAC-SHA256 (libcrypto failed); check the "
        "OpenSSL installation, or unset KILN_REMOTE_CACHE_KEY");
  return std::string(reinterpret_cast<const char*>(mac), n);
}

}  // namespace kiln::cache
