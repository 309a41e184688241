// q's elementwise producers as attention's prologue (engine/passes/fusion_prologues.cpp): the
// kernel computes q from the chain's inputs as its tile loads (kernel_templates/kiln/
// attention_prologue.cuh), so q is never written; where q is read elsewhere, touches an
// integer or passes the slots, its kernel stays; the fp64 model rounds q where the kernel does;
// NVRTC compiles of every path with nothing spilled; on the GPU, fused and unfused against fp64.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/attention/attention.hpp"
#include "tests/engine/families/attention/attention_launch.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Value;

namespace cfg = kiln::attention::config;

namespace {

using Call = kiln::test::AttentionCall;

// One attention over q computed from `x` [2, 4, sq, d] by `make` (k and v [2, 2, 300, d] of
// dtype `t`), its result an output.
template <class Make>
Call prologue_call(DType t, DType xt, std::int64_t sq, std::int64_t d, Make make,
                   const Attrs& a = {}) {
  Call c;
  const Value x = c.g.input("x", {2, 4, sq, d}, xt);
  c.k = c.g.input("k", {2, 2, 300, d}, t);
  c.v = c.g.input("v", {2, 2, 300, d}, t);
  c.q = make(c.g, x);
  c.g.output(kiln::apply("attention", {c.q, c.k, c.v}, a), "out");
  return c;
}

}  // namespace

TEST_CASE("attention(cast(x), k, v): one kernel computing q from x as it loads it") {
  const Call c = prologue_call(DType::bf16, DType::f32, 300, 64,
                               [](Graph&, Value x) { return kiln::cast(x, DType::bf16); });
  const auto ks = kiln::Plan(c.g).kernels();
  REQUIRE(ks.size() == 1);
  CAPTURE(ks[0].name);
  CHECK(ks[0].name.rfind("cast__attention_bf16__wg", 0) == 0);
  CHECK(kiln::test::kernel_count(c.g, false) == 2);
  // On sm_80 the mma kernel; the decode path for one query row.
  CHECK(kiln::test::plan_kernels(c.g, "sm_80").at(0).name.rfind("cast__attention_bf16__fa", 0) ==
        0);
  const Call d = prologue_call(DType::f16, DType::f32, 1, 128,
                               [](Graph&, Value x) { return kiln::cast(x, DType::f16); });
  CHECK(kiln::Plan(d.g).kernels().at(0).name.rfind("cast__attention_f16__dec", 0) == 0);
}

TEST_CASE("attention's prologue: a chain of several inputs, broadcast ones") {
  // q = tanh(x) * w + b, w over D and b over heads: one kernel.
  Call c = prologue_call(DType::bf16, DType::bf16, 300, 64, [](Graph& g, Value x) {
    const Value w = g.input("w", {64}, DType::bf16);
    const Value b = g.input("b", {1, 4, 1, 64}, DType::bf16);
    return kiln::tanh(x) * w + b;
  });
  CHECK(kiln::test::kernel_count(c.g) == 1);
  CHECK(kiln::Plan(c.g).kernels().at(0).name.rfind("tanh_mul_add__attention_bf16", 0) == 0);
  // Five inputs pass the four slots: the chain stays a kernel of its own.
  Call e = prologue_call(DType::bf16, DType::bf16, 300, 64, [](Graph& g, Value x) {
    Value q = x;
    for (const char* n : {"a", "b", "c", "d", "e"}) q = q + g.input(n, {64}, DType::bf16);
    return q;
  });
  CHECK(kiln::test::kernel_count(e.g) == 2);
}

