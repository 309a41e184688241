// Plan::replay (a CUDA graph of the plan's kernels) against Plan::run; the checks both make
// before touching a GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <kiln/graph.hpp>

#include "tests/fuzz/generator.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

namespace {
using Views = std::map<std::string, kiln::TensorView>;
using kiln::test::bytes_of;

// Fresh random data into every input of `g`.
void fill(const Graph& g, std::map<std::string, kiln::Tensor>& dev, std::mt19937_64& rng) {
  for (const auto& n : g.nodes())
    if (n.op == "input")
      dev[n.name].copy_from_host(
          kiln::test::random_bytes(n.dtype, dev[n.name].bytes() / kiln::size_of(n.dtype), -3, 3,
                                   rng)
              .data());
}
}  // namespace

TEST_CASE("plans check inputs and outputs before needing a GPU") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  Graph g;
  auto x = g.input("x", {4, 8}, DType::f32);
  g.output(kiln::silu(x));
  const kiln::Plan p(g);
  kiln::TensorView v;
  v.shape = {4, 8};
  v.dtype = DType::f32;
  v.data = 0x100000;
  CHECK_THROWS_WITH_AS(p.run(e, {{"x", v}}, {{"nope", v}}),
                       doctest::Contains("'nope' is not an output"), kiln::GraphError);
  kiln::TensorView small = v;
  small.shape = {4, 7};
  const std::string y = g.node(g.outputs()[0]).name;
  CHECK_THROWS_WITH_AS(p.replay(e, {{"x", v}}, {{y, small}}),
                       doctest::Contains(doctest::String(("output '" + y + "'").c_str())),
                       kiln::ShapeError);
  CHECK_THROWS_AS(p.replay(e, {{"x", v}}, {{y, v}}), kiln::CudaError);  // offline: no device
  // A plan's dtypes are its graph's: another dtype is refused by run and replay alike.
  kiln::TensorView half = v;
  half.dtype = DType::bf16;
  CHECK_THROWS_WITH_AS(p.run(e, {{"x", half}}), doctest::Contains("input 'x'"), kiln::DtypeError);
  CHECK_THROWS_WITH_AS(p.replay(e, {{"x", half}}), doctest::Contains("input 'x'"),
                       kiln::DtypeError);
}

TEST_CASE("gpu: replay equals run, with new buffers, new data and new shapes" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(41);
  int graphs = 0, updated = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const Graph g = kiln::fuzz::random_graph(seed);
    CAPTURE(g.to_json());
    std::map<std::string, kiln::Tensor> dev;
    Views ins;
    for (const auto& n : g.nodes())
      if (n.op == "input")
        dev[n.name] = e.empty(n.shape, n.dtype), ins[n.name] = dev[n.name].view();
    for (bool fused : {true, false}) {
      const kiln::Plan p(g, fused);
      for (int round = 0; round < 3;
           ++round) {  // 0: builds the graph; 1: new data; 2: new output buffers
        fill(g, dev, rng);
        auto want = p.run(e, ins);
        std::map<std::string, kiln::Tensor> outs;
        Views out_views;
        for (int o : g.outputs()) {
          const auto& n = g.node(o);
          outs[n.name] = e.empty(n.shape, n.dtype);
          outs[n.name].fill_bytes(0xff);
          out_views[n.name] = outs[n.name].view();
        }
        CHECK(p.replay(e, ins, round == 2 ? out_views : Views{}).size() ==
              (round == 2 ? 0u : g.outputs().size()));
        if (round < 2) {
          auto got = p.replay(e, ins);
          for (const auto& [name, t] : want)
            CHECK(bytes_of(got.at(name)) == bytes_of(t));  // same kernels: same bits
        } else {
          // An input of another dtype is refused before anything runs: the outputs keep the
          // replay's.
          Views other = ins;
          kiln::TensorView& first = other.begin()->second;
          first.dtype = first.dtype == DType::f32 ? DType::bf16 : DType::f32;
          CHECK_THROWS_AS(p.replay(e, other, out_views), kiln::DtypeError);
          for (const auto& [name, t] : want) CHECK(bytes_of(outs.at(name)) == bytes_of(t));
          ++updated;
        }
      }
    }
    ++graphs;
  }
  CHECK(updated == 80);

  // A dynamic dim: a new extent rebuilds the graph; the old one is not replayed for it. Rows
  // of 70000 stream through the row template's stash (dynamic shared memory in the graph node).
  Graph d;
  auto x = d.input("x", {-1, 96}, DType::bf16);
  d.output(kiln::softmax(x * 0.5 + 1.0));
  const kiln::Plan p(d);
  for (std::int64_t rows : {8, 17, 8}) {
    CAPTURE(rows);
    kiln::Tensor in = e.from_host(
        {rows, 96}, DType::bf16,
        kiln::test::random_bytes(DType::bf16, std::size_t(rows * 96), -3, 3, rng).data());
    const auto want = p.run(e, {{"x", in.view()}});
    const auto got = p.replay(e, {{"x", in.view()}});
    for (const auto& [name, t] : want) CHECK(bytes_of(got.at(name)) == bytes_of(t));
  }
  Graph l;
  l.output(kiln::softmax(l.input("x", {3, 70000}, DType::f32) * 0.5));
  const kiln::Plan lp(l);
  kiln::Tensor in = e.from_host({3, 70000}, DType::f32,
                                kiln::test::random_bytes(DType::f32, 3 * 70000, -3, 3, rng).data());
  const auto want = lp.run(e, {{"x", in.view()}});
  for (int round = 0; round < 2; ++round) {
    const auto got = lp.replay(e, {{"x", in.view()}});
    for (const auto& [name, t] : want) CHECK(bytes_of(got.at(name)) == bytes_of(t));
  }
}
