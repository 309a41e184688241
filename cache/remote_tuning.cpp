#include "cache/remote_tuning.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <kiln/error.hpp>

#include "cache/sign.hpp"

namespace kiln::cache {

namespace {

// Stores ARGV[2] at field ARGV[1] and its time ARGV[3] at us:ARGV[1], unless the time there is
// no slower; then the hash lives ARGV[4] seconds more. 1 where it stored, 0 where it kept.
constexpr const char* kFasterWins =
    "local old = redis.call('HGET', KEYS[1], 'us:' .. ARGV[1]) "
    "if old and tonumber(old) and tonumber(old) <= tonumber(ARGV[3]) then return 0 end "
    "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'us:' .. ARGV[1], ARGV[3]) "
    "redis.call('EXPIRE', KEYS[1], ARGV[4]) "
    "return 1";

constexpr std::string_view kTimePrefix = "us:";

// The record in a field's value, or why it is refused.
std::string record_in(const RemoteCache& remote, const std::string& gpu,
                      const std::string& signature, const std::string& value, TuningRecord* out) {
  const Unsigned body = unsign_body(remote.settings().sign_key, value);
  if (!body.problem.empty()) return body.problem;
  try {
    const TuningDb one = TuningDb::parse(std::string(body.body), "the remote record");
    if (one.gpu() != gpu) return "it is a record of another GPU (" + one.gpu() + ")";
    if (one.records().size() != 1 || one.records().front().signature != signature)
      return "it is not the record of this kernel";
    *out = one.records().front();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

std::string remote_tuning_key(const std::string& gpu) {
  return "kiln:v" + std::to_string(kFormatVersion) + ":tuning:" + gpu;
}

bool publish_tuning(RemoteCache& remote, const TuningRecord& r) {
  TuningDb one(r.gpu);
  one.put(r);
  const std::string value = sign_body(remote.settings().sign_key, one.to_json());
  const std::optional<RemoteCache::Answer> a = remote.call(
      {"EVAL", kFasterWins, "1", remote_tuning_key(r.gpu), r.signature, value,
       fmt::format("{:.6f}", r.winner_us), std::to_string(remote.settings().ttl.count())},
      "publish a tuning record");
  return a && a->number == 1;
}

RemoteTuning fetch_tuning(RemoteCache& remote, const std::string& gpu) {
  RemoteTuning out;
  out.records = TuningDb(gpu);
  const std::optional<RemoteCache::Answer> a =
      remote.call({"HGETALL", remote_tuning_key(gpu)}, "read tuning records");
  if (!a) return out;
  out.reached = true;
  for (std::size_t i = 0; i + 1 < a->items.size(); i += 2) {
    const std::string& field = a->items[i];
    if (field.compare(0, kTimePrefix.size(), kTimePrefix) == 0) continue;
    TuningRecord r;
    if (const std::string why = record_in(remote, gpu, field, a->items[i + 1], &r); !why.empty()) {
      ++out.refused;
      spdlog::warn("kiln: refused the tuning record of {} for '{}' in the remote cache {}: {}",
                   field, gpu, remote.settings().masked(), why);
      continue;
    }
    out.records.put(r);
  }
  return out;
}

std::size_t fill_missing(TuningDb& local, const TuningDb& remote) {
  std::size_t added = 0;
  for (const TuningRecord& r : remote.records())
    if (!local.find(r.signature)) local.put(r), ++added;
  return added;
}

TuningDb tuning_records(const std::string& dir, const std::string& gpu, KernelCache& cache) {
  TuningDb records(gpu);
  try {
    records = TuningDb::load(dir, gpu);
  } catch (const Error& e) {  // a bad records file costs speed, never a run
    spdlog::warn("kiln: tuning records not used: {}", e.what());
  }
  if (RemoteCache* remote = cache.remote()) {  // the fleet's, for the kernels not tuned here
    const RemoteTuning shared = fetch_tuning(*remote, gpu);
    cache.count_remote_refused(shared.refused);
    if (const std::size_t n = fill_missing(records, shared.records))
      spdlog::debug("kiln: {} tuning records of {} from the remote cache", n, gpu);
  }
  return records;
}

}  // namespace kiln::cache
