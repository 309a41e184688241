// The fp64 reference itself (CPU): a plan's model rounds where the plan's kernels store and at
// casts, and nowhere else.
#include "tests/engine/reference.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ops/op.hpp"
#include "tools/npy.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

TEST_CASE("reference: a plan's model rounds what its kernels store, and casts; nothing else") {
  Graph g;
  auto x = g.input("x", {2, 8}, DType::f32);
  const kiln::Attrs to_bf16{{"dtype", "bf16"}}, to_f32{{"dtype", "f32"}};
  auto b = kiln::apply("cast", {x * 3.0}, to_bf16);  // id 2
  auto y = b * 1.1;                                  // id 3, bf16
  auto w = kiln::apply("cast", {y}, to_f32);         // id 4
  g.output(y);
  g.output(w);
  // x = f32(1.1); x * 3 = 3.30000007 lies between the bf16 values 3.296875 and 3.3125 (2^-6
  // apart in [2, 4)) and the cast rounds it to 3.296875. y = 3.296875 * 1.1 = 3.6265625 is
  // stored as bf16 3.625; inside the fused kernel, w reads y before that rounding.
  std::vector<float> xs(16, 1.1f);
  std::map<std::string, std::vector<unsigned char>> in;
  in["x"].resize(64);
  std::memcpy(in["x"].data(), xs.data(), 64);
  const auto fused = kiln::test::evaluate_plan(g, in, true);
  const auto unfused = kiln::test::evaluate_plan(g, in, false);
  const auto exact = kiln::test::evaluate(g, in);
  CHECK(exact[2][0] == 3.0 * double(1.1f));  // evaluate() rounds nowhere
  CHECK(fused[3][0] == 3.625);
  CHECK(fused[4][0] == doctest::Approx(3.6265625).epsilon(1e-7));  // stored as f32
  CHECK(unfused[2][0] == 3.296875);
  CHECK(unfused[3][0] == 3.625);
  CHECK(unfused[4][0] == 3.625);
  CHECK(fused[2].empty());  // not stored by the fused plan

  const auto jittered = kiln::test::evaluate_plan(g, in, true, 1);
  CHECK(jittered[4][0] != fused[4][0]);
  CHECK(jittered[4][0] == doctest::Approx(fused[4][0]).epsilon(1e-5));
}

// What the GPU wrote (an H200, `scripts/device-test.sh fuzz`, 2026-11-22) where an earlier model
// called it wrong: each value is one rounding away from the model, and the model now allows
// that rounding, but not an error a few times larger.
TEST_CASE("reference: roundings the GPU took the other way are within the model's tolerance") {
  struct Seen {
    const char* file;
    std::uint64_t seed;
    std::size_t element;
    double gpu;
    double ulp;      // of the rounding that went the other way
    double loosest;  // in those ulps: the tolerance there stays below it
  };
  const Seen seen[] = {
      // gelu_tanh stored as bf16 rounds up in magnitude; abs turns "up" into "down", so the
      // all-down pattern also nudged the product below its own midpoint and cancelled the flip.
      {"seed-9417-flip-cancelled-through-abs.json", 9417, 1278, 0.0106201171875, 0x1p-14, 8},
      // layer_norm over 3 stored f16 values ~1 ulp apart: its f32 mean errs by ~1e-7, and
      // x - mean ~ 5e-4 turns that into an f16 ulp of the output (and 2^-22 of the row max
      // into ~7: such a row is as sensitive as that).
      {"seed-5788-norm-of-a-stored-near-constant-row.json", 5788, 5245, 0.9249267578125, 0x1p-14,
       32},
  };
  for (const Seen& s : seen) {
    CAPTURE(s.file);
    const Graph g = Graph::load(std::string(KILN_SOURCE_DIR) + "/tests/regressions/" + s.file);
    std::mt19937_64 rng(s.seed);
    const auto model = kiln::test::model_plan(g, kiln::test::random_inputs(g, rng), false);
    const int o = g.outputs().front();
    const double want = model.model[std::size_t(o)][s.element];
    const double limit =
        2e-5 * std::max(1.0, std::fabs(want)) + 4 * model.sensitivity(o, s.element);
    CHECK(std::fabs(s.gpu - want) == doctest::Approx(s.ulp));  // the GPU is one rounding away
    CHECK(std::fabs(s.gpu - want) <= limit);
    CHECK(limit < s.loosest * s.ulp);  // and not loose beyond a few such roundings
  }
}

// The GPU's f32 tanh(10) is exactly 1 (fp64: 1 - 4e-9), so eq(tanh(x), 1) is true on the GPU
// and false in fp64 (fuzz seeds 76852 and 83878, an H200 and an H100, 2026-11-26): such an
// equality is in doubt, which the model's sensitivity must show, and one far from it is not.
TEST_CASE("reference: an equality within f32's evaluation error is in doubt") {
  Graph g;
  const auto x = g.input("x", {2}, DType::f32);
  g.output(kiln::apply("eq", {kiln::tanh(x), 1.0}), "y");
  kiln::test::HostInputs in;
  in["x"].resize(8);
  kiln::store_element(DType::f32, 10.0, in["x"].data());
  kiln::store_element(DType::f32, 0.5, in["x"].data() + 4);
  const auto model = kiln::test::model_plan(g, in, true);
  const int o = g.outputs().front();
  CHECK(model.model[std::size_t(o)][0] == 0.0);
  CHECK(model.sensitivity(o, 0) == 1.0);  // either answer passes
  CHECK(model.model[std::size_t(o)][1] == 0.0);
  CHECK(model.sensitivity(o, 1) == 0.0);  // tanh(0.5) is nowhere near 1: no doubt
}

