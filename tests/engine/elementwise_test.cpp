// Specialization decisions, checked on the CPU: coalescing, vector width, index width.
#include "engine/elementwise.hpp"
#include "ops/op.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::TensorView;

namespace {

TensorView view(kiln::Shape shape, DType t, std::uint64_t data = 0x10000, kiln::Shape strides = {}) {
  TensorView v;
  v.shape = std::move(shape);
  v.strides = std::move(strides);
  v.dtype = t;
  v.data = data;
  return v;
}

kiln::ElementwiseLaunch spec(const char* op, const TensorView& out, std::vector<kiln::Operand> in) {
  return kiln::specialize_elementwise(kiln::ops::find_op(op), out, in);
}

}  // namespace

TEST_CASE("contiguous operands coalesce to one dim with 16-byte packs") {
  auto f32 = spec("add", view({64, 1024}, DType::f32), {view({64, 1024}, DType::f32), view({64, 1024}, DType::f32)});
  CHECK(f32.spec.name == "add_f32_f32__r1v4");
  CHECK(f32.spec.expression.find("kiln::Dim<16384, 4, 4, 4, 0>") != std::string::npos);
  CHECK(f32.groups == 16384);
  CHECK(f32.grid == 32);  // 256 threads x 2 packs per block
  CHECK_FALSE(f32.index64);
  auto bf16 = spec("silu", view({3, 5, 8}, DType::bf16), {view({3, 5, 8}, DType::bf16)});
  CHECK(bf16.spec.name == "silu_bf16__r1v8");
}

TEST_CASE("alignment is part of the specialization") {
  const auto out = view({1024}, DType::f32);
  CHECK(spec("neg", out, {view({1024}, DType::f32, 0x10000)}).spec.name == "neg_f32__r1v4");
  CHECK(spec("neg", out, {view({1024}, DType::f32, 0x10008)}).spec.name == "neg_f32__r1v2");
  CHECK(spec("neg", out, {view({1024}, DType::f32, 0x10004)}).spec.name == "neg_f32__r1v1");
  // Odd lengths cannot be split into packs.
  CHECK(spec("neg", view({1023}, DType::f32), {view({1023}, DType::f32)}).spec.name == "neg_f32__r1v1");
}

TEST_CASE("broadcast keeps stride 0 and still vectorizes the inner dim") {
  auto L = spec("add", view({32, 4096}, DType::bf16), {view({32, 4096}, DType::bf16), view({4096}, DType::bf16)});
  CHECK(L.spec.name == "add_bf16_bf16__r2v8");
  CHECK(L.spec.expression.find("kiln::Dim<32, 4096, 4096, 0, 0>, kiln::Dim<512, 8, 8, 8, 0>") != std::string::npos);
  // A column broadcast ([R, 1]) has inner stride 0: one load per pack.
  auto col = spec("mul", view({32, 64}, DType::f32), {view({32, 1}, DType::f32), view({32, 64}, DType::f32)});
  CHECK(col.spec.expression.find("kiln::Dim<16, 0, 4, 0, 0>") == std::string::npos);
  CHECK(col.spec.expression.find("kiln::Dim<16, 4, 0, 4, 0>") != std::string::npos);
}

TEST_CASE("a transposed view stays 2-D and scalar-indexed") {
  auto L = spec("exp", view({8, 6}, DType::f32), {view({8, 6}, DType::f32, 0x10000, {1, 8})});
  CHECK(L.spec.name == "exp_f32__r2v1");
  CHECK(L.spec.expression.find("kiln::Dim<8, 6, 1, 0, 0>, kiln::Dim<6, 1, 8, 0, 0>") != std::string::npos);
}

TEST_CASE("scalars are runtime arguments, not part of the kernel") {
  auto a = spec("mul", view({256}, DType::f32), {view({256}, DType::f32), 2.0});
  auto b = spec("mul", view({256}, DType::f32), {view({256}, DType::f32), 3.0});
  CHECK(a.spec.expression == b.spec.expression);
  CHECK(a.scalars[1] == 2.0f);
  CHECK(a.spec.expression.find("kiln::Scalar") != std::string::npos);
}

TEST_CASE("64-bit indexing from 2^31 elements on") {
  const std::int64_t big = (1ll << 31) + 8;
  auto L = spec("neg", view({big}, DType::bf16), {view({big}, DType::bf16)});
  CHECK(L.index64);
  CHECK(L.spec.name == "neg_bf16__r1v8_i64");
  const std::int64_t below = (1ll << 31) - 4096;
  CHECK_FALSE(spec("neg", view({below}, DType::bf16), {view({below}, DType::bf16)}).index64);
  auto odd = spec("neg", view({big + 1}, DType::bf16), {view({big + 1}, DType::bf16)});
  CHECK(odd.index64);
  CHECK(odd.spec.name == "neg_bf16__r1v1_i64");
}

TEST_CASE("bad views are ShapeErrors") {
  CHECK_THROWS_WITH_AS(spec("neg", view({4, 4}, DType::f32, 0x10000, {0, 1}), {view({4, 4}, DType::f32)}),
                       doctest::Contains("overlap"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(spec("neg", view({4}, DType::f32), {view({4}, DType::f32, 0x10000, {-1})}),
                       doctest::Contains("negative stride"), kiln::ShapeError);
  CHECK_THROWS_AS(spec("neg", view({4}, DType::f32), {view({5}, DType::f32)}), kiln::ShapeError);
}
