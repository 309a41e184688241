#include "engine/tune/tuner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/exec/plan_impl.hpp"
#include "engine/exec/precompile.hpp"
#include "engine/exec/workspace.hpp"
#include "engine/tune/tune_buffers.hpp"

namespace kiln::autotune {

std::vector<unsigned char> random_host(DType t, std::int64_t n, std::uint64_t seed) {
  std::vector<unsigned char> h(std::size_t(n) * size_of(t));
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull;
  for (std::int64_t i = 0; i < n; ++i) {  // splitmix64: a few ns a value (tuning fills GBs)
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double v = double(z >> 11) * 0x1.0p-53 * 6 - 3;
    store_element(t, t == DType::boolean ? double(v > 0) : v, h.data() + i * size_of(t));
  }
  return h;
}

namespace {

// `f(begin, end)` over [0, n) in chunks on up to all cores (outputs of hundreds of MB are
// compared per candidate); the chunks' results folded by `join`.
template <class F, class Join>
double over_chunks(std::size_t n, F f, Join join) {
  constexpr std::size_t kChunk = std::size_t(1) << 20;
  const std::size_t threads = std::min<std::size_t>(
      std::max(1u, std::thread::hardware_concurrency()), (n + kChunk - 1) / kChunk);
  if (threads <= 1) return f(0, n);
  std::vector<double> part(threads);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { part[t] = f(n * t / threads, n * (t + 1) / threads); });
  for (auto& th : pool) th.join();
  double r = part[0];
  for (std::size_t t = 1; t < threads; ++t) r = join(r, part[t]);
  return r;
}

// The scale of max_diff's differences below |a|: max(1, the mean |a| of a's finite values).
template <class Load>
double floor_of(const unsigned char* a, std::size_t n, std::size_t size, Load load) {
  std::atomic<std::size_t> finite{0};
  const double total = over_chunks(
      n,
      [&](std::size_t lo, std::size_t hi) {
        double sum = 0;
        std::size_t count = 0;
        for (std::size_t i = lo; i < hi; ++i)
          if (const double x = load(a + i * size); std::isfinite(x)) sum += std::fabs(x), ++count;
        finite += count;
        return sum;
      },
      [](double x, double y) { return x + y; });
  return std::max(1.0, finite ? total / double(finite) : 0.0);
}

template <class Load>
double worst_of(const unsigned char* a, const unsigned char* b, std::size_t n, std::size_t size,
                Load load, double floor) {
  return over_chunks(
      n,
      [&](std::size_t lo, std::size_t hi) {
        double worst = 0;
        for (std::size_t i = lo; i < hi; ++i) {
          const double x = load(a + i * size), y = load(b + i * size);
          if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return double(INFINITY);
            continue;
          }
          if (x != y) worst = std::max(worst, std::fabs(x - y) / std::max(floor, std::fabs(x)));
        }
        return worst;
      },
      [](double x, double y) { return std::max(x, y); });
}

float f32_at(const unsigned char* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// One loop per dtype: `run(size, load)` with the element size and loader of `t`.
template <class Run>
double by_dtype(DType t, Run run) {
  switch (t) {
    case DType::f32:
      return run(4, [](const unsigned char* p) { return double(f32_at(p)); });
    case DType::bf16:
      return run(2, [](const unsigned char* p) {
        const unsigned char w[4] = {0, 0, p[0], p[1]};
        return double(f32_at(w));
      });
    default:
      return run(size_of(t), [t](const unsigned char* p) { return load_element(t, p); });
  }
}

// max_diff's scale floor of `bytes` bytes at `a`.
double diff_floor(const unsigned char* a, std::size_t bytes, DType t) {
  return by_dtype(
      t, [&](std::size_t size, auto load) { return floor_of(a, bytes / size, size, load); });
}

// max_diff over `bytes` bytes at `a` and `b`, in place, with a's floor (diff_floor).
double max_diff_at(const unsigned char* a, const unsigned char* b, std::size_t bytes, DType t,
                   double floor) {
  return by_dtype(t, [&](std::size_t size, auto load) {
    return worst_of(a, b, bytes / size, size, load, floor);
  });
}

}  // namespace

double max_diff(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, DType t) {
  return a.size() != b.size()
             ? INFINITY
             : max_diff_at(a.data(), b.data(), a.size(), t, diff_floor(a.data(), a.size(), t));
}

double agreement_tolerance(DType t) {
  switch (t) {
    case DType::f32:
      return 1e-4;
    case DType::f16:
      return 2e-3;
    case DType::bf16:
      return 1e-2;
    case DType::boolean:
    case DType::i32:
    case DType::i64:
      return 0;
  }
  return 0;
}

