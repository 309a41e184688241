#include "cache/remote.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <memory>
#include <random>
#include <thread>
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
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::random_device random;
  const std::uint64_t r = std::uint64_t(random()) << 32 | random();
  lease_id_ = fmt::format("{}:{}:{:016x}", host, ::getpid(), r);
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
    out[i] = verified(keys[i], e->str, e->len);
    if (out[i].status == Status::hit) hits.push_back(args[i + 1]);
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

RemoteCache::Fetched RemoteCache::verified(const CacheKey& key, const char* bytes,
                                           std::size_t n) const {
  const Unsigned body = unsign_body(settings_.sign_key, std::string_view(bytes, n));
  if (!body.problem.empty()) return {Status::bad, std::nullopt, body.problem};
  Decoded d = decode_entry(body.body, key);
  if (!d.kernel) return {Status::bad, std::nullopt, d.problem};
  return {Status::hit, std::move(d.kernel), ""};
}

bool RemoteCache::put(const CacheKey& key, const CompiledKernel& kernel) {
  const SigpipeGuard guard;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!usable_locked()) return false;
  Reply r = command(
      context_, {"SET", remote_key(key), sign_body(settings_.sign_key, encode_entry(key, kernel)),
                 "EX", std::to_string(settings_.ttl.count())});
  if (!r || r->type == REDIS_REPLY_ERROR) {
    failed_locked("failed to store an entry (SET): " +
                  (!r ? context_error(context_) : reply_error(r.get())));
    return false;
  }
  return true;
}

std::optional<RemoteCache::Answer> RemoteCache::call(const std::vector<std::string>& args,
                                                     const std::string& what) {
  const SigpipeGuard guard;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!usable_locked()) return std::nullopt;
  Reply r = command(context_, args);
  if (!r || r->type == REDIS_REPLY_ERROR) {
    failed_locked("failed to " + what + " (" + args.front() +
                  "): " + (!r ? context_error(context_) : reply_error(r.get())));
    return std::nullopt;
  }
  Answer a;
  a.nil = r->type == REDIS_REPLY_NIL;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) a.text.assign(r->str, r->len);
  if (r->type == REDIS_REPLY_INTEGER) a.number = r->integer;
  if (r->type == REDIS_REPLY_ARRAY)
    for (std::size_t i = 0; i < r->elements; ++i) {
      const redisReply* e = r->element[i];
      a.items.emplace_back(e->type == REDIS_REPLY_STRING ? std::string(e->str, e->len) : "");
    }
  return a;
}

// Note: the lease is taken before the entry is read, in one pipelined round trip, so that a
// holder that published and released since the lookup is never missed (its entry is read).
std::optional<RemoteCache::Claim> RemoteCache::try_claim(const CacheKey& key) {
  const std::string lease = lease_key(key), entry = remote_key(key);
  const std::string ms = std::to_string(settings_.lease.count());
  const std::vector<std::vector<std::string>> commands{{"SET", lease, lease_id_, "NX", "PX", ms},
                                                       {"GET", entry}};
  for (const auto& c : commands) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const std::string& a : c) argv.push_back(a.data()), lens.push_back(a.size());
    redisAppendCommandArgv(context_, int(argv.size()), argv.data(), lens.data());
  }
  Reply replies[2];
  for (Reply& r : replies) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK) {
      failed_locked("failed to take a compile lease (SET NX): " + context_error(context_));
      return std::nullopt;
    }
    r.reset(static_cast<redisReply*>(raw));
  }
  const redisReply* set = replies[0].get();
  const redisReply* got = replies[1].get();
  if (set->type == REDIS_REPLY_ERROR || got->type == REDIS_REPLY_ERROR) {
    failed_locked("refused a compile lease (SET NX): " +
                  reply_error(set->type == REDIS_REPLY_ERROR ? set : got));
    return std::nullopt;
  }
  Claim c;
  c.leased = set->type == REDIS_REPLY_STATUS;  // OK; nil where another holds it
  // A bad entry counts as none here: the lookup before the claim refused (and counted) it, and
  // the lease holder's publish replaces it.
  if (got->type == REDIS_REPLY_STRING)
    if (Fetched f = verified(key, got->str, got->len); f.status == Status::hit)
      c.fetched = std::move(f);
  return c;
}

RemoteCache::Claim RemoteCache::claim(const CacheKey& key) {
  if (settings_.lease.count() == 0) return {};
  const auto give_up = std::chrono::steady_clock::now() + 2 * settings_.lease;
  const auto poll = std::clamp(settings_.lease / 200, std::chrono::milliseconds(5),
                               std::chrono::milliseconds(50));
  for (bool waited = false;; waited = true) {
    std::optional<Claim> c;
    {
      const SigpipeGuard guard;
      std::lock_guard<std::mutex> lock(mutex_);
      if (!usable_locked()) return Claim{false, waited, std::nullopt};
      c = try_claim(key);
    }
    if (!c) return Claim{false, waited, std::nullopt};  // it failed: compile, no lease
    c->waited = waited;
    if (c->fetched && c->leased) release(key);  // published meanwhile: the lease is not needed
    if (c->fetched) c->leased = false;
    if (c->fetched || c->leased) return *c;
    if (std::chrono::steady_clock::now() >= give_up) {
      spdlog::debug("kiln: gave up waiting for another machine's compile of {}", key.hex());
      return Claim{false, true, std::nullopt};
    }
    std::this_thread::sleep_for(poll);
  }
}

void RemoteCache::release(const CacheKey& key) {
  // Only a lease still this process's own: one that expired may be another machine's now.
  static const std::string kScript =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
      "return 0";
  const SigpipeGuard guard;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!usable_locked()) return;  // it expires
  Reply r = command(context_, {"EVAL", kScript, "1", lease_key(key), lease_id_});
  if (!r || r->type == REDIS_REPLY_ERROR)
    failed_locked("failed to release a compile lease (EVAL): " +
                  (!r ? context_error(context_) : reply_error(r.get())));
}

}  // namespace kiln::cache
