#include "cache/tuning.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <kiln/error.hpp>
#include <nlohmann/json.hpp>

#include "cache/atomic_file.hpp"

namespace kiln::cache {
namespace {

using nlohmann::json;

json to_json_record(const TuningRecord& r) {
  return {{"signature", r.signature},
          {"kernel", r.kernel},
          {"shape_class", r.shape_class},
          {"dtype", r.dtype},
          {"gpu", r.gpu},
          {"arch", r.arch},
          {"sm_count", r.sm_count},
          {"driver", r.driver},
          {"winner", r.winner},
          {"winner_us", r.winner_us},
          {"default_us", r.default_us}};
}

TuningRecord from_json_record(const json& j) {
  TuningRecord r;
  r.signature = j.at("signature").get<std::string>();
  r.kernel = j.at("kernel").get<std::string>();
  r.shape_class = j.at("shape_class").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.gpu = j.at("gpu").get<std::string>();
  r.arch = j.at("arch").get<std::string>();
  r.sm_count = j.at("sm_count").get<int>();
  r.driver = j.at("driver").get<std::string>();
  r.winner = j.at("winner").get<std::map<std::string, int>>();
  r.winner_us = j.at("winner_us").get<double>();
  r.default_us = j.at("default_us").get<double>();
  if (r.signature.empty() || r.winner.empty())
    throw std::invalid_argument("empty signature or winner");
  return r;
}

}  // namespace

std::string TuningDb::path(const std::string& cache_dir, const std::string& gpu) {
  std::string name = gpu;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return fmt::format("{}/tuning/{}.json", cache_dir, name.empty() ? "_" : name);
}

TuningDb TuningDb::parse(const std::string& text, const std::string& origin) {
  try {
    const json j = json::parse(text);
    TuningDb db(j.at("gpu").get<std::string>());
    for (const json& r : j.at("records")) db.put(from_json_record(r));
    return db;
  } catch (const std::exception& e) {
    throw CacheError(
        fmt::format("{}: not a kiln tuning file ({}); re-export it with `kiln tune --export`",
                    origin, e.what()));
  }
}

TuningDb TuningDb::load(const std::string& cache_dir, const std::string& gpu) {
  const std::string file = path(cache_dir, gpu);
  std::string text, why;
  if (!read_file(file, text, why)) {
    if (errno == ENOENT) return TuningDb(gpu);
    throw CacheError(fmt::format("cannot read tuning records {}: {}", file, why));
  }
  TuningDb db = parse(text, file);
  if (db.gpu() != gpu)
    throw CacheError(
        fmt::format("{} holds records of '{}', not '{}'; remove it", file, db.gpu(), gpu));
  return db;
}

std::vector<TuningDb> TuningDb::load_all(const std::string& cache_dir) {
  std::vector<TuningDb> out;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(cache_dir + "/tuning", ec)) {
    if (f.path().extension() != ".json") continue;
    try {
      std::string text, why;
      if (!read_file(f.path().string(), text, why))
        throw CacheError(fmt::format("cannot read tuning records {}: {}", f.path().string(), why));
      out.push_back(parse(text, f.path().string()));
    } catch (const Error& e) {
      spdlog::warn("kiln: {}", e.what());
    }
  }
  return out;
}

const TuningRecord* TuningDb::find(const std::string& signature) const {
  auto it = std::find_if(records_.begin(), records_.end(),
                         [&](const TuningRecord& r) { return r.signature == signature; });
  return it == records_.end() ? nullptr : &*it;
}

void TuningDb::put(const TuningRecord& r) {
  if (r.gpu != gpu_)
    throw ArgumentError(fmt::format(
        "tuning record of {} for '{}' cannot go into the records of '{}'", r.kernel, r.gpu, gpu_));
  auto it = std::find_if(records_.begin(), records_.end(),
                         [&](const TuningRecord& x) { return x.signature == r.signature; });
  if (it == records_.end())
    records_.push_back(r);
  else
    *it = r;
}

int TuningDb::merge(const TuningDb& other) {
  if (other.gpu_ != gpu_)
    throw ArgumentError(
        fmt::format("these tuning records were measured on '{}'; this GPU is '{}': records are "
                    "never applied to another GPU (tune here with `kiln tune`)",
                    other.gpu_, gpu_));
  int changed = 0;
  for (const TuningRecord& r : other.records_) {
    const TuningRecord* mine = find(r.signature);
    if (mine && mine->winner_us <= r.winner_us) continue;
    put(r);
    ++changed;
  }
  return changed;
}

std::string TuningDb::to_json() const {
  json records = json::array();
  for (const TuningRecord& r : records_) records.push_back(to_json_record(r));
  return json{{"gpu", gpu_}, {"records", records}}.dump(1) + "\n";
}

void TuningDb::save(const std::string& cache_dir) const {
  make_dirs(cache_dir + "/tuning");  // the cache directory too, on a fresh machine
  write_file_atomically(path(cache_dir, gpu_), to_json(), 0600, "tuning records");
}

}  // namespace kiln::cache