// Fuzz seed 551845 (an H200, 2026-11-30), shrunk: conv2d -> tanh -> cast i64 -> cast f32 ->
// conv2d 1x1. At element 415 two channels' tanh lie within f32's error of -1 (fp64's truncate to
// 0); the GPU's f32 saturated one of them (got 0.219, fp64 -0.678: one weight, 0.897). Snapped
// together in every pattern the two cancel downstream (0.164); the model must allow either alone.
TEST_CASE("reference: casts to an integer in doubt are flipped element by element") {
  const std::string dir = std::string(KILN_SOURCE_DIR) + "/tests/fuzz/data/seed-551845/";
  const Graph g = Graph::load(dir + "graph.json");
  kiln::test::HostInputs in;
  for (const auto& n : g.nodes())
    if (n.op == "input") in[n.name] = kiln::tools::read_npy(dir + n.name + ".npy", n.dtype).bytes;
  const auto model = kiln::test::model_plan(g, in, true);
  const int o = g.outputs().front();
  CHECK(model.model[std::size_t(o)][415] == doctest::Approx(-0.6780498));
  CHECK(model.sensitivity(o, 415) >= 0.8970747);
}

// Attention over bf16 rounds its probabilities, so its result may sit u max|v| (2^-8 of it) from
// fp64's; where that spans 0, the GPU's value may be 0 and cos of it exactly 1 (fuzz seed
// 193205, an H200, 2026-11-29: 4 cos(o) truncated to 4 where fp64 gives 3.9999992). No nudge up
// or down reaches cos's maximum: the model's toward-zero pattern does.
TEST_CASE("reference: an attention result within its error of 0 may be 0 downstream") {
  Graph g;
  const auto q = g.input("q", {1, 1, 1, 2}, DType::bf16);
  const auto v = g.input("v", {1, 1, 1, 2}, DType::bf16);
  const auto o = kiln::apply("attention", {q, q, v});  // one key: o = v
  g.output(kiln::cast(kiln::cos(o) * 4.0, DType::i32), "y");
  kiln::test::HostInputs in;
  for (const char* name : {"q", "v"}) in[name].resize(4);
  kiln::store_element(DType::bf16, 0.5, in["q"].data());
  kiln::store_element(DType::bf16, 0.5, in["q"].data() + 2);
  kiln::store_element(DType::bf16, 0.001, in["v"].data());
  kiln::store_element(DType::bf16, 2.0, in["v"].data() + 2);
  const auto model = kiln::test::model_plan(g, in, true);
  const int y = g.outputs().front();
  CHECK(model.model[std::size_t(y)][0] == 3.0);
  CHECK(model.sensitivity(y, 0) == 1.0);  // 4 as well: o may be 0 on the GPU
  CHECK(model.model[std::size_t(y)][1] == -1.0);
  CHECK(model.sensitivity(y, 1) == 0.0);  // cos(2) * 4 is far from -2 and 0
}

TEST_CASE(
    "reference: every op that no per-element or per-row rule covers registers a whole-node "
    "reference") {
  int whole = 0;
  for (const auto& op : kiln::ops::all_ops()) {
    CAPTURE(op.name);
    const bool read_elsewhere = op.fusion.kind == kiln::ops::FusionKind::view &&
                                (op.view.axis != nullptr || op.view.remap != nullptr);
    const bool own_kernel = op.fusion.kind == kiln::ops::FusionKind::anchor && !op.row_reference;
    const bool registered = kiln::test::node_reference(std::string(op.name)) != nullptr;
    if (read_elsewhere || own_kernel) CHECK(registered);
    whole += registered;
  }
  CHECK(whole >= 11);  // products, attention, group_norm, gathers, remaps, concat, slice_update
}

// An H200 wrote 2.0510990619659424 where the model wants 2.051426649093628 (fuzz seed 71914,
// 2026-11-26): layer_norm over a row of two f16 tanh values 0.0055 apart (variance 7e-6, below
// eps) stores -0.653073 as f16, 3e-6 from a rounding midpoint; f32's errors, amplified ~140
// times, round it the other way. Only the alternation with the second element up moves it
// toward the midpoint, which the model now tries (jitter 9); before, it held the GPU wrong.
TEST_CASE("reference: a norm of two values near an f16 rounding midpoint is in doubt") {
  const Graph g =
      Graph::load(std::string(KILN_SOURCE_DIR) +
                  "/tests/regressions/seed-71914-norm-of-two-near-a-rounding-midpoint.json");
  std::mt19937_64 rng(71914);
  const auto model = kiln::test::model_plan(g, kiln::test::random_inputs(g, rng), true);
  const int o = g.outputs().back();  // t39
  const std::size_t element = 7866;
  const double want = model.model[std::size_t(o)][element], gpu = 2.0510990619659424;
  CHECK(want == doctest::Approx(2.051426649093628).epsilon(1e-9));  // the inputs the GPU had
  const double limit = 2e-5 * std::max(1.0, std::fabs(want)) + 4 * model.sensitivity(o, element);
  CHECK(std::fabs(gpu - want) <= limit);
  CHECK(limit < 8 * std::fabs(gpu - want));  // one rounding of t3, not any error at all
}
