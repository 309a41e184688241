// A positive factor on attention's q or k (q * c, k / c) folds into its scale
// (engine/passes/fusion_scale.cpp): one kernel reading q and k where they are, the launch's
// scale times the factors; where the factor's value is read elsewhere or is one node for both,
// the elementwise kernel stays (a negative factor on q is its prologue instead); on the GPU,
// fused and unfused against fp64.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/families/attention/attention.hpp"
#include "engine/families/family.hpp"
#include "engine/passes/fusion.hpp"
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

Call inputs(DType t = DType::bf16) {
  Call c;
  kiln::test::add_attention_inputs(c, t);
  return c;
}

// The scale (log2 units) of the launch of `g`'s attention kernel, planned for sm_90a.
float scale_log2_of(const Graph& g) {
  cfg::Params p;
  kiln::test::attention_launch(g, p);
  return p.scale_log2;
}

}  // namespace

TEST_CASE("attention(q * c, k / c2, v): one kernel, its scale times c / c2") {
  Call c = inputs();
  const Value o =
      kiln::apply("attention", {c.q * 0.5, c.k / 4.0, c.v}, Attrs().set("causal", true));
  c.g.output(o, "out");
  const auto ks = kiln::Plan(c.g).kernels();
  REQUIRE(ks.size() == 1);
  CAPTURE(ks[0].name);
  // The kernel of the call without the factors: its code reads the scale from the launch.
  CHECK(ks[0].name.rfind("attention_bf16__wg", 0) == 0);
  CHECK(ks[0].ops.size() == 3);
  CHECK(kiln::test::kernel_count(c.g, false) == 3);
  const double want = 1.0 / std::sqrt(64.0) * 0.5 / 4.0 * std::log2(std::exp(1.0));
  CHECK(scale_log2_of(c.g) == doctest::Approx(want).epsilon(1e-6));
  // A scale given: times the factors as well; a number first (c * q) the same.
  Call d = inputs();
  d.g.output(kiln::apply("attention", {0.25 * d.q, d.k, d.v}, Attrs().set("scale", 2.0)), "out");
  CHECK(kiln::test::kernel_count(d.g) == 1);
  CHECK(scale_log2_of(d.g) == doctest::Approx(0.5 * std::log2(std::exp(1.0))).epsilon(1e-6));
}

TEST_CASE("attention with its lse: the factor folds once into the joined kernel") {
  Call c = inputs();
  const Value q = c.q * 0.3;
  c.g.output(kiln::apply("attention", {q, c.k, c.v}), "out");
  c.g.output(kiln::apply("attention_lse", {q, c.k, c.v}), "lse");
  const auto ks = kiln::Plan(c.g).kernels();
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].ops == std::vector<std::string>{c.g.node(q.id()).name, "out", "lse"});
  CHECK(scale_log2_of(c.g) == doctest::Approx(0.3 / 8.0 * std::log2(std::exp(1.0))).epsilon(1e-6));
}

