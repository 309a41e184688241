// The rules of users' templates beyond their launch: an integer parameter named in the instance
// (a kernel per value) and a node's output shape given as expressions over the other parameters.
#include <doctest/doctest.h>

#include <kiln/kiln.hpp>

#include "tests/support.hpp"

using kiln::DType;

TEST_CASE("templates: an integer parameter in the instance makes a kernel per value") {
  using K = kiln::TemplateParam::Kind;
  kiln::Template t("rows_of.cuh", R"(
template <class T, int N> __global__ void rows_of(T* y, int n) {
  if (threadIdx.x < N) y[threadIdx.x] = T(N);
})");
  t.params({{"y", K::tensor}, {"n", K::i32}}).instance("rows_of<{y}, {n}>").launch({"1"}, {"n"});
  kiln::Engine e(kiln::test::offline("sm_80"));
  const kiln::TensorView y = kiln::test::desc({64}, DType::f32);
  const kiln::KernelRecord a = kiln::precompile(e, t, {y, 16.0}),
                           b = kiln::precompile(e, t, {y, 32.0});
  CHECK(a.name == "rows_of_f32_n16");
  CHECK(b.name == "rows_of_f32_n32");
  CHECK(a.key != b.key);
  CHECK(kiln::precompile(e, t, {y, 16.0}).source == "memory");
  CHECK_THROWS_AS(kiln::precompile(e, t, {y, 2.5}), kiln::ArgumentError);  // not an integer
}

TEST_CASE("templates in plans: an output shape rule over the other parameters, in JSON too") {
  using K = kiln::TemplateParam::Kind;
  kiln::Template t("parts.cuh", R"(
template <class T> __global__ void parts(const T* x, T* part, int n, int S) {})");
  t.params({{"x", K::tensor}, {"part", K::tensor}, {"n", K::i32}, {"S", K::i32}})
      .instance("parts<{x}>")
      .launch({"S"}, {"32"})
      .output("part", "x", {"S", "x_dim0 * 2"});
  kiln::Graph g;
  g.define_template("parts", t);
  auto x = g.input("x", {40}, DType::bf16);
  auto p = g.add("parts", {x, 40.0, 3.0});
  CHECK(g.node(p.id()).shape == kiln::Shape{3, 80});
  CHECK(g.node(p.id()).dtype == DType::bf16);
  g.output(kiln::reduce("sum", p, false, 0), "y");
  const kiln::Graph back = kiln::Graph::parse(g.to_json());
  CHECK(back.templates().at(0).second->output_shape() ==
        std::vector<std::string>{"S", "x_dim0 * 2"});
  CHECK(back.node(back.outputs().at(0)).shape == kiln::Shape{80});
  kiln::Graph bad;
  bad.define_template("p1", kiln::Template(t).output("part", "x", {"S / 2"}));
  bad.define_template("p2", kiln::Template(t).output("part", "x", {"m"}));
  auto y = bad.input("x", {40}, DType::f32);
  CHECK_THROWS_AS(bad.add("p1", {y, 40.0, 3.0}), kiln::GraphError);  // 1.5 elements
  CHECK_THROWS_AS(bad.add("p2", {y, 40.0, 3.0}), kiln::GraphError);  // no such variable
}
