// The C API's plans: fused from a graph, compiled on an engine (offline too), run and replayed
// on tensor descriptors by name, on a stream per call or the engine's; precompile for an arch.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <kiln/tune.hpp>
#include <map>

#include "cache/disk_cache.hpp"
#include "cache/kernel_cache.hpp"
#include "capi/handles.hpp"

using kiln::capi::guard;
using kiln::capi::need;

namespace {

constexpr const char* kPlanHint = " (create one with kiln_plan_create)";
constexpr const char* kEngineHint =
    " (create one with kiln_engine_create or kiln_engine_create_offline)";

using Views = std::map<std::string, kiln::TensorView>;

// The descriptors `ts` by `names`; `what` is "input" or "output".
Views named(const char* const* names, const kiln_tensor* ts, std::size_t n, const char* what) {
  Views out;
  if (n == 0) return out;
  if (!names || !ts)
    throw kiln::ArgumentError(fmt::format("{}s: {} is NULL but their count is {}", what,
                                          names ? "the descriptors" : "the names", n));
  for (std::size_t i = 0; i < n; ++i) {
    if (!names[i]) throw kiln::ArgumentError(fmt::format("{} name {} is NULL", what, i));
    const std::string name = names[i];
    const kiln_tensor& t = ts[i];
    auto label = [&] { return fmt::format("{} '{}'", what, kiln::printable_name(name)); };
    // The label names a descriptor only in messages: built where view_of can refuse it, not on
    // every call of a hot loop.
    const bool sound =
        t.rank >= 0 && (t.rank == 0 || t.shape) && t.dtype >= KILN_F32 && t.dtype <= KILN_I64;
    if (!out.emplace(name, kiln::capi::view_of(t, sound ? std::string() : label())).second)
      throw kiln::ArgumentError(fmt::format("{} is given twice", label()));
  }
  return out;
}

// A run writes into the caller's memory only: every output of the graph must be given.
void require_outputs(const kiln::Graph& g, const Views& outputs) {
  for (int id : g.outputs()) {
    const std::string& name = g.node(id).name;
    if (!outputs.count(name))
      throw kiln::ArgumentError(fmt::format(
          "output '{}' is not given: pass a descriptor of memory you own for every output of "
          "the graph",
          kiln::printable_name(name)));
  }
}

template <class Call>
kiln_status run_on(const char* function, const kiln_plan* plan, kiln_engine* engine,
                   const char* const* input_names, const kiln_tensor* inputs, size_t n_inputs,
                   const char* const* output_names, const kiln_tensor* outputs, size_t n_outputs,
                   void* stream, Call call) {
  return guard(function, [&] {
    const kiln::Plan& p = need(plan, "plan", kPlanHint).plan;
    kiln_engine& e = need(engine, "engine", kEngineHint);
    const Views in = named(input_names, inputs, n_inputs, "input");
    const Views out = named(output_names, outputs, n_outputs, "output");
    require_outputs(p.graph(), out);
    if (!stream) return call(p, e.engine, in, out);
    e.engine.set_stream(stream);
    auto restore = [&] {
      if (e.stream)
        e.engine.set_stream(*e.stream);
      else
        e.engine.use_own_stream();
    };
    try {
      call(p, e.engine, in, out);
    } catch (...) {
      try {
        restore();
      } catch (...) {  // the run's error is the one to report
      }
      throw;
    }
    restore();
  });
}

// Precompiling keeps nothing unless it can write its cache directory: refused up front, as
// `kiln precompile` does ("" asks for memory only: a check that the kernels compile).
void require_writable(const char* cache_dir) {
  if (cache_dir && !*cache_dir) return;
  const kiln::cache::KernelCacheOptions co = kiln::cache::cache_options(
      cache_dir ? std::optional<std::string>(cache_dir) : std::nullopt, true, 0, {});
  if (!co.dir)
    throw kiln::CacheError(
        "there is no disk cache to write into (KILN_DISABLE_DISK_CACHE is set): unset it, or "
        "pass cache_dir \"\" to compile into memory only");
  const kiln::cache::DiskCache disk(*co.dir);  // CacheError if it is not a usable directory
  if (::access(disk.dir().c_str(), W_OK) != 0)
    throw kiln::CacheError(fmt::format(
        "cannot write into the cache directory {}: pass a writable cache_dir", disk.dir()));
}

}  // namespace

