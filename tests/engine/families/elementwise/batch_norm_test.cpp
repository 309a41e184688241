// batch_norm in inference form (include/kiln/norms.hpp): shapes and errors, its one kernel (an
// elementwise chain reading the [C] operands in place as [C, 1, ...], with what surrounds it),
// and on the GPU against fp64 loops written here, NCHW and channels_last.
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>
#include <kiln/norms.hpp>

#include "tests/engine/cases.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;

namespace {

struct Stats {
  kiln::Value mean, var;
  std::optional<kiln::Value> w, b;
};
Stats stats(Graph& g, std::int64_t C, bool affine = true) {
  Stats s{g.input("mean", {C}, DType::f32), g.input("var", {C}, DType::f32), {}, {}};
  if (affine) s.w = g.input("w", {C}, DType::f32), s.b = g.input("b", {C}, DType::f32);
  return s;
}

}  // namespace

TEST_CASE("batch_norm: shapes, errors, and one kernel with a SiLU fused after it") {
  for (bool channels_last : {false, true}) {
    Graph g;
    auto x = kiln::test::nchw(g, {2, 64, 9, 7}, DType::f16, channels_last);
    const Stats s = stats(g, 64);
    auto y = kiln::silu(kiln::batch_norm(x, s.mean, s.var, s.w, s.b, 1e-3));
    g.output(y);
    CHECK(g.node(y.id()).shape == Shape{2, 64, 9, 7});
    CHECK(g.node(y.id()).dtype == DType::f16);
    const auto k = kiln::Plan(g).kernels("sm_90a");
    CAPTURE(g.to_json());
    REQUIRE(k.size() == 1);  // scale, shift, x * scale + shift and the SiLU per element
    CHECK(k[0].name.find("reshape") == std::string::npos);  // no copy of the [C] operands
  }
  Graph g;
  auto x = g.input("x", {4, 6}, DType::f32);
  const Stats s = stats(g, 6, false);
  CHECK(g.node(kiln::batch_norm(x, s.mean, s.var).id()).shape == Shape{4, 6});
  CHECK_THROWS_WITH_AS(kiln::batch_norm(g.input("v", {6}, DType::f32), s.mean, s.var),
                       doctest::Contains("must be [N, C, *]"), kiln::ShapeError);
  auto bad = g.input("bad", {6, 1}, DType::f32);
  CHECK_THROWS_WITH_AS(kiln::batch_norm(x, s.mean, s.var, bad),
                       doctest::Contains("weight [6, 1] must be of shape [6]"), kiln::ShapeError);
}

TEST_CASE("gpu: batch_norm against fp64 loops, NCHW and channels_last, odd and unit extents" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(52);
  std::uniform_real_distribution<double> u(-2, 2), pos(0.1, 3);
  const std::vector<Shape> shapes = {
      {2, 64, 9, 7}, {1, 3, 1, 1}, {5, 7}, {3, 1, 5}, {2, 320, 32, 32}};
  for (DType t : kiln::kFloatDTypes)
    for (const Shape& s : shapes)
      for (bool channels_last : {false, true})
        for (bool affine : {false, true}) {
          Graph g;
          auto x = kiln::test::nchw(g, s, t, channels_last);
          const Stats st = stats(g, s[1], affine);
          g.output(kiln::batch_norm(x, st.mean, st.var, st.w, st.b, 1e-3), "y");
          const std::int64_t C = s[1], S = kiln::numel_of(s) / (s[0] * C);
          std::vector<double> xs(std::size_t(kiln::numel_of(s))), mean, var, w, b;
          for (double& v : xs) v = u(rng);
          for (std::int64_t c = 0; c < C; ++c) {
            mean.push_back(u(rng)), var.push_back(pos(rng));
            w.push_back(u(rng)), b.push_back(u(rng));
          }
          std::vector<double> stored = xs;  // channels_last: the NHWC order of the same values
          if (channels_last)
            for (std::int64_t n = 0; n < s[0]; ++n)
              for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t p = 0; p < S; ++p)
                  stored[std::size_t((n * S + p) * C + c)] = xs[std::size_t((n * C + c) * S + p)];
          xs = kiln::test::decode(t, kiln::test::encode(t, xs));
          std::map<std::string, kiln::Tensor> held;
          held.emplace("x",
                       e.from_host({kiln::numel_of(s)}, t, kiln::test::encode(t, stored).data()));
          for (const auto& [name, v] : std::vector<std::pair<std::string, std::vector<double>*>>{
                   {"mean", &mean}, {"var", &var}, {"w", &w}, {"b", &b}})
            held.emplace(name,
                         e.from_host({C}, DType::f32, kiln::test::encode(DType::f32, *v).data()));
          std::map<std::string, kiln::TensorView> inputs;
          for (const auto& [name, tensor] : held) {
            kiln::TensorView v = tensor.view();
            if (name == "x") v.shape = g.node(g.find("x")).shape, v.strides.clear();
            if (g.find(name) >= 0) inputs[name] = v;
          }
          const auto out = kiln::Plan(g).run(e, inputs);
          const auto got = kiln::test::decode(t, kiln::test::bytes_of(out.at("y")));
          REQUIRE(got.size() == xs.size());
          const double tol = t == DType::f32 ? 1e-5 : t == DType::f16 ? 4e-3 : 2.5e-2;
          int bad = 0;
          for (std::size_t i = 0; i < xs.size() && bad < 5; ++i) {
            const std::size_t c = std::size_t(std::int64_t(i) / S % C);
            const double want = (xs[i] - mean[c]) / std::sqrt(var[c] + 1e-3) * (affine ? w[c] : 1) +
                                (affine ? b[c] : 0);
            if (!(std::fabs(got[i] - want) <= tol * std::max(1.0, std::fabs(want)))) {
              ++bad;
              FAIL_CHECK(fmt::format("{} {} {} affine {}: [{}] got {} want {}", kiln::name_of(t),
                                     kiln::to_string(s), channels_last ? "channels_last" : "NCHW",
                                     affine, i, got[i], want));
            }
          }
        }
}