TEST_CASE("q's producer stays a kernel where computing it in attention would change what runs") {
  {  // q is an output too
    Call c = prologue_call(DType::bf16, DType::f32, 300, 64,
                           [](Graph&, Value x) { return kiln::cast(x, DType::bf16); });
    c.g.output(c.q, "q");
    CHECK(kiln::test::kernel_count(c.g) == 2);
  }
  {  // q from an integer tensor (the f32 body would not hold an i32 exactly)
    Call c = prologue_call(DType::bf16, DType::i32, 300, 64,
                           [](Graph&, Value x) { return kiln::cast(x, DType::bf16); });
    CHECK(kiln::test::kernel_count(c.g) == 2);
  }
  {  // a second attention reads q too: written once, for both
    Call c = prologue_call(DType::bf16, DType::f32, 300, 64,
                           [](Graph&, Value x) { return kiln::cast(x, DType::bf16); });
    c.g.output(kiln::apply("attention", {c.q, c.k, c.v}, Attrs().set("causal", true)), "b");
    CHECK(kiln::test::kernel_count(c.g) == 3);
  }
  {  // q and k one node
    Graph g;
    const Value x = g.input("x", {2, 2, 300, 64}, DType::f32);
    const Value s = kiln::cast(x, DType::bf16);
    g.output(kiln::apply("attention", {s, s, s}), "out");
    CHECK(kiln::test::kernel_count(g) == 2);
  }
}

TEST_CASE("attention_lse alone computes q's prologue too") {
  Graph g;
  const Value x = g.input("x", {2, 4, 300, 64}, DType::f32);
  const Value k = g.input("k", {2, 2, 300, 64}, DType::bf16);
  const Value q = kiln::cast(x * g.input("w", {64}, DType::f32), DType::bf16);
  g.output(kiln::apply("attention_lse", {q, k, k}), "lse");
  const auto ks = kiln::Plan(g).kernels();
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].name.rfind("mul_cast__attention_lse", 0) == 0);
  const auto specs = kiln::plan_specs(g, true, {}, nullptr, "sm_90a");
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].expression.find("kiln_prologue>") != std::string::npos);
}

TEST_CASE("a factor folded for k that q's chain computes too keeps q's kernel") {
  // m = x * 0.5 is k (one key, broadcast) and a term of q: folding it for k and computing it in
  // q's prologue would apply the factor to k twice or not at all.
  Graph g;
  const Value x = g.input("x", {2, 2, 1, 64}, DType::bf16);
  const Value z = g.input("z", {2, 2, 7, 64}, DType::bf16);
  const Value m = x * 0.5;
  g.output(kiln::apply("attention", {m + z, m, g.input("v", {2, 2, 1, 64}, DType::bf16)}), "o");
  CHECK(kiln::test::kernel_count(g) == 2);
  cfg::Params p{};
  kiln::test::attention_launch(g, p);
  CHECK(p.scale_log2 == doctest::Approx(0.5 / 8.0 * std::log2(std::exp(1.0))).epsilon(1e-6));
}

TEST_CASE("q and k cast in one elementwise kernel: q moves into attention, k's kernel stays") {
  Graph g;
  const Value xq = g.input("xq", {2, 2, 300, 64}, DType::f32);
  const Value xk = g.input("xk", {2, 2, 300, 64}, DType::f32);
  const Value v = g.input("v", {2, 2, 300, 64}, DType::bf16);
  const Value q = kiln::cast(xq, DType::bf16), k = kiln::cast(xk, DType::bf16);
  g.output(kiln::apply("attention", {q, k, v}), "out");
  const auto ks = kiln::Plan(g).kernels();
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].ops == std::vector<std::string>{g.node(k.id()).name});
  CHECK(ks[1].name.rfind("cast__attention_bf16", 0) == 0);
}

