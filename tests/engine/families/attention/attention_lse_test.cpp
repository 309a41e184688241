// attention_lse on the CPU: its shape, dtype and errors; the plans where it joins the attention
// kernel of the same call (one kernel writing both) and where it does not; the launch's pointers
// and the lse's strides in the parameter block; the fp64 reference on a call worked out by hand.
// Its values are checked on the GPU in attention_gpu_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <limits>

#include "engine/families/attention/attention.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace cfg = kiln::attention::config;

namespace {

// A graph of attention and attention_lse on q [2, 4, sq, d], k and v [2, 2, 50, d], with
// attributes `a` and `b`; `both` false leaves the attention result out.
Graph pair_graph(DType t, std::int64_t sq, std::int64_t d, const Attrs& a, const Attrs& b,
                 bool both = true) {
  Graph g;
  const auto q = g.input("q", {2, 4, sq, d}, t);
  const auto k = g.input("k", {2, 2, 50, d}, t);
  const auto v = g.input("v", {2, 2, 50, d}, t);
  if (both) g.output(kiln::apply("attention", {q, k, v}, a), "out");
  g.output(kiln::apply("attention_lse", {q, k, v}, b), "lse");
  return g;
}

cfg::Params params_of(const kiln::KernelLaunch& L) {
  cfg::Params p;
  REQUIRE(L.layout.params.at(0).size() == sizeof p);
  std::memcpy(&p, L.layout.params[0].data(), sizeof p);
  return p;
}

kiln::AttentionKernel call_with_lse(Shape q, bool store_out, bool hopper) {
  kiln::AttentionKernel k;
  k.q = desc(q, DType::bf16);
  k.k = k.v = desc({2, 2, 50, q.back()}, DType::bf16);
  k.out = k.q;
  k.q.data = 0x20000, k.k.data = 0x30000, k.v.data = 0x40000;
  k.out.data = store_out ? 0x10000 : 0;
  k.store_out = store_out;
  k.lse = desc(Shape(q.begin(), q.end() - 1), DType::f32);
  k.lse->data = 0x50000;
  k.max_shared = 227 * 1024;
  k.clusters = k.wgmma = hopper;
  k.sms = 132;
  return k;
}

}  // namespace

TEST_CASE("attention_lse: [..., Hq, Sq] f32, and attention's errors") {
  const auto q = desc({2, 8, 100, 64}, DType::bf16), kv = desc({2, 2, 300, 64}, DType::bf16);
  const kiln::TensorView r = kiln::infer("attention_lse", {q, kv, kv});
  CHECK(r.shape == Shape{2, 8, 100});
  CHECK(r.dtype == DType::f32);
  CHECK(kiln::infer("attention_lse", {desc({8, 1, 64}, DType::f16), desc({2, 9, 64}, DType::f16),
                                      desc({2, 9, 64}, DType::f16)})
            .shape == Shape{8, 1});
  CHECK_THROWS_WITH_AS(kiln::infer("attention_lse", {q, desc({2, 3, 300, 64}, DType::bf16),
                                                     desc({2, 3, 300, 64}, DType::bf16)}),
                       doctest::Contains("not a multiple of k and v's 3"), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("attention_lse", {q, kv, desc({2, 2, 300, 64}, DType::f16)}),
                  kiln::DtypeError);
}

TEST_CASE("attention_lse joins the attention kernel of the same call, on every path") {
  const Attrs causal = Attrs().set("causal", true);
  // A default given or left out is the same call.
  const Attrs spelled = Attrs(causal).set("causal_align", "top_left");
  struct Path {
    DType t;
    std::int64_t sq, d;
    const char* arch;
    const char* kernel;
  };
  for (const Path& p :
       {Path{DType::bf16, 300, 64, "sm_90a", "__wg128x"},
        Path{DType::bf16, 300, 64, "sm_80", "__fa"}, Path{DType::f16, 1, 128, "sm_90a", "__dec"},
        Path{DType::f32, 300, 64, "sm_90a", "__rows"}}) {
    CAPTURE(p.kernel);
    const Graph g = pair_graph(p.t, p.sq, p.d, causal, spelled);
    const auto kernels = kiln::Plan(g).kernels(p.arch);
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0].name.find(p.kernel) != std::string::npos);
    CHECK(kernels[0].ops == std::vector<std::string>{"out", "lse"});
    // Alone, the same kernel (it writes no attention result).
    const auto alone =
        kiln::Plan(pair_graph(p.t, p.sq, p.d, causal, causal, false)).kernels(p.arch);
    REQUIRE(alone.size() == 1);
    CHECK(alone[0].name.find(p.kernel) != std::string::npos);
    CHECK(alone[0].ops == std::vector<std::string>{"lse"});
  }
  // Another call (not causal, another scale): a kernel each. Unfused: a kernel each.
  CHECK(kiln::Plan(pair_graph(DType::bf16, 300, 64, causal, {})).kernels().size() == 2);
  CHECK(kiln::Plan(pair_graph(DType::bf16, 300, 64, causal, Attrs(causal).set("scale", 0.5)))
            .kernels()
            .size() == 2);
  CHECK(kiln::Plan(pair_graph(DType::bf16, 300, 64, causal, causal), false).kernels().size() == 2);
}

