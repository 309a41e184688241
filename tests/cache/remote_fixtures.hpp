#pragma once
// What the remote cache's tests share: a "machine" (a kernel cache
// with its own directory and the remote at a URL), a raw command's reply.

#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "tests/cache/log_capture.hpp"
#include "tests/cache/redis_server.hpp"

namespace kiln::test {

/// A machine's cache: its own directory, the remote at `url`, entries signed with `sign_key`.
inline cache::KernelCacheOptions machine(const std::string& dir, const std::string& url,
                                         const std::string& sign_key = "") {
  cache::KernelCacheOptions o;
  o.dir = dir;
  o.remote = cache::parse_redis_url(url, "test");
  o.remote->sign_key = sign_key;
  return o;
}

/// A raw command's reply as text (a string, a status, a number), for the tests' own look.
inline std::string redis(const RedisServer& server, const std::vector<std::string>& args) {
  const std::optional<std::string> out = server.command(args);
  REQUIRE(out);
  return *out;
}

}  // namespace kiln::test