TEST_CASE("a factor stays an elementwise kernel where folding it would change what runs") {
  {  // its value is an output too
    Call c = inputs();
    const Value q = c.q * 0.5;
    c.g.output(q, "q2");
    c.g.output(kiln::apply("attention", {q, c.k, c.v}), "out");
    CHECK(kiln::test::kernel_count(c.g) == 2);
  }
  {  // negative: not folded (the sm_90a kernel takes no negative scale), computed as q's
     // prologue instead (fusion_prologues.cpp)
    Call c = inputs();
    c.g.output(kiln::apply("attention", {c.q * -0.5, c.k, c.v}), "out");
    const auto ks = kiln::Plan(c.g).kernels();
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].name.rfind("mul__attention_bf16__wg", 0) == 0);
    CHECK(scale_log2_of(c.g) == doctest::Approx(0.125 * std::log2(std::exp(1.0))).epsilon(1e-6));
  }
  {  // one node for q and k: it folds for neither
    Call c = inputs();
    Graph g;
    const Value x = g.input("x", {2, 2, 300, 64}, DType::bf16);
    const Value s = x * 0.5;
    g.output(kiln::apply("attention", {s, s, x}), "out");
    CHECK(kiln::test::kernel_count(g) == 2);
  }
  {  // a chain of two (tanh then the factor): not folded, q's prologue as a whole
    Call c = inputs();
    c.g.output(kiln::apply("attention", {kiln::tanh(c.q) * 0.5, c.k, c.v}), "out");
    CHECK(kiln::test::kernel_count(c.g) == 1);
    CHECK(scale_log2_of(c.g) == doctest::Approx(0.125 * std::log2(std::exp(1.0))).epsilon(1e-6));
  }
  {  // k broadcast over heads (an expand) or k with D moved: attention would read x slower
    Call c = inputs();
    const Value kx = c.g.input("kx", {2, 1, 300, 64}, DType::bf16);
    const Value kb = kiln::apply("expand", {kx}, Attrs().set("shape", kiln::Shape{2, 2, 300, 64}));
    c.g.output(kiln::apply("attention", {c.q, kb * 0.5, c.v}), "out");
    CHECK(kiln::test::kernel_count(c.g) == 2);
    Call d = inputs();
    const Value kt = d.g.input("kt", {2, 2, 64, 300}, DType::bf16);
    const Value kp = kiln::apply("permute", {kt}, Attrs().set("dims", kiln::Shape{0, 1, 3, 2}));
    d.g.output(kiln::apply("attention", {d.q, kp * 0.5, d.v}), "out");
    CHECK(kiln::test::kernel_count(d.g) == 2);
  }
  {  // k as [B, S, H, D] permuted to [B, H, S, D]: read in place, the factor folded
    Call c = inputs();
    const Value ks = c.g.input("ks", {2, 300, 2, 64}, DType::bf16);
    const Value kp = kiln::apply("permute", {ks}, Attrs().set("dims", kiln::Shape{0, 2, 1, 3}));
    c.g.output(kiln::apply("attention", {c.q, kp * 0.5, c.v}), "out");
    CHECK(kiln::test::kernel_count(c.g) == 1);
  }
  {  // a slice_update writes the factor's memory: its kernel stays
    Call c = inputs();
    const Value m = c.q * 0.5;
    c.g.output(kiln::apply("attention", {m, c.k, c.v}), "out");
    const Value fresh = c.g.input("fresh", {2, 4, 1, 64}, DType::bf16);
    const Value u = kiln::apply("slice_update", {m, fresh}, Attrs().set("axis", 2).set("start", 0));
    c.g.output(u + 1.0, "w");
    CHECK(kiln::test::kernel_count(c.g) == 4);
  }
  {  // ... or the memory the factor reads (a KV cache): the factor is read before the write
    Call c = inputs();
    const Value fresh = c.g.input("fresh", {2, 2, 1, 64}, DType::bf16);
    const Value u =
        kiln::apply("slice_update", {c.k, fresh}, Attrs().set("axis", 2).set("start", 63));
    const Value ks = c.k * 0.5;
    c.g.output(kiln::apply("attention", {c.q, u, c.v}), "new");
    c.g.output(kiln::apply("attention", {c.q, ks, c.v}), "old");
    CHECK(kiln::test::kernel_count(c.g) == 4);
  }
  {  // a second attention reads the factor too: it is written once, for both
    Call c = inputs();
    const Value q = c.q * 0.5;
    c.g.output(kiln::apply("attention", {q, c.k, c.v}), "a");
    c.g.output(kiln::apply("attention", {q, c.k, c.v}, Attrs().set("causal", true)), "b");
    CHECK(kiln::test::kernel_count(c.g) == 3);
  }
}

TEST_CASE("the fp64 model of a folded plan agrees with the graph's") {
  Call c = inputs(DType::f32);
  c.g.output(kiln::apply("attention", {c.q * 0.7, c.k / 1.3, c.v}), "out");
  auto rng = kiln::test::make_rng(5);
  const kiln::test::HostInputs in = kiln::test::random_inputs(c.g, rng);
  const auto plan = kiln::test::evaluate_plan(c.g, in, true);
  const auto whole = kiln::test::evaluate(c.g, in);
  const int out = c.g.outputs()[0];
  REQUIRE(plan[std::size_t(out)].size() == whole[std::size_t(out)].size());
  for (std::size_t i = 0; i < whole[std::size_t(out)].size(); i += 97)
    CHECK(plan[std::size_t(out)][i] == doctest::Approx(whole[std::size_t(out)][i]).epsilon(1e-6));
}

TEST_CASE("gpu: attention with folded factors against fp64, fused and unfused, on each path" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(57);
  struct Path {
    DType t;
    std::int64_t sq, d;
  };
  // sm_90a's kernel (sm_80's mma kernel elsewhere), decode, the f32 kernel.
  for (const Path& p :
       {Path{DType::bf16, 300, 64}, Path{DType::f16, 1, 128}, Path{DType::f32, 77, 40}}) {
    Graph g;
    const Value q = g.input("q", {2, 4, p.sq, p.d}, p.t);
    const Value k = g.input("k", {2, 2, 300, p.d}, p.t);
    const Value v = g.input("v", {2, 2, 300, p.d}, p.t);
    const Value qs = q * 0.37, ks = k / 2.5;
    const Attrs causal = Attrs().set("causal", true).set("causal_align", "bottom_right");
    g.output(kiln::apply("attention", {qs, ks, v}, causal), "out");
    g.output(kiln::apply("attention_lse", {qs, ks, v}, causal), "lse");
    CAPTURE(g.to_json());
    CHECK(kiln::Plan(g).kernels().size() == 1);
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
  }
}
