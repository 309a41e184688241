#include "cache/remote.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <ctime>
#include <memory>
#include <utility>

#include "cache/entry.hpp"
#include "cache/sign.hpp"

namespace kiln::cache {

namespace {

// hiredis writes with write(2): a server gone away would raise SIGPIPE, which kills a process
// that has not ignored it. Blocked around each call; one raised meanwhile is taken back.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
};

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

timeval timeval_of(std::chrono::milliseconds ms) {
  return timeval{time_t(ms.count() / 1000), suseconds_t((ms.count() % 1000) * 1000)};
}

std::string context_error(const redisContext* c) {
  if (!c) return "out of memory";
  return c->errstr[0] ? std::string(c->errstr) : "I/O error";
}

// A command's reply; none (the context's error then says why) where the call failed.
Reply command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(
      static_cast<redisReply*>(redisCommandArgv(c, int(argv.size()), argv.data(), lens.data())));
}

std::string reply_error(const redisReply* r) {
  return r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "an unexpected reply";
}

}  // namespace

bool remote_cache_built() { return true; }

RemoteCache::RemoteCache(RemoteSettings settings) : settings_(std::move(settings)) {
  if (!settings_.sign_key.empty() && !signing_built())
    hmac_sha256(settings_.sign_key, "");  // the CacheError that says how to get OpenSSL
}

RemoteCache::~RemoteCache() {
  if (context_) redisFree(context_);
}

bool RemoteCache::off() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !context_ && std::chrono::steady_clock::now() < off_until_;
}

std::string RemoteCache::describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!context_ && std::chrono::steady_clock::now() < off_until_)
    return settings_.masked() + " (off: " + problem_ + ")";
  return settings_.masked();
}

std::uint64_t RemoteCache::errors() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return errors_;
}

void RemoteCache::failed_locked(const std::string& why) {
  ++errors_;
  if (context_) redisFree(context_);
  context_ = nullptr;
  problem_ = why;
  off_until_ = std::chrono::steady_clock::now() + settings_.backoff;
  if (std::exchange(warned_, true)) {
    spdlog::debug("kiln: the remote cache {} is still unusable: {}", settings_.masked(), why);
    return;
  }
  spdlog::warn(
      "kiln: the remote cache {} {}; it is off for {} s (kernels come from the local cache or "
      "are compiled); check the server or KILN_REMOTE_CACHE",
      settings_.masked(), why, settings_.backoff.count());
}

bool RemoteCache::usable_locked() {
  if (context_) return true;
  if (std::chrono::steady_clock::now() < off_until_) return false;
  const timeval tv = timeval_of(settings_.timeout);
  context_ = redisConnectWithTimeout(settings_.host.c_str(), settings_.port, tv);
  if (!context_ || context_->err) {
    failed_locked("cannot be reached: " + context_error(context_));
    return false;
  }
  if (redisSetTimeout(context_, tv) != REDIS_OK) {
    failed_locked("cannot take a timeout: " + context_error(context_));
    return false;
  }
  std::vector<std::vector<std::string>> setup;
  if (!settings_.password.empty()) {
    if (settings_.user.empty())
      setup.push_back({"AUTH", settings_.password});
    else
      setup.push_back({"AUTH", settings_.user, settings_.password});
  }
  if (settings_.db) setup.push_back({"SELECT", std::to_string(settings_.db)});
  for (const auto& args : setup) {
    Reply r = command(context_, args);
    if (!r) {
      failed_locked("did not answer " + args[0] + ": " + context_error(context_));
      return false;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      failed_locked("refused " + args[0] + ": " + reply_error(r.get()));
      return false;
    }
  }
  if (std::exchange(warned_, false))
    spdlog::info("kiln: the remote cache {} answers again", settings_.masked());
  return true;
}

std::vector<RemoteCache::Fetched> RemoteCache::get(const std::vector<CacheKey>& keys) {
  std::vector<Fetched> out(keys.size());
  if (keys.empty()) return out;
  const SigpipeGuard guard;
  std::lock_guard<std::mutex> lock(mutex_);
  if (const std::uint64_t before = errors_; !usable_locked()) {
    if (errors_ != before)
      for (Fetched& f : out) f.status = Status::error;
    return out;
  }
  std::vector<std::string> args{"MGET"};
  for (const CacheKey& k : keys) args.push_back(remote_key(k));
  Reply r = command(context_, args);
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != keys.size()) {
    const std::string why = !r ? context_error(context_) : reply_error(r.get());
    failed_locked("failed a lookup (MGET): " + why);
    for (Fetched& f : out) f.status = Status::error;
    return out;
  }
  std::vector<std::string> hits;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_STRING) {
      out[i].status = e->type == REDIS_REPLY_NIL ? Status::miss : Status::bad;
      if (out[i].status == Status::bad) out[i].problem = "not a string";
      continue;
    }
    const Unsigned body = unsign_body(settings_.sign_key, std::string_view(e->str, e->len));
    if (!body.problem.empty()) {
      out[i] = {Status::bad, std::nullopt, body.problem};
      continue;
    }
    Decoded d = decode_entry(body.body, keys[i]);
    if (!d.kernel) {
      out[i] = {Status::bad, std::nullopt, d.problem};
      continue;
    }
    out[i] = {Status::hit, std::move(d.kernel), ""};
    hits.push_back(args[i + 1]);
  }
  // The hits' TTLs, refreshed in one pipelined round trip; a failure here only warns.
  const std::string ttl = std::to_string(settings_.ttl.count());
  for (const std::string& h : hits) {
    const char* argv[] = {"EXPIRE", h.data(), ttl.data()};
    const std::size_t lens[] = {6, h.size(), ttl.size()};
    redisAppendCommandArgv(context_, 3, argv, lens);
  }
  for (std::size_t i = 0; i < hits.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK) {
      failed_locked("failed to refresh entries' lifetime (EXPIRE): " + context_error(context_));
      break;
    }
    freeReplyObject(raw);
  }
  return out;
}

bool RemoteCache::put(const CacheKey& key, const CompiledKernel& kernel) {
  const SigpipeGuard guard;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!usable_locked()) return false;
  Reply r = command(context_, {"SET", remote_key(key),
                               sign_body(settings_.sign_key, encode_entry(key, kernel)), "EX",
                               std::to_string(settings_.ttl.count())});
  if (!r || r->type == REDIS_REPLY_ERROR) {
    failed_locked("failed to store an entry (SET): " +
                  (!r ? context_error(context_) : reply_error(r.get())));
    return false;
  }
  return true;
}

}  // namespace kiln::cache