TEST_CASE(
    "an attention launch's prologue slots: q's its first input's, the others after the "
    "epilogue's") {
  Graph g;
  const Value x = g.input("x", {2, 4, 300, 64}, DType::f32);
  const Value k = g.input("k", {2, 2, 300, 64}, DType::bf16);
  const Value v = g.input("v", {2, 2, 300, 64}, DType::bf16);
  const Value q = kiln::cast(x * g.input("w", {64}, DType::f32) + 0.25, DType::bf16);
  const Value r = g.input("r", {2, 4, 300, 64}, DType::bf16);
  g.output(kiln::apply("attention", {q, k, v}) * 3.0 + r, "y");
  cfg::Params p{};
  const kiln::KernelLaunch L = kiln::test::attention_launch(g, p);
  // Pointers: y (kOut), x (kQ), k, v, w (slot 1), r (slot 0).
  const auto epi = [](int j) {
    return std::uint32_t(offsetof(cfg::Params, epi) + offsetof(cfg::EpilogueSlots, ptr) + 8 * j);
  };
  REQUIRE(L.layout.pointers.size() == 6);
  CHECK(L.layout.pointers[1].offset == cfg::pointer_offset(cfg::kQ));
  CHECK(L.layout.pointers[4].offset == epi(1));
  CHECK(L.layout.pointers[5].offset == epi(0));
  // x (f32, q's shape) row-major; w over D only.
  CHECK(p.s[cfg::kQ].row == 64);
  CHECK(p.s[cfg::kQ].head == 300 * 64);
  CHECK(p.epi.s[1].head == 0);
  CHECK(p.epi.s[1].row == 0);
  CHECK(p.epi.s[1].col == 1);
  CHECK(p.epi.s[1].batch[cfg::kBatchDims - 1] == 0);
  // The epilogue's scalar first, then the prologue's.
  CHECK(p.epi.scalars[0] == 3.0f);
  CHECK(p.epi.scalars[1] == 0.25f);
  CHECK(L.spec.expression.find("kiln_epilogue, kiln_prologue>") != std::string::npos);
}

TEST_CASE("the fp64 model of a plan with a prologue rounds q where the kernel does") {
  // q = a + b in bf16: the unfused plan stores q rounded; the kernel rounds it as its tile lands.
  Call c = prologue_call(DType::bf16, DType::bf16, 33, 64, [](Graph& g, Value x) {
    return x + g.input("b", {2, 4, 33, 64}, DType::bf16);
  });
  auto rng = kiln::test::make_rng(9);
  const kiln::test::HostInputs in = kiln::test::random_inputs(c.g, rng);
  const auto plan = kiln::test::evaluate_plan(c.g, in, true);
  const auto whole = kiln::test::evaluate_plan(c.g, in, false);
  const int out = c.g.outputs()[0];
  REQUIRE(plan[std::size_t(out)].size() == whole[std::size_t(out)].size());
  double worst = 0;
  for (std::size_t i = 0; i < whole[std::size_t(out)].size(); ++i)
    worst = std::max(worst, std::fabs(plan[std::size_t(out)][i] - whole[std::size_t(out)][i]));
  CHECK(worst < 1e-9);
}

namespace {

struct Path {
  DType t;
  std::int64_t sq, d;
  bool mask;
};

// sm_90a's wgmma kernel (D 64, D 40 padded), its mma kernel (a mask), decode, the f32 kernel,
// D 256 on mma.
const Path kPaths[] = {{DType::bf16, 300, 64, false}, {DType::bf16, 129, 40, false},
                       {DType::f16, 129, 128, true},  {DType::bf16, 1, 128, false},
                       {DType::f16, 7, 80, false},    {DType::f32, 77, 40, false},
                       {DType::bf16, 70, 256, false}};

// attention over q = cast(x * w + b) (x f32 [2, 4, sq, d], w over D, b over heads), causal
// bottom-right, with a residual epilogue and the lse.
Graph path_graph(const Path& p) {
  Graph g;
  const Value x = g.input("x", {2, 4, p.sq, p.d}, DType::f32);
  const Value w = g.input("w", {p.d}, DType::f32);
  const Value b = g.input("b", {1, 4, 1, p.d}, p.t);
  const Value q = p.t == DType::f32 ? x * w + b : kiln::cast(x * w, p.t) + b;
  const Value k = g.input("k", {2, 2, 300, p.d}, p.t), v = g.input("v", {2, 2, 300, p.d}, p.t);
  std::vector<kiln::GraphArg> args = {q, k, v};
  if (p.mask) args.push_back(g.input("m", {p.sq, 300}, DType::boolean));
  const Attrs causal = Attrs().set("causal", true).set("causal_align", "bottom_right");
  const Value o = kiln::apply("attention", args, causal);
  g.output(o + g.input("r", {2, 4, p.sq, p.d}, p.t), "y");
  g.output(kiln::apply("attention_lse", args, causal), "lse");
  return g;
}

}  // namespace