TEST_CASE("a joined attention launch: its result's pointer, the lse's, then q, k and v") {
  for (bool hopper : {false, true}) {
    CAPTURE(hopper);
    const kiln::KernelLaunch L =
        kiln::specialize_attention(call_with_lse({2, 4, 300, 64}, true, hopper), "at", {});
    CHECK(L.spec.name.find(hopper ? "__wg" : "__fa") != std::string::npos);
    CHECK(L.pointers == std::vector<std::uint64_t>{0x10000, 0x50000, 0x20000, 0x30000, 0x40000});
    REQUIRE(L.layout.pointers.size() == 5);
    CHECK(L.layout.pointers[0].offset == cfg::pointer_offset(cfg::kOut));
    CHECK(L.layout.pointers[1].offset == cfg::pointer_offset(cfg::kLsePointer));
    CHECK(L.layout.pointers[2].offset == cfg::pointer_offset(cfg::kQ));
    const cfg::Params p = params_of(L);
    CHECK(p.ptr[cfg::kLsePointer] == 0x50000);
    // The lse [2, 4, 300] row-major: rows 1 apart, heads 300, no columns.
    CHECK(p.s[cfg::kLse].row == 1);
    CHECK(p.s[cfg::kLse].head == 300);
    CHECK(p.s[cfg::kLse].col == 0);
    CHECK(p.s[cfg::kLse].batch[2] == 1200);
    if (!hopper) continue;
    // The TMA maps of q, k and v name their pointers, after the two outputs.
    REQUIRE(L.layout.maps.size() == 3);
    for (std::uint32_t i = 0; i < 3; ++i) CHECK(L.layout.maps[i].map.pointer == i + 2);
  }
  // The lse alone: no result pointer (its slot stays 0), q at pointer 1.
  const kiln::KernelLaunch alone =
      kiln::specialize_attention(call_with_lse({2, 4, 300, 64}, false, true), "at", {});
  CHECK(alone.pointers == std::vector<std::uint64_t>{0x50000, 0x20000, 0x30000, 0x40000});
  CHECK(params_of(alone).ptr[cfg::kOut] == 0);
  REQUIRE(alone.layout.maps.size() == 3);
  CHECK(alone.layout.maps[0].map.pointer == 1);
  // Decode and the plain kernel take the same slots.
  for (const Shape& q : {Shape{2, 4, 1, 64}, Shape{2, 4, 300, 20}}) {
    const kiln::KernelLaunch d =
        kiln::specialize_attention(call_with_lse(q, false, true), "at", {});
    CHECK(d.pointers.front() == 0x50000);
    CHECK(d.layout.pointers.front().offset == cfg::pointer_offset(cfg::kLsePointer));
  }
}

TEST_CASE("the fp64 lse reference on a call worked out by hand") {
  // q = [1, 0]; keys [2, 0] and [0, 1]; scale 1: scores 2 and 0, lse = log(e^2 + 1).
  const std::vector<double> q = {1, 0}, k = {2, 0, 0, 1}, v = {0, 0, 0, 0};
  kiln::test::AttentionRef a;
  a.q_shape = {1, 1, 1, 2};
  a.kv_shape = {1, 1, 2, 2};
  a.q = &q, a.k = &k, a.v = &v;
  a.scale = 1.0;
  double bound = 0;
  CHECK(kiln::test::attention_lse_row(a, 0, 0, 0, &bound) ==
        doctest::Approx(std::log(std::exp(2.0) + 1.0)).epsilon(1e-12));
  CHECK(bound == 2.0);  // the largest sum |q_c k_c| of a key
  // A batch without keys (kv_lens 0): the log of an empty sum.
  const std::vector<double> lens = {0};
  a.lens = &lens;
  CHECK(kiln::test::attention_lse_row(a, 0, 0, 0) == -std::numeric_limits<double>::infinity());
}

TEST_CASE("a second attention_lse of one call is a kernel of its own") {
  Graph g = pair_graph(DType::bf16, 300, 64, {}, {});
  const kiln::Value q(&g, g.find("q")), k(&g, g.find("k")), v(&g, g.find("v"));
  g.output(kiln::apply("attention_lse", {q, k, v}), "lse2");
  const auto kernels = kiln::Plan(g).kernels("sm_90a");
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].ops == std::vector<std::string>{"out", "lse"});
  CHECK(kernels[1].ops == std::vector<std::string>{"lse2"});
}

TEST_CASE("the plan's fp64 model has the joined lse (what the GPU fuzz checks it against)") {
  const Attrs causal = Attrs().set("causal", true);
  const Graph g = pair_graph(DType::bf16, 5, 8, causal, causal);
  std::mt19937_64 rng = kiln::test::make_rng(42);
  const kiln::test::HostInputs host = kiln::test::random_inputs(g, rng);
  const std::vector<std::vector<double>> whole = kiln::test::evaluate(g, host);
  const std::size_t lse = std::size_t(g.find("lse"));
  REQUIRE(whole[lse].size() == 2 * 4 * 5);
  for (bool fused : {true, false}) {
    CAPTURE(fused);
    const std::vector<double> model = kiln::test::model_plan(g, host, fused).model[lse];
    REQUIRE(model.size() == whole[lse].size());
    for (std::size_t i = 0; i < model.size(); ++i)  // the model rounds what a kernel stores: f32
      CHECK(model[i] == doctest::Approx(whole[lse][i]).epsilon(1e-7));
  }
}