namespace {

// Runs one candidate: its output on set 0 (poisoned first), then the median of event-timed
// runs, each on the next set.
Measurement run_candidate(Engine& engine, const detail::PlanImpl& p, const FusedGroup& grp,
                          Buffers& b, const Candidate& c, const TuneOptions& o) {
  std::vector<std::unique_ptr<LaunchParams>> params;
  std::vector<Tensor> workspaces;  // one each: a launch's workspace is its own
  KernelLaunch first;
  for (const std::vector<TensorView>& values : b.values) {
    KernelLaunch L = p.specialize(grp, values, p.graph, detail::impl_of(engine).target, c);
    params.push_back(std::make_unique<LaunchParams>(L));
    const std::size_t last = L.pointers.size() - (L.workspace ? 1 : 0);
    if (b.status.view().data != 0)  // the last of the group's pointers: kStatusNode's
      params.back()->set_pointer(last - 1, b.status.view().data);
    if (L.workspace) {
      workspaces.push_back(detail::zeroed_workspace(engine, L.workspace));
      params.back()->set_pointer(last, workspaces.back().view().data);
    }
    // Timed alone, after itself: beside a sibling part (LaunchConfig::beside) is the plan's.
    L.config.beside = false;
    if (params.size() == 1) first = std::move(L);
  }
  detail::EngineImpl& e = detail::impl_of(engine);
  const detail::LoadedKernel& k = e.prepare(first.spec);
  for (Tensor& t : b.checked) t.fill_bytes(0xff);
  e.launch(k, first, *params[0]);
  Measurement m;
  for (const Tensor& t : b.checked) {
    std::vector<unsigned char> h(t.bytes());
    t.copy_to_host(h.data());
    m.output.insert(m.output.end(), h.begin(), h.end());
  }
  std::size_t next = 0;
  m.us = 1e3 * engine.time_median_ms([&] { e.launch(k, first, *params[next++ % params.size()]); },
                                     o.warmup, o.reps);
  return m;
}

}  // namespace

// Each output's max_diff scale is the default's, computed once (`want` is always the
// default's output buffer).
Agree agreement(const Graph& graph, const FusedGroup& grp, double allowed) {
  auto floors = std::make_shared<std::map<const unsigned char*, double>>();
  return [&graph, &grp, allowed, floors](const std::vector<unsigned char>& got,
                                         const std::vector<unsigned char>& want) -> std::string {
    if (got.size() != want.size())
      return fmt::format("its output has {} bytes, the default's {}", got.size(), want.size());
    std::size_t at = 0;
    for (int id : grp.outputs) {
      const auto& n = graph.node(id);
      const std::size_t bytes = std::size_t(numel_of(n.shape)) * size_of(n.dtype);
      const unsigned char* w = want.data() + at;
      auto [floor, fresh] = floors->try_emplace(w, 0.0);
      if (fresh) floor->second = diff_floor(w, bytes, n.dtype);
      const double diff = max_diff_at(w, got.data() + at, bytes, n.dtype, floor->second);
      const double tolerance = std::max(agreement_tolerance(n.dtype), allowed);
      if (!(diff <= tolerance))
        return fmt::format(
            "its output {} differs from the default's by {:.3g} of max(|default|, {:.3g}) "
            "(at most {:.3g} for this {} kernel)",
            n.name, diff, floor->second, tolerance, name_of(n.dtype));
      at += bytes;
    }
    return "";
  };
}

namespace {

// Why `grp`'s kernel (`base`, tuned above already if `seen`) is not tuned; empty if it is.
std::string skip_reason(const FusedGroup& grp, const KernelLaunch& base, bool seen,
                        std::size_t candidates, const TuneOptions& o) {
  if (base.groups == 0) return "no work (an empty tensor)";
  if (seen) return "the same kernel was tuned above";
  if (candidates < 2) return "only the default can run on this device";
  if (grp.anchor && grp.anchor->fusion.in_place)
    return "it writes into its operand's memory (a slice_update)";
  if (o.deadline && std::chrono::steady_clock::now() > *o.deadline)
    return "the time budget ran out";
  return "";
}

}  // namespace

