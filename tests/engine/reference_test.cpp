// The fp64 reference itself (CPU): a plan's model rounds where the plan's kernels store and at
// casts, and nowhere else.
#include <doctest/doctest.h>

#include <cstring>

#include "tests/engine/reference.hpp"

using kiln::DType;
using kiln::Graph;

TEST_CASE("reference: a plan's model rounds what its kernels store, and casts; nothing else") {
  Graph g;
  auto x = g.input("x", {2, 8}, DType::f32);
  kiln::Attrs to_bf16, to_f32;
  to_bf16.dtype = DType::bf16;
  to_f32.dtype = DType::f32;
  auto b = kiln::apply("cast", {x * 3.0}, to_bf16);  // id 2
  auto y = b * 1.1;                                  // id 3, bf16
  auto w = kiln::apply("cast", {y}, to_f32);          // id 4
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
