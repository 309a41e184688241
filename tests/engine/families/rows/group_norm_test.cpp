// group_norm: shape rules and errors, fusion (a prologue and a SiLU after it in one kernel), the
// launch of few long groups (split between the blocks of a cluster), the channels_last format
// of the values before it, NVRTC compiles, and on the GPU against fp64 loops written here, NCHW
// and channels_last, fused and not.
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "ops/op.hpp"
#include "tests/engine/reference.hpp"
#include "tests/engine/cases.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

Attrs groups(std::int64_t g) { return Attrs().set("groups", g); }

// group_norm of x (row-major NCHW values) in fp64, with weight and bias (empty: none).
std::vector<double> group_norm_ref(const std::vector<double>& x, const Shape& s, std::int64_t G,
                                   const std::vector<double>& w, const std::vector<double>& b,
                                   double eps) {
  const std::int64_t N = s[0], C = s[1], S = kiln::numel_of(s) / (N * C), per = C / G * S;
  std::vector<double> out(x.size());
  for (std::int64_t i = 0; i < N * G; ++i) {
    double mean = 0, m2 = 0;
    for (std::int64_t e = 0; e < per; ++e) mean += x[std::size_t(i * per + e)];
    mean /= double(per);
    for (std::int64_t e = 0; e < per; ++e)
      m2 += (x[std::size_t(i * per + e)] - mean) * (x[std::size_t(i * per + e)] - mean);
    for (std::int64_t e = 0; e < per; ++e) {
      const std::size_t c = std::size_t((i % G) * (C / G) + e / S);
      out[std::size_t(i * per + e)] = (x[std::size_t(i * per + e)] - mean) /
                                          std::sqrt(m2 / double(per) + eps) *
                                          (w.empty() ? 1 : w[c]) +
                                      (b.empty() ? 0 : b[c]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("group_norm: shapes, and errors naming the operands") {
  const auto x = desc({2, 6, 5, 3}, DType::bf16), w = desc({6}, DType::f32);
  CHECK(kiln::infer("group_norm", {x, w, w}, groups(3)).shape == Shape{2, 6, 5, 3});
  CHECK(kiln::infer("group_norm", {x}, groups(6)).dtype == DType::bf16);
  CHECK(kiln::infer("group_norm", {desc({4, 8}, DType::f32)}, groups(1)).shape == Shape{4, 8});
  CHECK_THROWS_WITH_AS(kiln::infer("group_norm", {x}), doctest::Contains("groups is required"),
                       kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("group_norm", {x}, groups(4)),
                       doctest::Contains("C = 6 does not split into 4 groups"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("group_norm", {x}, groups(0)),
                       doctest::Contains("groups=0 is not >= 1"), kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("group_norm", {x, desc({3}, DType::f32)}, groups(3)),
                       doctest::Contains("weight must be a tensor of shape [6]"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("group_norm", {desc({6}, DType::f32)}, groups(3)),
                       doctest::Contains("rank 2 or more"), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("group_norm", {x, desc({6}, DType::boolean)}, groups(3)),
                  kiln::DtypeError);
  CHECK_THROWS_AS(kiln::infer("group_norm", {x}, groups(3).set("eps", 0.0)), kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::infer("group_norm", {desc({2, 6, 0}, DType::f32)}, groups(3)),
                  kiln::ShapeError);
}

TEST_CASE(
    "group_norm: a prologue, the norm and a SiLU after it are one kernel; few long groups "
    "split between the blocks of a cluster") {
  for (bool channels_last : {false, true}) {
    Graph g;
    auto x = kiln::test::nchw(g, {2, 320, 64, 64}, DType::f16, channels_last);
    auto t = g.input("t", {2, 320, 1, 1}, DType::f16);  // a per-channel add before it
    auto w = g.input("w", {320}, DType::f16), b = g.input("b", {320}, DType::f16);
    g.output(kiln::silu(kiln::apply("group_norm", {x + t, w, b}, groups(32))));
    const auto k = kiln::Plan(g).kernels("sm_90a");
    CAPTURE(g.to_json());
    REQUIRE(k.size() == 1);
    // 64 groups of 40960: 8 blocks each NCHW (in registers), 4 channels_last (C / G = 10
    // contiguous values: packs of 2, stashed).
    CHECK(k[0].grid == 2 * 32 * (channels_last ? 4 : 8));
    CHECK(kiln::Plan(g).kernels("sm_80")[0].grid == 2 * 32);  // no clusters: a block a group
  }
}

TEST_CASE(
    "group_norm after an add of channels_last inputs: the sum inside the plan keeps their "
    "format, a sum that is a graph output is row-major") {
  // Seen in the kernel's vector width: with x, the sum and the result all channels_last, a
  // group's 2 adjacent channels load together; a row-major sum (and so result) reads one value
  // at a time.
  for (bool output : {false, true}) {
    Graph g;
    auto x = kiln::test::nchw(g, {2, 64, 16, 16}, DType::f16, true);
    auto r = kiln::test::nchw(g, {2, 64, 16, 16}, DType::f16, true, "r");
    auto h = x + r;
    if (output) g.output(h, "h");
    g.output(kiln::apply("group_norm", {h}, groups(32)), "y");
    const auto k = kiln::Plan(g).kernels("sm_90a");
    CAPTURE(g.to_json());
    REQUIRE(k.size() == 1);
    CHECK(k[0].name == (output ? "add__group_norm_f16__r4v1" : "add__group_norm_f16__r4v2"));
  }
}

TEST_CASE(
    "group_norm NVRTC-compiles for sm_80 and sm_90a: NCHW and channels_last, groups 1, "
    "32 and C") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    for (DType t : kiln::kFloatDTypes)
      for (bool channels_last : {false, true})
        for (std::int64_t G : {1, 32, 64}) {
          Graph g;
          auto x = kiln::test::nchw(g, {2, 64, 9, 7}, t, channels_last);
          std::vector<kiln::GraphArg> args = {x * 0.5};
          if (G != 1) args.push_back(g.input("w", {64}, t));
          if (G == 32) args.push_back(g.input("b", {64}, DType::f32));
          g.output(kiln::silu(kiln::apply("group_norm", args, groups(G))));
          CAPTURE(g.to_json());
          const auto records = kiln::Plan(g).compile(e);
          CHECK(records.size() == 1);
        }
  }
}

TEST_CASE("gpu: group_norm against fp64 loops, NCHW and channels_last, groups 1, 32 and C" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(50);
  struct Case {
    Shape shape;
    std::int64_t groups;
  };
  const std::vector<Case> cases = {
      {{2, 320, 64, 64}, 32}, {{1, 6, 5, 3}, 1}, {{1, 6, 5, 3}, 6}, {{3, 64, 7, 9}, 32},
      {{3, 4, 1, 1}, 4},      {{2, 8, 7}, 2},    {{5, 6}, 3},       {{2, 1280, 16, 16}, 32}};
  std::uniform_real_distribution<double> u(-2, 2);
  for (DType t : kiln::kFloatDTypes)
    for (const Case& c : cases)
      for (bool channels_last : {false, true})
        for (int affine = 0; affine < 3; ++affine) {
          const Shape& s = c.shape;
          std::vector<double> xs(std::size_t(kiln::numel_of(s))), w, b;
          for (double& v : xs) v = 3 + u(rng);  // off 0: the statistic must not lose it
          for (int i = 0; i < affine; ++i)
            for (std::int64_t ch = 0; ch < s[1]; ++ch) (i ? b : w).push_back(u(rng));
          // channels_last: the NHWC bytes of the same values, seen through NCHW strides.
          const std::int64_t C = s[1], S = kiln::numel_of(s) / (s[0] * C);
          std::vector<double> stored = xs;
          if (channels_last)
            for (std::int64_t n = 0; n < s[0]; ++n)
              for (std::int64_t ch = 0; ch < C; ++ch)
                for (std::int64_t p = 0; p < S; ++p)
                  stored[std::size_t((n * S + p) * C + ch)] = xs[std::size_t((n * C + ch) * S + p)];
          const auto host = kiln::test::encode(t, stored);
          const kiln::Tensor x = e.from_host({kiln::numel_of(s)}, t, host.data());
          kiln::TensorView view = x.view();
          view.shape = s;
          view.strides.assign(s.size(), 0);
          view.strides[0] = C * S;
          view.strides[1] = channels_last ? 1 : S;
          for (std::size_t d = s.size(); d-- > 2;) {
            const std::int64_t inner =
                d + 1 < s.size() ? view.strides[d + 1] * s[d + 1] : (channels_last ? C : 1);
            view.strides[d] = inner;
          }
          xs = kiln::test::decode(t, kiln::test::encode(t, xs));
          std::vector<kiln::Tensor> keep;
          std::vector<kiln::Operand> args = {view};
          for (const auto* v : {&w, &b})
            if (!v->empty()) {
              keep.push_back(
                  e.from_host({C}, DType::f32, kiln::test::encode(DType::f32, *v).data()));
              args.push_back(keep.back().view());
            }
          const kiln::Tensor y = kiln::call(e, "group_norm", args, groups(c.groups));
          const auto want = group_norm_ref(xs, s, c.groups, w, b, 1e-5);
          const auto got = kiln::test::decode(t, kiln::test::bytes_of(y));
          REQUIRE(got.size() == want.size());
          const double tol = t == DType::f32 ? 1e-4 : t == DType::f16 ? 4e-3 : 2.5e-2;
          int bad = 0;
          for (std::size_t i = 0; i < got.size() && bad < 5; ++i)
            if (!(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])))) {
              ++bad;
              FAIL_CHECK(fmt::format("{} {} groups {} {} affine {}: [{}] got {} want {}",
                                     kiln::name_of(t), kiln::to_string(s), c.groups,
                                     channels_last ? "channels_last" : "NCHW", affine, i, got[i],
                                     want[i]));
            }
        }
}

TEST_CASE("gpu: group_norm fused with a prologue and a SiLU, and not, against the fp64 model" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(51);
  int graphs = 0;
  for (DType t : kiln::kFloatDTypes)
    for (bool channels_last : {false, true})
      for (const auto& [s, G] : std::vector<std::pair<Shape, std::int64_t>>{
               {{2, 320, 64, 64}, 32}, {{2, 64, 5, 7}, 32}, {{1, 6, 3, 1}, 6}, {{3, 4, 9}, 1}}) {
        Graph g;
        auto x = kiln::test::nchw(g, s, t, channels_last);
        Shape ts = {s[0], s[1]};
        ts.resize(s.size(), 1);
        auto temb = g.input("t", ts, DType::f32);
        auto w = g.input("w", {s[1]}, t), b = g.input("b", {s[1]}, t);
        g.output(kiln::silu(kiln::apply("group_norm", {x + temb, w, b}, groups(G))));
        CAPTURE(g.to_json());
        for (bool unfused : {false, true})
          for (const auto& f : kiln::test::check_on_gpu(e, g, rng, unfused)) FAIL_CHECK(f);
        ++graphs;
      }
  MESSAGE(fmt::format("{} group_norm graphs", graphs));
}
