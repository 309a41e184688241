// Signed remote entries (KILN_REMOTE_CACHE_KEY, cache/sign.hpp): with a key, readers load only
// entries signed with it; a real redis-server started by the tests.

#include <doctest/doctest.h>
#include <stdlib.h>

#include <kiln/error.hpp>

#include "cache/kernel_cache.hpp"
#include "cache/sign.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/cache/redis_server.hpp"
#include "tests/cache/remote_fixtures.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::Counting;
using kiln::test::kernel_of;
using kiln::test::key_of;
using kiln::test::machine;
using kiln::test::redis;
using kiln::test::RedisServer;
using kiln::test::skip_without_client;
using kiln::test::TempDir;
using kiln::test::Warnings;

namespace {

constexpr const char* kKey = "0123456789abcdef-fleet-key";
constexpr const char* kOtherKey = "fedcba9876543210-other-key";

bool skip_without_signing() {
  if (signing_built()) return false;
  MESSAGE("skipped: kiln was built without OpenSSL (KILN_OPENSSL, libssl-dev)");
  return true;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

}  // namespace

TEST_CASE("signing: HMAC-SHA256 is RFC 4231's, and a frame is checked in full") {
  if (skip_without_signing()) return;
  // RFC 4231, test case 2.
  CHECK(hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::string body = "an entry's bytes";
  const std::string framed = sign_body(kKey, body);
  CHECK(framed.size() == kSignatureMagic.size() + kMacBytes + body.size());
  CHECK(sign_body("", body) == body);
  CHECK(unsign_body(kKey, framed).body == body);
  CHECK(unsign_body(kKey, framed).problem.empty());
  CHECK(unsign_body("", framed).body == body);  // no key: a signed body is taken unchecked
  CHECK(unsign_body("", body).body == body);
  CHECK(unsign_body(kKey, body).problem.find("unsigned") != std::string::npos);
  CHECK(unsign_body(kOtherKey, framed).problem.find("does not match") != std::string::npos);
  std::string altered = framed;
  altered.back() ^= 1;
  CHECK(unsign_body(kKey, altered).problem.find("does not match") != std::string::npos);
  altered = framed;
  altered[kSignatureMagic.size() + 3] ^= 1;
  CHECK(unsign_body(kKey, altered).problem.find("does not match") != std::string::npos);
  CHECK(unsign_body(kKey, framed.substr(0, 20)).problem.find("truncated") != std::string::npos);
}

TEST_CASE("signing: KILN_REMOTE_CACHE_KEY is read, and a short one is a CacheError") {
  ::setenv("KILN_REMOTE_CACHE", "redis://h:1", 1);
  ::setenv("KILN_REMOTE_CACHE_KEY", kKey, 1);
  if (signing_built()) {
    const std::optional<RemoteSettings> s = remote_settings_from_env();
    REQUIRE(s);
    CHECK(s->sign_key == kKey);
    CHECK(s->masked().find(kKey) == std::string::npos);
    ::setenv("KILN_REMOTE_CACHE_KEY", "too-short", 1);
    try {
      remote_settings_from_env();
      FAIL("a 9-byte signing key was taken");
    } catch (const kiln::CacheError& e) {
      CHECK(std::string(e.what()).find("openssl rand -hex 32") != std::string::npos);
      CHECK(std::string(e.what()).find("too-short") == std::string::npos);  // never shown
    }
  } else {
    try {
      remote_settings_from_env();
      FAIL("a signing key was taken by a kiln without OpenSSL");
    } catch (const kiln::CacheError& e) {
      CHECK(std::string(e.what()).find("libssl-dev") != std::string::npos);
    }
  }
  ::unsetenv("KILN_REMOTE_CACHE");
  ::unsetenv("KILN_REMOTE_CACHE_KEY");
}

TEST_CASE("signing: with a key, only entries signed with it are loaded" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client() || skip_without_signing()) return;
  RedisServer server;
  TempDir a, b, c, d, e;
  Counting n;
  {
    KernelCache signer(machine(a.path(), server.url(), kKey));
    for (int i = 0; i < 3; ++i) signer.get(key_of(i), n.for_key(i));
  }
  {
    KernelCache unsigned_writer(machine(e.path(), server.url()));
    unsigned_writer.get(key_of(3), n.for_key(3));
  }
  CHECK(n.calls == 4);
  CHECK(redis(server, {"GETRANGE", remote_key(key_of(0)), "0", "7"}) == "KILNSIG1");
  // A signed frame around another key's entry: the MAC holds, the entry's key check refuses it.
  const std::string entry1 = encode_entry(key_of(1), kernel_of(1));
  redis(server, {"SET", remote_key(key_of(2)), sign_body(kKey, entry1)});
  Warnings warnings;
  {
    KernelCache reader(machine(b.path(), server.url(), kKey));
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i);
      const auto r = reader.get(key_of(i), n.for_key(i));
      CHECK(r.source == (i < 2 ? KernelCache::Source::remote : KernelCache::Source::compiled));
      CHECK(r.kernel->image == kernel_of(i).image);
    }
    CHECK(reader.counters().remote_hits == 2);
    CHECK(reader.counters().remote_refused == 2);  // another key's payload; the unsigned one
  }
  CHECK(n.calls == 6);
  CHECK(warnings.count("refused the entry of") == 2);
  CHECK(warnings.text().find("it is unsigned") != std::string::npos);
  CHECK(warnings.text().find(kKey) == std::string::npos);
  {
    KernelCache wrong_key(machine(c.path(), server.url(), kOtherKey));
    CHECK(wrong_key.get(key_of(0), n.for_key(0)).source == KernelCache::Source::compiled);
    CHECK(wrong_key.counters().remote_refused == 1);
  }
  CHECK(n.calls == 7);
  CHECK(warnings.text().find("does not match KILN_REMOTE_CACHE_KEY") != std::string::npos);
  // Without a key, a signed entry is read as any entry is (its MAC unchecked).
  KernelCache keyless(machine(d.path(), server.url()));
  CHECK(keyless.get(key_of(1), n.for_key(1)).source == KernelCache::Source::remote);
  CHECK(n.calls == 7);
}
