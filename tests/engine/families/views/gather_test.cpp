// gather, index_select and embedding: their shape and dtype rules and errors, read in place at
// their indices by the chains and row ops that consume them (copied as an output or for a
// product), and on the GPU against the fp64 reference: ids at 0 and at the table's end, i32 and
// i64 indices, strided views, and an index outside its axis reported as an ArgumentError naming
// the op, after which the plan runs again.
#include <doctest/doctest.h>
#include <fmt/format.h>

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

template <class E>
std::string error_of(const char* op, std::vector<kiln::Operand> args, Attrs attrs = {}) {
  try {
    kiln::infer(op, args, attrs);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("another error: ") + e.what();
  }
  return "";
}

// Graphs reading gather views, each with its plan's kernel count; index inputs are named
// "i..." and hold entries of an axis of `extent[name]`.
struct Case {
  Graph g;
  std::size_t kernels;
  std::map<std::string, std::int64_t> extent;
};

std::vector<Case> gather_cases(DType t, DType it) {
  std::vector<Case> out;
  {
    Case c;  // embedding + positional rows + layer_norm: one row kernel reading the table
    Graph& g = c.g;
    const auto w = g.input("w", {97, 40}, t);
    const auto ids = g.input("ids", {3, 7}, it);
    const auto pos = g.input("pos", {7, 40}, t);
    g.output(kiln::apply("layer_norm", {kiln::embedding(w, ids) + pos, g.input("gamma", {40}, t),
                                        g.input("beta", {40}, t)}),
             "y");
    c.kernels = 1, c.extent["ids"] = 97;
    out.push_back(std::move(c));
  }
  {
    Case c;  // gather along the last axis (an index per element) and along axis 0
    Graph& g = c.g;
    const auto x = g.input("x", {5, 9, 6}, t);
    g.output(kiln::gather(x, -1, g.input("i2", {5, 9, 11}, it)) * 2.0, "y2");
    g.output(kiln::exp(kiln::gather(x, 0, g.input("i0", {8, 9, 6}, it)) * 0.125), "y0");
    c.kernels = 2, c.extent["i2"] = 6, c.extent["i0"] = 5;
    out.push_back(std::move(c));
  }
  {
    Case c;  // index_select of a transposed view along its middle axis, then a reduction
    Graph& g = c.g;
    const auto x = kiln::apply("transpose", {g.input("x", {6, 13, 4}, t)},
                               Attrs().set("dim0", std::int64_t{0}).set("dim1", std::int64_t{2}));
    const auto s = kiln::index_select(x, 1, g.input("idx", {21}, it));
    g.output(kiln::reduce("sum", s), "y");
    c.kernels = 1, c.extent["idx"] = 13;
    out.push_back(std::move(c));
  }
  {
    Case c;  // an embedding as an output (its copy), and one read by a product (copied first)
    Graph& g = c.g;
    const auto w = g.input("w", {33, 24}, t);
    const auto ids = g.input("ids", {5}, it);
    g.output(kiln::embedding(w, ids), "rows");
    g.output(
        kiln::matmul(kiln::embedding(w, g.input("ids2", {2, 3}, it)), g.input("b", {24, 8}, t)),
        "y");
    c.kernels = 3, c.extent["ids"] = 33, c.extent["ids2"] = 33;
    out.push_back(std::move(c));
  }
  return out;
}

kiln::test::HostInputs case_inputs(const Case& c, std::mt19937_64& rng, bool ends = false) {
  kiln::test::HostInputs in = kiln::test::random_inputs(c.g, rng);
  for (const auto& [name, extent] : c.extent) {
    const auto& n = c.g.node(c.g.find(name));
    const std::size_t count = std::size_t(kiln::numel_of(n.shape));
    in[name] = kiln::test::random_bytes(n.dtype, count, -0.49, double(extent) - 0.51, rng, 1);
    if (ends && count >= 2) {  // the axis's first and last entries
      kiln::store_element(n.dtype, 0, in[name].data());
      kiln::store_element(n.dtype, double(extent - 1),
                          in[name].data() + (count - 1) * kiln::size_of(n.dtype));
    }
  }
  return in;
}

}  // namespace