extern "C" {

kiln_status kiln_plan_create(const kiln_graph* graph, int fuse, kiln_plan** out) {
  return guard("kiln_plan_create", [&] {
    need(out, "out", " (pass the address of a kiln_plan*)") = nullptr;
    const kiln::Graph& g =
        need(graph, "graph", " (create one with kiln_graph_create or kiln_graph_from_json)").graph;
    *out = new kiln_plan{kiln::Plan(g, fuse != 0)};
  });
}

kiln_status kiln_plan_destroy(kiln_plan* plan) {
  return guard("kiln_plan_destroy", [&] { delete plan; });
}

kiln_status kiln_plan_compile(const kiln_plan* plan, kiln_engine* engine, size_t* kernels) {
  return guard("kiln_plan_compile", [&] {
    const kiln::Plan& p = need(plan, "plan", kPlanHint).plan;
    const auto records = p.compile(need(engine, "engine", kEngineHint).engine);
    if (kernels) *kernels = records.size();
  });
}

kiln_status kiln_plan_run(const kiln_plan* plan, kiln_engine* engine,
                          const char* const* input_names, const kiln_tensor* inputs,
                          size_t n_inputs, const char* const* output_names,
                          const kiln_tensor* outputs, size_t n_outputs, void* stream) {
  return run_on("kiln_plan_run", plan, engine, input_names, inputs, n_inputs, output_names, outputs,
                n_outputs, stream,
                [](const kiln::Plan& p, kiln::Engine& e, const Views& in, const Views& out) {
                  p.run(e, in, out);
                });
}

kiln_status kiln_plan_output(const kiln_plan* plan, const char* const* input_names,
                             const kiln_tensor* inputs, size_t n_inputs, const char* name,
                             int32_t* dtype, int32_t* rank, int64_t* shape, int32_t max_rank) {
  return guard("kiln_plan_output", [&] {
    const kiln::Plan& p = need(plan, "plan", kPlanHint).plan;
    const std::string wanted = kiln::capi::text(name, "name");
    need(rank, "rank", " (pass the address of an int32_t for the rank)") = -1;
    const Views outs = p.outputs(named(input_names, inputs, n_inputs, "input"));
    const auto it = outs.find(wanted);
    if (it == outs.end()) {
      std::vector<std::string> names;
      for (const auto& [n, v] : outs) names.push_back(kiln::printable_name(n));
      throw kiln::ArgumentError(
          fmt::format("'{}' is not an output of the plan's graph (its outputs: {})",
                      kiln::printable_name(wanted), fmt::join(names, ", ")));
    }
    const kiln::Shape& s = it->second.shape;
    if (shape && max_rank < std::int32_t(s.size()))
      throw kiln::ArgumentError(fmt::format(
          "output '{}' has rank {} but shape has room for max_rank {}: pass max_rank >= {}",
          kiln::printable_name(wanted), s.size(), max_rank, s.size()));
    if (shape) std::copy(s.begin(), s.end(), shape);
    if (dtype) *dtype = std::int32_t(it->second.dtype);
    *rank = std::int32_t(s.size());
  });
}

kiln_status kiln_plan_replay(const kiln_plan* plan, kiln_engine* engine,
                             const char* const* input_names, const kiln_tensor* inputs,
                             size_t n_inputs, const char* const* output_names,
                             const kiln_tensor* outputs, size_t n_outputs, void* stream) {
  return run_on("kiln_plan_replay", plan, engine, input_names, inputs, n_inputs, output_names,
                outputs, n_outputs, stream,
                [](const kiln::Plan& p, kiln::Engine& e, const Views& in, const Views& out) {
                  p.replay(e, in, out);
                });
}

kiln_status kiln_precompile(const kiln_graph* graph, const char* arch, const char* cache_dir,
                            kiln_cache_stats* stats) {
  return guard("kiln_precompile", [&] {
    const kiln::Graph& g =
        need(graph, "graph", " (create one with kiln_graph_create or kiln_graph_from_json)").graph;
    kiln::EngineOptions o;
    o.offline = true;
    o.arch = kiln::capi::text(arch, "arch");
    kiln::capi::set_cache(o, cache_dir);
    require_writable(cache_dir);
    kiln::Engine engine(std::move(o));
    kiln::Plan(g).compile(engine);
    const kiln::CacheCounters c = engine.counters();
    if (stats) *stats = kiln::capi::stats_of(c);
  });
}

kiln_status kiln_tune(kiln_engine* engine, const kiln_graph* graph, double budget_s,
                      size_t* tuned) {
  return guard("kiln_tune", [&] {
    kiln::Engine& e = need(engine, "engine", kEngineHint).engine;
    const kiln::Graph& g =
        need(graph, "graph", " (create one with kiln_graph_create or kiln_graph_from_json)").graph;
    std::size_t n = 0;
    for (const kiln::TunedKernel& k : kiln::tune(e, {g}, budget_s)) n += k.skipped.empty();
    if (tuned) *tuned = n;
  });
}

}  // extern "C"
