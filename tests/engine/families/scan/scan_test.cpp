// cumsum, the scan family: its shape rule and errors, its fusion (a prologue and an epilogue in
// one kernel), the template's specialization (vector width, chunks, reverse, tunables), NVRTC
// compiles for sm_80 and sm_90a, and on the GPU against the fp64 reference.
#include "engine/families/scan/scan.hpp"

#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

kiln::Value cumsum(kiln::Value x, std::int64_t axis = -1, bool reverse = false) {
  return kiln::apply("cumsum", {x}, Attrs().set("axis", axis).set("reverse", reverse));
}

template <class E>
std::string error_of(const kiln::TensorView& x, const Attrs& a) {
  try {
    kiln::infer("cumsum", {x}, a);
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// cumsum graphs over `shape` along `axis`: alone, and with a prologue and an epilogue
// (cumsum(exp(x * 0.5)) * 2 + x: three fused kernels' worth of ops, one kernel).
std::vector<Graph> scan_graphs(DType t, const Shape& shape, std::int64_t axis, bool reverse) {
  std::vector<Graph> out;
  {
    Graph g;
    g.output(cumsum(g.input("x", shape, t), axis, reverse), "y");
    out.push_back(std::move(g));
  }
  {
    Graph g;
    const auto x = g.input("x", shape, t);
    g.output(cumsum(kiln::exp(x * 0.5), axis, reverse) * 2.0 + x, "y");
    out.push_back(std::move(g));
  }
  return out;
}

// A scan kernel of f32 `shape` along its last axis, contiguous at `data`.
kiln::ScanKernel plain(const Shape& shape, std::uint64_t data = 0x10000) {
  kiln::ScanKernel k;
  kiln::TensorView x = desc(shape, DType::f32), y = x;
  x.data = data, y.data = 0x20000;
  k.inputs = {x};
  k.outputs = {y};
  k.shape = shape;
  k.prologue.inputs = {DType::f32};
  k.prologue.outputs = {DType::f32};
  k.prologue.results = {{kiln::codegen::Ref::Kind::input, 0}};
  k.epilogue.outputs = {DType::f32};
  k.epilogue.results = {{kiln::codegen::Ref::Kind::row, 0}};
  return k;
}

}  // namespace

TEST_CASE("cumsum: its shape and dtype, and errors naming the operand and the attribute") {
  CHECK(kiln::infer("cumsum", {desc({3, 5}, DType::bf16)}).shape == Shape{3, 5});
  CHECK(kiln::infer("cumsum", {desc({3, 5}, DType::bf16)}).dtype == DType::bf16);
  CHECK(kiln::infer("cumsum", {desc({3, 0}, DType::f32)}, Attrs().set("axis", 0)).shape ==
        Shape{3, 0});
  CHECK(error_of<kiln::ShapeError>(desc({3, 5}, DType::f32), Attrs().set("axis", 2)) ==
        "cumsum(x: f32[3, 5]): axis 2 is out of range for rank 2");
  CHECK(error_of<kiln::ShapeError>(desc({}, DType::f32), {}) ==
        "cumsum(x: f32[]): x has no axis to sum along");
  CHECK(error_of<kiln::DtypeError>(desc({4}, DType::boolean), {}) ==
        "cumsum(x: bool[4]): x is bool; cast it to a float dtype first");
  // torch's name for the axis gets a hint; a wrong type is named.
  const std::string dim = error_of<kiln::ArgumentError>(desc({4}, DType::f32), {{"dim", 0}});
  CHECK(dim.find("kiln calls it axis") != std::string::npos);
  const std::string flag =
      error_of<kiln::ArgumentError>(desc({4}, DType::f32), {{"reverse", std::int64_t(1)}});
  CHECK(flag.find("reverse") != std::string::npos);
  Graph g;
  const auto x = g.input("x", {4, 6}, DType::f32);
  g.output(cumsum(x, 0, true), "y");
  CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
  CHECK(g.to_json().find(R"("reverse":true)") != std::string::npos);
}

TEST_CASE("cumsum fuses its producers as a prologue and its consumers as an epilogue") {
  const std::vector<Graph> graphs = scan_graphs(DType::f32, {64, 1000}, -1, false);
  const auto fused = kiln::Plan(graphs[1]).kernels();
  REQUIRE(fused.size() == 1);
  CHECK(fused[0].name.rfind("mul_exp__cumsum__mul_add_f32__scan2v4", 0) == 0);
  CHECK(kiln::Plan(graphs[1], false).kernels().size() == 5);
  // A cumsum read by a later kernel is written; a reduction of it is a kernel of its own.
  Graph h;
  const auto x = h.input("x", {8, 300}, DType::bf16);
  const auto c = cumsum(x);
  h.output(kiln::reduce("sum", c, false, -1), "s");
  h.output(c * 3.0, "c3");
  CHECK(kiln::Plan(h).kernels().size() == 2);
}

TEST_CASE("the scan template's specialization: vector width, chunks, reverse, tunables") {
  CHECK(kiln::default_scan_shape(1024) == std::pair(256, 4));
  CHECK(kiln::default_scan_shape(100000) == std::pair(256, 4));
  CHECK(kiln::default_scan_shape(4) == std::pair(32, 1));
  CHECK(kiln::default_scan_shape(100) == std::pair(32, 4));
  const kiln::KernelLaunch a = kiln::specialize_scan(plain({32768, 4096}), "cs", {});
  CHECK(a.vec == 4);
  CHECK(a.config.grid[0] == 32768);
  CHECK(a.config.block[0] == 256);
  CHECK(a.spec.expression.find(", 4, unsigned int, 256, 4, 1024, false>") != std::string::npos);
  CHECK(a.spec.name == "cs__scan2v4");
  // A row of 4099 floats has no 16-byte groups; one at a misaligned address neither.
  CHECK(kiln::specialize_scan(plain({5, 4099}), "cs", {}).vec == 1);
  CHECK(kiln::specialize_scan(plain({5, 4100}, 0x10004), "cs", {}).vec == 1);
  kiln::ScanKernel r = plain({3, 7, 40});
  r.reverse = true;
  r.axis = 1;  // along a middle axis: the rows are strided, one element a group
  const kiln::KernelLaunch b = kiln::specialize_scan(r, "cs", {{"block", 64}, {"items", 2}});
  CHECK(b.vec == 1);
  CHECK(b.config.grid[0] == 3 * 40);
  CHECK(b.spec.name == "cs__scan3v1_rev_b64i2");
  CHECK(b.spec.expression.find("kiln::Dim<40, 1, 1>, kiln::Dim<7, 40, 40>>, 1, unsigned int, 64, "
                               "2, 7, true>") != std::string::npos);
  CHECK_THROWS_WITH_AS(kiln::specialize_scan(plain({4, 8}), "cs", {{"unroll", 2}}),
                       "cs: 'unroll' is not a tunable of the scan template (block, items)",
                       kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::specialize_scan(plain({4, 8}), "cs", {{"block", 48}}), kiln::ArgumentError);
  kiln::ScanKernel off = plain({4, 8});
  off.axis = 2;
  CHECK_THROWS_AS(kiln::specialize_scan(off, "cs", {}), kiln::ShapeError);
}

TEST_CASE("every cumsum graph NVRTC-compiles for sm_80 and sm_90a") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    for (DType t : kiln::kFloatDTypes)
      for (bool reverse : {false, true})
        for (const Graph& g : scan_graphs(t, {6, 5, 100}, reverse ? 1 : -1, reverse)) {
          CAPTURE(g.to_json());
          CHECK(kiln::Plan(g).compile(e).size() == 1);
        }
  }
}

