#pragma once
// What the remote cache's tests share: a capture of the warnings, a "machine" (a kernel cache
// with its own directory and the remote at a URL), a raw command's reply.

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "tests/cache/redis_server.hpp"

namespace kiln::test {

/// The warnings of the default logger, in place of its sinks, while it lives.
class Warnings {
 public:
  Warnings()
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)),
        sinks_(spdlog::default_logger()->sinks()),
        level_(spdlog::get_level()) {
    spdlog::default_logger()->sinks() = {sink_};
    spdlog::set_level(spdlog::level::warn);
  }
  ~Warnings() {
    spdlog::set_level(level_);
    spdlog::default_logger()->sinks() = sinks_;
  }
  Warnings(const Warnings&) = delete;
  Warnings& operator=(const Warnings&) = delete;
  int count(const std::string& what) const {
    const std::string text = text_.str();
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::vector<spdlog::sink_ptr> sinks_;
  spdlog::level::level_enum level_;
};

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