TEST_CASE("attention kernels with a prologue NVRTC-compile on every path with nothing spilled") {
  for (const char* arch : {"sm_90a", "sm_80"})
    for (const Path& p : kPaths) {
      const Graph g = path_graph(p);
      const auto specs = kiln::plan_specs(g, true, {}, nullptr, arch);
      REQUIRE(specs.size() == 1);
      const kiln::CompiledKernel ck = kiln::compiler::compile(specs[0], arch);
      CAPTURE(arch);
      CAPTURE(specs[0].name);
      CHECK(specs[0].name.rfind("attention", 0) != 0);  // q's producers named first
      CHECK(ck.spill_bytes == 0);
    }
}

TEST_CASE("the sm_90a attention tuning space with a prologue compiles with nothing spilled") {
  kiln::autotune::DeviceLimits lim;
  lim.max_shared_bytes_per_block = 227 * 1024;
  lim.max_threads_per_block = 1024;
  for (std::int64_t d : {128, 192}) {
    const Graph g = path_graph({DType::bf16, 1000, d, false});
    std::vector<kiln::TensorView> values;
    for (const auto& n : g.nodes()) values.push_back(kiln::test::desc(n.shape, n.dtype));
    const kiln::Target target = kiln::target_of("sm_90a");
    const std::vector<kiln::FusedGroup> groups = kiln::fuse(g, true);
    REQUIRE(groups.size() == 1);
    kiln::view_values(g, groups, values);
    const kiln::GroupWork w{groups[0], values, g, g, target};
    const kiln::KernelLaunch base = kiln::specialize_group(w);
    const auto c = kiln::autotune::attention_space(base, 227 * 1024, true).candidates(lim);
    CHECK(c.size() >= 3u);
    for (const kiln::Tunables& t : c) {
      const kiln::KernelLaunch L = kiln::specialize_group(w, t);
      const kiln::CompiledKernel ck = kiln::compiler::compile(L.spec, "sm_90a");
      CAPTURE(L.spec.name);
      CHECK(ck.spill_bytes == 0);
      CHECK(ck.log.find("serialized") == std::string::npos);
    }
  }
}

TEST_CASE("gpu: attention with a prologue against fp64, fused and unfused, on each path" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(67);
  for (const Path& p : kPaths) {
    const Graph g = path_graph(p);
    CAPTURE(g.to_json());
    CHECK(kiln::Plan(g).kernels().size() == 1);
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
  }
  // attention_lse alone with a prologue.
  {
    Graph l;
    const Value x = l.input("x", {2, 4, 129, 64}, DType::f32);
    const Value k = l.input("k", {2, 2, 300, 64}, DType::bf16);
    l.output(kiln::apply("attention_lse", {kiln::cast(x, DType::bf16), k, k}), "lse");
    for (const auto& f : kiln::test::check_on_gpu(e, l, rng, true)) FAIL_CHECK(f);
  }
  // Several items a block on the persistent sm_90a path: q's tiles rewritten item after item.
  Graph g;
  const Value x = g.input("x", {1, 8, 1000, 128}, DType::f32);
  const Value k = g.input("k", {1, 8, 1000, 128}, DType::bf16);
  g.output(kiln::apply("attention", {kiln::cast(x, DType::bf16), k, k * 0.5}), "out");
  for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
}
