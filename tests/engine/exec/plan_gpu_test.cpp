// Fused plans on the GPU: against an fp64 evaluation of the graph, and fused against unfused.
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>

#include "ops/op.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

namespace {

// A random chain over x [R, C], b [C], r [R, 1] with two outputs of the result's shape.
Graph random_graph(std::mt19937_64& rng, DType t, std::int64_t R, std::int64_t C) {
  Graph g;
  auto x = g.input("x", {R, C}, t);
  auto b = g.input("b", {C}, t);
  auto r = g.input("r", {R, 1}, DType::f32);
  kiln::Value v = x;
  const int steps = 3 + int(rng() % 6);
  for (int s = 0; s < steps; ++s) {
    switch (rng() % 8) {
      case 0:
        v = v + b;
        break;
      case 1:
        v = v * 0.75;
        break;
      case 2:
        v = kiln::silu(v);
        break;
      case 3:
        v = kiln::tanh(v) - r;
        break;
      case 4:
        v = kiln::apply("maximum", {v, x});
        break;
      case 5:
        v = kiln::apply("where", {kiln::apply("gt", {x, 0.0}), v, b});
        break;
      case 6:
        v = kiln::apply("clamp", {v}, {{"min", -2.0}, {"max", 2.0}});
        break;
      default:
        v = kiln::sigmoid(v) * r;
        break;
    }
  }
  g.output(v);
  g.output(kiln::relu(v) + x);
  return g;
}

}  // namespace

TEST_CASE("gpu: random fused graphs match the fp64 reference and the unfused plan" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions o;
  o.cache_dir = tmp.path();
  kiln::Engine e(o);
  auto rng = kiln::test::make_rng(11);
  int graphs = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const DType t = kiln::kFloatDTypes[trial % 3];
    const std::int64_t R = 1 + std::int64_t(rng() % 70), C = 1 + std::int64_t(rng() % 300);
    const Graph g = random_graph(rng, t, R, C);
    CAPTURE(g.to_json());
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    ++graphs;
  }
  CHECK(graphs == 24);
}

TEST_CASE(
    "gpu: a dynamic batch dim is the launch's: a new batch size runs the kernels already compiled" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(31);
  // Three kernels: softmax with a fused prologue, a sum, an elementwise chain.
  const auto build = [](std::int64_t batch) {
    Graph g;
    auto x = g.input("x", {batch, 8, 1000}, DType::bf16);
    auto m = g.input("m", {8, 1000}, DType::bf16);
    g.output(kiln::softmax(x * 0.5 + m));
    g.output(kiln::reduce("sum", x));
    g.output(kiln::silu(x) * m);
    return g;
  };
  const Graph dynamic = build(-1);
  const kiln::Plan plan(dynamic);
  // Kernels the engine had to find: compiled, or from the disk cache or a bundle.
  const auto found = [&] {
    const kiln::CacheCounters c = e.counters();
    return c.compiles + c.disk_hits + c.bundle_hits;
  };
  std::uint64_t compiled = 0;
  for (std::int64_t batch : {5, 64, 3, 300, 1}) {  // a batch of 1 drops its unit dim
    CAPTURE(batch);
    const Graph g = build(batch);
    auto same = rng;  // check_on_gpu draws these inputs from the same state
    const kiln::test::HostInputs host = kiln::test::random_inputs(g, same);
    const kiln::test::DeviceInputs in = kiln::test::upload(e, g, host);
    const std::map<std::string, kiln::TensorView>& views = in.views;
    const std::uint64_t before = found();
    const auto got = plan.run(e, views);
    const std::uint64_t now = found() - before;
    compiled += now;
    CAPTURE(now);
    // The first batch finds all three; a batch of 1 the softmax and the elementwise kernel (the
    // sum's rows coalesce with the batch whatever its size: the same kernel); others none.
    CHECK(now == (batch == 5 ? 3 : batch == 1 ? 2 : 0));
    // Against the fp64 reference: the static graph of this batch, the same inputs, the same
    // kernels (nothing compiles), the same bits.
    const auto want = kiln::Plan(g).run(e, views);
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
    CHECK(found() - before == now);
    REQUIRE(got.size() == 3);
    for (const auto& [name, t] : want)
      CHECK(kiln::test::bytes_of(got.at(name)) == kiln::test::bytes_of(t));
  }
  CHECK(compiled == 5);
}

TEST_CASE("gpu: a plan writes into the caller's outputs and checks what it is given" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  Graph g;
  auto x = g.input("x", {-1, 64}, DType::f32);
  g.output(kiln::silu(x * 2.0));
  const kiln::Plan p(g);
  for (std::int64_t rows : {3, 17}) {  // a dynamic dim bound per run
    std::vector<float> h(std::size_t(rows * 64));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = float(i % 13) * 0.25f - 1.5f;
    kiln::Tensor in = e.from_host({rows, 64}, DType::f32, h.data());
    kiln::Tensor out = e.empty({rows, 64}, DType::f32);
    out.fill_bytes(0xff);
    CHECK(p.run(e, {{"x", in.view()}}, {{g.node(g.outputs()[0]).name, out.view()}}).empty());
    std::vector<float> got(h.size());
    out.copy_to_host(got.data());
    for (std::size_t i = 0; i < h.size(); ++i) {
      const double t = 2.0 * h[i];
      CHECK(got[i] == doctest::Approx(t / (1 + std::exp(-t))).epsilon(1e-5));
    }
  }
  kiln::Tensor wrong = e.empty({3, 65}, DType::f32);
  CHECK_THROWS_AS(p.run(e, {{"x", wrong.view()}}), kiln::ShapeError);
  CHECK_THROWS_AS(p.run(e, {}), kiln::GraphError);
  kiln::Tensor f16 = e.empty({3, 64}, DType::f16);
  CHECK_THROWS_AS(p.run(e, {{"x", f16.view()}}), kiln::DtypeError);
}