TEST_CASE("gpu: cumsum along any axis, forward and reversed, fused, matches the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(91);
  const std::vector<std::pair<Shape, std::int64_t>> cases = {
      {{7, 1000}, -1}, {{64, 4096}, -1}, {{3, 4101}, 1},  {{2, 70001}, -1},  {{1}, 0},
      {{5, 1}, -1},    {{300, 33}, 0},   {{4, 50, 6}, 1}, {{2, 3, 1, 9}, 2}, {{9, 4, 0}, 1},
  };
  for (DType t : kiln::kFloatDTypes)
    for (const auto& [shape, axis] : cases)
      for (bool reverse : {false, true})
        for (const Graph& g : scan_graphs(t, shape, axis, reverse)) {
          CAPTURE(g.to_json());
          for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
        }
  // Eager, on a transposed view: a new contiguous tensor.
  std::vector<float> host(4 * 3);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i + 1);
  const kiln::Tensor x = e.from_host({4, 3}, DType::f32, host.data());
  kiln::TensorView t = x.view();
  t.shape = {3, 4};
  t.strides = {1, 3};
  const kiln::Tensor y = kiln::call(e, "cumsum", {t}, Attrs().set("axis", 1));
  std::vector<float> got(12);
  y.copy_to_host(got.data());
  CHECK(got == std::vector<float>{1, 5, 12, 22, 2, 7, 15, 26, 3, 9, 18, 30});
}

TEST_CASE(
    "the scan template's tunables: its space, its launches' tunables and the parse are the "
    "table's rows") {
  const kiln::KernelLaunch base = kiln::specialize_scan(plain({64, 4096}), "cs", {});
  const kiln::autotune::Space space = kiln::autotune::scan_space(base.tunables);
  std::vector<std::string> names, space_names, launch_names;
  for (const auto& row : kiln::scan_tunable_table()) names.emplace_back(row.name);
  for (const auto& t : space.tunables) space_names.push_back(t.name);
  for (const auto& [name, value] : base.tunables) launch_names.push_back(name);
  CHECK(space_names == names);
  CHECK(launch_names == names);  // a map: sorted, as block, items are
  for (const auto& c : space.candidates({})) {
    CAPTURE(kiln::autotune::describe(c));
    CHECK(kiln::specialize_scan(plain({64, 4096}), "cs", c).tunables == c);
  }
  CHECK_THROWS_WITH_AS(kiln::specialize_scan(plain({64, 4096}), "cs", {{"unroll", 2}}),
                       "cs: 'unroll' is not a tunable of the scan template (block, items)",
                       kiln::ArgumentError);
}