TEST_CASE("gather, index_select and embedding: shapes, dtypes, and errors naming the operands") {
  const auto x = desc({5, 9, 6}, DType::bf16);
  const auto i64 = [](Shape s) { return desc(std::move(s), DType::i64); };
  CHECK(kiln::infer("gather", {x, i64({4, 9, 6})}, Attrs().set("axis", 0)).shape == Shape{4, 9, 6});
  CHECK(kiln::infer("gather", {x, i64({2, 3, 6})}, Attrs().set("axis", -1)).shape ==
        Shape{2, 3, 6});
  CHECK(kiln::infer("index_select", {x, i64({4})}, Attrs().set("axis", 1)).shape == Shape{5, 4, 6});
  const auto e = kiln::infer("embedding", {desc({50, 8}, DType::f16), desc({2, 3}, DType::i32)});
  CHECK(e.shape == Shape{2, 3, 8});
  CHECK(e.dtype == DType::f16);
  CHECK(error_of<kiln::DtypeError>("gather", {x, desc({4, 9, 6}, DType::f32)}) ==
        "gather(x: bf16[5, 9, 6], index: f32[4, 9, 6]): index must be i32 or i64, not f32");
  CHECK(error_of<kiln::ShapeError>("gather", {x, i64({4, 9})}) ==
        "gather(x: bf16[5, 9, 6], index: i64[4, 9]): index must have x's rank (3), not 2");
  CHECK(error_of<kiln::ShapeError>("gather", {x, i64({4, 10, 6})}) ==
        "gather(x: bf16[5, 9, 6], index: i64[4, 10, 6]): index's dim 1 (10) is longer than x's "
        "(9)");
  CHECK(error_of<kiln::ShapeError>("index_select", {x, i64({4})}, Attrs().set("axis", 3)) ==
        "index_select(x: bf16[5, 9, 6], index: i64[4]): axis 3 is out of range for x of rank 3");
  CHECK(error_of<kiln::ShapeError>("index_select", {x, i64({4, 1})}) ==
        "index_select(x: bf16[5, 9, 6], index: i64[4, 1]): index must have one dim, not 2");
  CHECK(error_of<kiln::ShapeError>("embedding", {x, i64({4})}) ==
        "embedding(weight: bf16[5, 9, 6], ids: i64[4]): weight must be a table [rows, dim], not "
        "of rank 3");
  CHECK(error_of<kiln::DtypeError>("embedding", {desc({5, 2}, DType::f32), desc({3}, DType::f16)})
            .find("ids must be i32 or i64, not f16") != std::string::npos);
  Graph g;
  g.output(kiln::embedding(g.input("w", {4, 2}, DType::f32), g.input("ids", {3}, DType::i32)), "y");
  CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
}

TEST_CASE(
    "a gather view is read in place by chains and row ops; copied as an output or for a "
    "product") {
  for (const auto& c : gather_cases(DType::f32, DType::i64)) {
    CAPTURE(c.g.to_json());
    const auto k = kiln::Plan(c.g).kernels();
    CHECK(k.size() == c.kernels);
  }
}

TEST_CASE("the reference's model of a plan reads a gather view at its indices") {
  auto rng = kiln::test::make_rng(131);
  for (const auto& c : gather_cases(DType::f32, DType::i32)) {
    CAPTURE(c.g.to_json());
    const auto in = case_inputs(c, rng);
    const auto exact = kiln::test::evaluate(c.g, in);
    for (bool fused : {true, false}) {
      const auto model = kiln::test::evaluate_plan(c.g, in, fused);
      for (int o : c.g.outputs()) {
        REQUIRE(model[std::size_t(o)].size() == exact[std::size_t(o)].size());
        for (std::size_t i = 0; i < exact[std::size_t(o)].size(); ++i)
          CHECK(model[std::size_t(o)][i] ==
                doctest::Approx(exact[std::size_t(o)][i]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("gpu: gather views, in place and copied, match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(132);
  for (DType t : kiln::kFloatDTypes)
    for (DType it : {DType::i32, DType::i64})
      for (const auto& c : gather_cases(t, it)) {
        CAPTURE(c.g.to_json());
        for (bool ends : {false, true})
          for (const auto& f :
               kiln::test::check_inputs_on_gpu(e, c.g, case_inputs(c, rng, ends), true))
            FAIL_CHECK(f);
      }
}

TEST_CASE("gpu: an index outside its axis is an ArgumentError naming the op; the plan then runs" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(133);
  auto cases = gather_cases(DType::f32, DType::i64);
  const Case& c = cases[0];  // the embedding + layer_norm kernel
  const kiln::Plan plan(c.g);
  for (double bad : {97.0, -1.0, 1e6}) {
    auto in = case_inputs(c, rng);
    kiln::store_element(DType::i64, bad, in["ids"].data() + 8 * 5);
    const auto dev = kiln::test::upload(e, c.g, in);
    std::string name;  // the embedding node's
    for (const auto& n : c.g.nodes())
      if (n.op == "embedding") name = n.name;
    CHECK_THROWS_WITH_AS(
        plan.run(e, dev.views),
        fmt::format("embedding '{}': ids 'ids' holds index {}, outside [0, 97): it read entry 0 "
                    "instead (indices must lie in the axis they pick along)",
                    name, std::int64_t(bad))
            .c_str(),
        kiln::ArgumentError);
    for (const auto& f : kiln::test::check_inputs_on_gpu(e, c.g, case_inputs(c, rng)))
      FAIL_CHECK(f);
  }
  // Eager: a new tensor of the rows, and the same error.
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  const std::vector<std::int32_t> ids = {2, 0, 2};
  const kiln::Tensor tw = e.from_host({3, 2}, DType::f32, w.data());
  const kiln::Tensor ti = e.from_host({3}, DType::i32, ids.data());
  const kiln::Tensor y = kiln::call(e, "embedding", {tw.view(), ti.view()});
  std::vector<float> got(6);
  y.copy_to_host(got.data());
  CHECK(got == std::vector<float>{5, 6, 1, 2, 5, 6});
  const std::vector<std::int32_t> bad = {1, 3, 0};
  const kiln::Tensor tb = e.from_host({3}, DType::i32, bad.data());
  CHECK_THROWS_WITH_AS(kiln::call(e, "embedding", {tw.view(), tb.view()}),
                       doctest::Contains("holds index 3, outside [0, 3)"), kiln::ArgumentError);
}