std::vector<KernelTuning> tune_graph(Engine& engine, const Graph& graph, const TuneOptions& o,
                                     std::set<std::string>& done) {
  detail::impl_of(engine).require_device("tuning");
  const detail::PlanImpl p(graph, fusion_enabled());
  if (p.dynamic())
    throw GraphError(
        "the graph has dynamic dims (\"?\"): tuning measures exact shapes; give it with the shapes "
        "to tune");
  const runtime::DeviceInfo& dev = detail::impl_of(engine).context->info();
  DeviceLimits limits;
  limits.max_threads_per_block = dev.max_threads_per_block;
  limits.max_registers_per_block = dev.max_registers_per_block;
  if (dev.max_shared_per_block_optin > 0)  // loaded kernels may use it all (module attribute)
    limits.max_shared_bytes_per_block = dev.max_shared_per_block_optin;
  std::vector<TensorView> descs;
  for (const auto& n : graph.nodes()) descs.push_back(detail::PlanImpl::desc(n));
  view_values(graph, p.groups, descs);
  std::vector<KernelTuning> out;
  for (const FusedGroup& grp : p.groups) {
    KernelTuning t;
    t.ops = p.ops_of(grp);
    const KernelLaunch base = p.specialize(grp, descs, graph, detail::impl_of(engine).target);
    t.kernel = base.spec.name;
    const std::string signature = compiler::spec_id(base.spec);
    const Space space = base.family->space(grp, base, detail::impl_of(engine).target);
    const std::vector<Candidate> candidates = space.candidates(limits);
    t.candidates = int(candidates.size());
    t.skipped = skip_reason(grp, base, done.count(signature) > 0, candidates.size(), o);
    if (!t.skipped.empty()) {
      out.push_back(std::move(t));
      continue;
    }
    // Compile every candidate at once (NVRTC on every core) into the cache; a candidate that
    // cannot be specialized or compiled fails again when measured, and is discarded there.
    std::vector<KernelSpec> specs;
    for (const Candidate& c : candidates) {
      try {
        specs.push_back(p.specialize(grp, descs, graph, detail::impl_of(engine).target, c).spec);
      } catch (const Error&) {
        continue;  // measuring it throws the same error: it is discarded with the reason
      }
    }
    PrecompileOptions po;
    po.archs = {engine.arch()};
    precompile_specs(specs, po, *detail::impl_of(engine).cache);

    Buffers buffers = make_buffers(engine, p, grp, dev.l2_bytes, descs);
    int index = 0;
    const Measure measure = [&](const Candidate& c) {
      if (o.progress) o.progress(t.kernel, index++, t.candidates);
      return run_candidate(engine, p, grp, buffers, c, o);
    };
    const Agree agree = agreement(graph, grp, base.agreement);
    t.result = tune(candidates, space.fallback, measure, agree);
    const auto& shaped = graph.node(grp.x >= 0 ? grp.x : grp.outputs.at(0));  // a row op's x
    cache::TuningRecord& r = t.record;
    r.signature = signature;
    r.kernel = t.kernel;
    r.shape_class = fmt::format("exact {}, contiguous, 16-byte aligned", to_string(shaped.shape));
    r.dtype = name_of(shaped.dtype);
    r.gpu = dev.name;
    r.arch = engine.arch();
    r.sm_count = dev.sm_count;
    r.driver = fmt::format("{}.{}", dev.driver_version / 1000, dev.driver_version % 1000 / 10);
    r.winner = t.result.winner;
    r.winner_us = t.result.winner_us;
    r.default_us = t.result.default_us;
    done.insert(signature);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<KernelTiming> time_kernels(Engine& engine, const Graph& graph, bool fuse,
                                       const TuneOptions& o) {
  detail::impl_of(engine).require_device("timing kernels");
  const detail::PlanImpl p(graph, fuse);
  if (p.dynamic())
    throw GraphError(
        "the graph has dynamic dims (\"?\"): timing needs exact shapes; give the graph with its "
        "shapes");
  std::vector<TensorView> descs;
  for (const auto& n : graph.nodes()) descs.push_back(detail::PlanImpl::desc(n));
  view_values(graph, p.groups, descs);
  std::vector<KernelTiming> out;
  for (const FusedGroup& grp : p.groups) {
    const KernelLaunch L =
        p.specialize_tuned(grp, descs, graph, detail::impl_of(engine).target, detail::impl_of(engine).tuning);
    KernelTiming t{L.spec.name, p.ops_of(grp), 0, 0};
    if (L.groups > 0) {
      Buffers b =
          make_buffers(engine, p, grp, detail::impl_of(engine).context->info().l2_bytes, descs);
      t.us = run_candidate(engine, p, grp, b, L.tunables, o).us;
      t.bytes = b.bytes;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace kiln::autotune
