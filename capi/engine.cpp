// The C API's engines: on a device or offline for an arch, their stream and cache counters.
#include <fmt/format.h>

#include "capi/handles.hpp"

using kiln::capi::guard;
using kiln::capi::need;

namespace {

constexpr const char* kCreateHint =
    " (create one with kiln_engine_create or kiln_engine_create_offline)";

kiln_status create(const char* function, kiln::EngineOptions o, kiln_engine** out) {
  return guard(function, [&] {
    need(out, "out", " (pass the address of a kiln_engine*)") = nullptr;
    *out = new kiln_engine{kiln::Engine(std::move(o)), std::nullopt};
  });
}

}  // namespace

void kiln::capi::set_cache(EngineOptions& o, const char* cache_dir) {
  if (!cache_dir) return;
  if (*cache_dir)
    o.cache_dir = cache_dir;
  else
    o.disk_cache = false;
}

extern "C" {

kiln_status kiln_engine_create(int32_t device, const char* cache_dir, kiln_engine** out) {
  if (device < 0)
    return guard("kiln_engine_create", [&] {
      throw kiln::ArgumentError(fmt::format(
          "device {} is negative: pass a CUDA device ordinal (0 for the first)", device));
    });
  kiln::EngineOptions o;
  o.device = device;
  kiln::capi::set_cache(o, cache_dir);
  return create("kiln_engine_create", std::move(o), out);
}

kiln_status kiln_engine_create_offline(const char* arch, const char* cache_dir, kiln_engine** out) {
  if (!arch)
    return guard("kiln_engine_create_offline", [] {
      kiln::capi::throw_null("arch", " (pass the arch to compile for, such as \"sm_90a\")");
    });
  kiln::EngineOptions o;
  o.offline = true;
  o.arch = arch;
  kiln::capi::set_cache(o, cache_dir);
  return create("kiln_engine_create_offline", std::move(o), out);
}

kiln_status kiln_engine_destroy(kiln_engine* engine) {
  return guard("kiln_engine_destroy", [&] { delete engine; });
}

kiln_status kiln_engine_arch(const kiln_engine* engine, const char** out) {
  return guard("kiln_engine_arch", [&] {
    const kiln_engine& e = need(engine, "engine", kCreateHint);
    need(out, "out", " (pass the address of a const char*)") = e.engine.arch().c_str();
  });
}

kiln_status kiln_engine_set_stream(kiln_engine* engine, void* stream) {
  return guard("kiln_engine_set_stream", [&] {
    kiln_engine& e = need(engine, "engine", kCreateHint);
    e.engine.set_stream(stream);
    e.stream = stream;
  });
}

kiln_status kiln_engine_use_own_stream(kiln_engine* engine) {
  return guard("kiln_engine_use_own_stream", [&] {
    kiln_engine& e = need(engine, "engine", kCreateHint);
    e.engine.use_own_stream();
    e.stream.reset();
  });
}

kiln_status kiln_engine_synchronize(kiln_engine* engine) {
  return guard("kiln_engine_synchronize",
               [&] { need(engine, "engine", kCreateHint).engine.synchronize(); });
}

kiln_status kiln_engine_cache_stats(const kiln_engine* engine, kiln_cache_stats* out) {
  return guard("kiln_engine_cache_stats", [&] {
    const kiln::CacheCounters c = need(engine, "engine", kCreateHint).engine.counters();
    need(out, "out", " (pass the address of a kiln_cache_stats)") = kiln::capi::stats_of(c);
  });
}

}  // extern "C"
