// Specialization decisions, checked on the CPU: coalescing, vector width, index width.
#include "engine/families/elementwise/elementwise.hpp"

#include <kiln/graph.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/op_call.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "ops/op.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::TensorView;

namespace {

TensorView view(kiln::Shape shape, DType t, std::uint64_t data = 0x10000,
                kiln::Shape strides = {}) {
  TensorView v;
  v.shape = std::move(shape);
  v.strides = std::move(strides);
  v.dtype = t;
  v.data = data;
  return v;
}

kiln::KernelLaunch spec(const char* op, const TensorView& out, std::vector<kiln::Operand> in) {
  return kiln::specialize_call(kiln::op_call(kiln::ops::find_op(op), out, in, {}),
                               kiln::target_of("sm_90a"));
}

}  // namespace

TEST_CASE("contiguous operands coalesce to one dim with 16-byte packs") {
  auto f32 = spec("add", view({64, 1024}, DType::f32),
                  {view({64, 1024}, DType::f32), view({64, 1024}, DType::f32)});
  CHECK(f32.spec.name == "add_f32__r1v4");
  CHECK(f32.spec.expression.find("kiln::Layout<kiln::Dim<0, 4, 4, 4>>") != std::string::npos);
  CHECK(f32.spec.source.find("kiln::op::Add::apply(x[0], x[1])") != std::string::npos);
  CHECK(f32.groups == 16384);
  CHECK(f32.config.grid[0] == 128);            // 128 threads x 1 pack per block
  CHECK(f32.layout.params.at(1).size() == 4);  // a 32-bit Index
  auto bf16 = spec("silu", view({3, 5, 8}, DType::bf16), {view({3, 5, 8}, DType::bf16)});
  CHECK(bf16.spec.name == "silu_bf16__r1v8");
}

TEST_CASE("a tensor whose blocks would not fit in a grid is a ShapeError, not a truncated grid") {
  const std::int64_t n = std::int64_t(1) << 42;  // 2^40 packs of 4: 2^33 blocks of 128
  CHECK_THROWS_WITH_AS(
      spec("add", view({n}, DType::f32), {view({n}, DType::f32), view({n}, DType::f32)}),
      doctest::Contains("more than a grid holds"), kiln::ShapeError);
  const std::int64_t fits = std::int64_t(1) << 36;
  CHECK(spec("add", view({fits}, DType::f32), {view({fits}, DType::f32), view({fits}, DType::f32)})
            .config.grid[0] == unsigned(fits / 4 / 128));
}

TEST_CASE(
    "the outermost extent is the launch's, not the kernel's: one kernel for every batch size") {
  const auto softmax = [](std::int64_t rows, std::int64_t cols) {
    Graph g;
    g.output(kiln::softmax(g.input("x", {rows, 8, cols}, DType::bf16) * 0.5 +
                           g.input("m", {8, cols}, DType::bf16)));
    return kiln::plan_specs(g, true).at(0);
  };
  const auto add = [](std::int64_t rows) {
    return spec("add", view({rows, 4096}, DType::f32),
                {view({rows, 4096}, DType::f32), view({4096}, DType::f32)});
  };
  CHECK(kiln::compiler::spec_id(softmax(3, 1000)) == kiln::compiler::spec_id(softmax(77, 1000)));
  CHECK(kiln::compiler::spec_id(add(3).spec) == kiln::compiler::spec_id(add(77).spec));
  CHECK(add(3).config.grid[0] < add(77).config.grid[0]);  // the launch carries the extent
  CHECK(add(3).spec.expression.find(
            "kiln::Layout<kiln::Dim<0, 4096, 4096, 0>, kiln::Dim<1024, 4, 4, 4>>") !=
        std::string::npos);
  // Any other extent is the kernel's.
  CHECK(kiln::compiler::spec_id(softmax(3, 1000)) != kiln::compiler::spec_id(softmax(3, 1024)));

  // Precompiling a graph with a dynamic batch: the kernels of every batch of 2 or more, then
  // the one kernel of a batch of 1 that differs (a unit dim drops out of its layout).
  const auto batch_graph = [](std::int64_t batch) {
    Graph g;
    auto x = g.input("x", {batch, 8, 1000}, DType::bf16);
    auto m = g.input("m", {8, 1000}, DType::bf16);
    g.output(kiln::softmax(x * 0.5 + m));
    g.output(kiln::silu(x));
    return g;
  };
  const auto specs = kiln::plan_specs(batch_graph(-1), true),
             at64 = kiln::plan_specs(batch_graph(64), true),
             at1 = kiln::plan_specs(batch_graph(1), true);
  REQUIRE(specs.size() == 3);
  REQUIRE(at64.size() == 2);
  for (std::size_t i = 0; i < 2; ++i)
    CHECK(kiln::compiler::spec_id(specs[i]) == kiln::compiler::spec_id(at64[i]));
  REQUIRE(at1.size() == 2);
  const std::string one = kiln::compiler::spec_id(specs[2]);
  CHECK((one == kiln::compiler::spec_id(at1[0]) || one == kiln::compiler::spec_id(at1[1])));
  CHECK_THROWS_AS(kiln::plan_specs(batch_graph(-1), true, {{"x", view({4, 8, 1000}, DType::bf16)}}),
                  kiln::ArgumentError);
  // A dynamic row length: a kernel per bucket of lengths
  // (tests/engine/families/rows/dynamic_rows_test.cpp).
  Graph r;
  r.output(kiln::softmax(r.input("x", {4, -1}, DType::f32)));
  const auto buckets = kiln::plan_specs(r, true);
  CHECK(buckets.size() >= 4);
  for (const auto& s : buckets) CHECK(s.name.find("softmax_f32__at2v") == 0);
  // Along the batch axis, the reduced extent is the kernel's: refused, naming the kernel as
  // `kiln plan` does.
  Graph c;
  c.output(kiln::reduce("sum", c.input("x", {-1, 64}, DType::f32), false, 0));
  CHECK_THROWS_WITH_AS(kiln::plan_specs(c, true),
                       doctest::Contains("kernel sum_f32__dynamic (fusing "), kiln::GraphError);
  CHECK_THROWS_WITH_AS(kiln::plan_specs(c, true),
                       doctest::Contains("changes with the extent of a dynamic dim"),
                       kiln::GraphError);
  CHECK(softmax(3, 1000).expression.find("kiln::Layout<kiln::Dim<0, 8000, 0, 8000>, kiln::Dim<8, "
                                         "1000, 1000, 1000>, kiln::Dim<125, 8, 8, 8>>") !=
        std::string::npos);
}

TEST_CASE("alignment is part of the specialization") {
  const auto out = view({1024}, DType::f32);
  CHECK(spec("neg", out, {view({1024}, DType::f32, 0x10000)}).spec.name == "neg_f32__r1v4");
  CHECK(spec("neg", out, {view({1024}, DType::f32, 0x10008)}).spec.name == "neg_f32__r1v2");
  CHECK(spec("neg", out, {view({1024}, DType::f32, 0x10004)}).spec.name == "neg_f32__r1v1");
  // Odd lengths cannot be split into packs.
  CHECK(spec("neg", view({1023}, DType::f32), {view({1023}, DType::f32)}).spec.name ==
        "neg_f32__r1v1");
}

TEST_CASE("broadcast keeps stride 0 and still vectorizes the inner dim") {
  auto L = spec("add", view({32, 4096}, DType::bf16),
                {view({32, 4096}, DType::bf16), view({4096}, DType::bf16)});
  CHECK(L.spec.name == "add_bf16__r2v8");
  CHECK(L.spec.expression.find("kiln::Dim<0, 4096, 4096, 0>, kiln::Dim<512, 8, 8, 8>") !=
        std::string::npos);
  // A column broadcast ([R, 1]) has inner stride 0: one load per pack.
  auto col = spec("mul", view({32, 64}, DType::f32),
                  {view({32, 1}, DType::f32), view({32, 64}, DType::f32)});
  CHECK(col.spec.expression.find("kiln::Dim<16, 4, 0, 4>") != std::string::npos);
}

TEST_CASE("a transposed view stays 2-D and scalar-indexed") {
  auto L = spec("exp", view({8, 6}, DType::f32), {view({8, 6}, DType::f32, 0x10000, {1, 8})});
  CHECK(L.spec.name == "exp_f32__r2v1");
  CHECK(L.spec.expression.find("kiln::Dim<0, 6, 1>, kiln::Dim<6, 1, 8>") != std::string::npos);
}

TEST_CASE("scalars are runtime arguments, not part of the kernel") {
  auto a = spec("mul", view({256}, DType::f32), {view({256}, DType::f32), 2.0});
  auto b = spec("mul", view({256}, DType::f32), {view({256}, DType::f32), 3.0});
  CHECK(a.spec.expression == b.spec.expression);
  CHECK(a.spec.source == b.spec.source);
  REQUIRE(a.scalars.size() == 1);
  CHECK(a.scalars[0] == 2.0f);
  CHECK(a.spec.source.find("kiln::op::Mul::apply(x[0], s[0])") != std::string::npos);
  // The Args block: 2 pointers, then the scalar, padded to 8 bytes, where the scalar's slot says.
  CHECK(a.layout.params.at(0).size() == 24);
  REQUIRE(a.layout.scalars.size() == 1);
  CHECK(a.layout.scalars[0].offset == 16);
}

TEST_CASE("64-bit indexing from 2^31 elements on") {
  const std::int64_t big = (1ll << 31) + 8;
  auto L = spec("neg", view({big}, DType::bf16), {view({big}, DType::bf16)});
  CHECK(L.layout.params.at(1).size() == 8);  // a 64-bit Index
  CHECK(L.spec.name == "neg_bf16__r1v8_i64");
  const std::int64_t below = (1ll << 31) - 4096;
  CHECK(spec("neg", view({below}, DType::bf16), {view({below}, DType::bf16)})
            .layout.params.at(1)
            .size() == 4);
  auto odd = spec("neg", view({big + 1}, DType::bf16), {view({big + 1}, DType::bf16)});
  CHECK(odd.layout.params.at(1).size() == 8);
  CHECK(odd.spec.name == "neg_bf16__r1v1_i64");
}

TEST_CASE("bad views are ShapeErrors") {
  CHECK_THROWS_WITH_AS(
      spec("neg", view({4, 4}, DType::f32, 0x10000, {0, 1}), {view({4, 4}, DType::f32)}),
      doctest::Contains("overlap"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(spec("neg", view({4}, DType::f32), {view({4}, DType::f32, 0x10000, {-1})}),
                       doctest::Contains("negative stride"), kiln::ShapeError);
  CHECK_THROWS_AS(spec("neg", view({4}, DType::f32), {view({5}, DType::f32)}), kiln::ShapeError);
}

TEST_CASE("codegen renders a fused body; several outputs share one kernel") {
  using kiln::codegen::Ref;
  kiln::codegen::Body b;
  b.inputs = {DType::f32, DType::f32, DType::bf16};
  b.outputs = {DType::bf16, DType::f32};
  b.scalars = 1;
  b.steps = {{"kiln::op::Mul", {{Ref::Kind::input, 0}, {Ref::Kind::input, 1}}, false, DType::f32},
             {"kiln::op::Add", {{Ref::Kind::step, 0}, {Ref::Kind::input, 2}}, true, DType::bf16},
             {"kiln::op::Silu", {{Ref::Kind::step, 1}}, false, DType::f32}};
  b.results = {{Ref::Kind::step, 2}, {Ref::Kind::step, 0}};
  const std::string src = kiln::codegen::render_body(b);
  CHECK(src.find("using Inputs = kiln::Types<float, float, kiln::bf16>;") != std::string::npos);
  CHECK(src.find("const float t1 = kiln::round_to<kiln::bf16>(kiln::op::Add::apply(t0, x[2]));") !=
        std::string::npos);
  CHECK(src.find("y[1] = t0;") != std::string::npos);
  b.steps[0].args[0] = {Ref::Kind::step, 5};
  CHECK_THROWS_AS(kiln::codegen::render_body(b), kiln::ArgumentError);

  b.steps[0].args[0] = {Ref::Kind::input, 0};
  const auto v = [](kiln::Shape s, DType t) { return view(std::move(s), t); };
  auto L = kiln::specialize_elementwise(
      b, "fused", {v({64, 32}, DType::bf16), v({64, 32}, DType::f32)},
      {v({64, 32}, DType::f32), v({32}, DType::f32), v({64, 1}, DType::bf16)}, {1.5f});
  CHECK(L.spec.name == "fused__r2v4");
  CHECK(L.spec.expression.find("kiln::Dim<0, 32, 32, 32, 0, 1>, kiln::Dim<8, 4, 4, 4, 4, 0>") !=
        std::string::npos);
  CHECK(L.pointers.size() == 5);
  CHECK_THROWS_AS(
      kiln::specialize_elementwise(
          b, "fused", {v({64, 32}, DType::bf16), v({64, 31}, DType::f32)},
          {v({64, 32}, DType::f32), v({32}, DType::f32), v({64, 1}, DType::bf16)}, {1.5f}),
      kiln::ShapeError);
}

TEST_CASE(
    "kiln's kernels never parse the toolkit's half headers; its half types coexist with them") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  const auto& headers = kiln::compiler::HeaderTable::embedded();
  kiln::Graph bf16;
  auto b = bf16.input("b", {64}, kiln::DType::bf16);
  bf16.output(kiln::silu(b));
  kiln::Graph cast;  // f32 in and out, but a cast to f16 inside the chain
  auto c = cast.input("c", {64}, kiln::DType::f32);
  cast.output(kiln::cast(c * 3.0, kiln::DType::f16) * 1.0 + c);
  kiln::Graph norm;  // f32 rows with a bf16 weight: the half type is in the instantiation only
  auto x = norm.input("x", {4, 64}, kiln::DType::f32);
  auto w = norm.input("w", {64}, kiln::DType::bf16);
  norm.output(kiln::apply("rms_norm", {x, w}));
  for (const kiln::Graph* g : {&bf16, &cast, &norm}) {
    for (const kiln::KernelSpec& s : kiln::plan_specs(*g)) {
      const std::vector<std::string> closure = headers.closure(s.source);
      CHECK(std::count(closure.begin(), closure.end(), "cuda_fp16.h") == 0);
      CHECK(std::count(closure.begin(), closure.end(), "cuda_bf16.h") == 0);
      CHECK(std::count(closure.begin(), closure.end(), "kiln/dtype.cuh") == 1);
    }
    CHECK_FALSE(kiln::Plan(*g).compile(e).empty());
  }
  CHECK(kiln::plan_specs(bf16).front().source.find("kiln::Types<kiln::bf16>") != std::string::npos);

  // A template of the user's may include the toolkit's headers beside kiln's: the types differ,
  // and their bits agree. sm_75 compiles kiln's bf16 rounding without the sm_80 instruction.
  const kiln::KernelSpec both{"both",
                              R"(#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <kiln/dtype.cuh>
extern "C" __global__ void k(float* p, unsigned short* q) {
  const __nv_bfloat16 a = __float2bfloat16_rn(p[0]);
  const kiln::bf16 b = kiln::from_float<kiln::bf16>(p[0]);
  const kiln::half h = kiln::from_float<kiln::half>(p[1]);
  q[0] = __bfloat16_as_ushort(a) == b.bits;
  q[1] = __half_as_ushort(__float2half_rn(p[1])) == h.bits;
  p[2] = kiln::to_float(b) + __half2float(__ushort_as_half(h.bits));
}
)",
                              "k",
                              {"-std=c++17"}};
  for (const char* arch : {"sm_75", "sm_80", "sm_90a"})
    CHECK_FALSE(kiln::compiler::compile(both, arch).image.empty());
}

TEST_CASE(
    "layouts of reductions: outputs step by 0 only along reduced dims, which never merge with "
    "others") {
  const TensorView x = view({8, 300, 16}, DType::f32), out = view({8, 1, 16}, DType::f32);
  const std::vector<const TensorView*> views = {&out, &x};
  // Along axis 1: [8][300][16] stays three dims (the output steps by 0 along 300); packs of 4.
  const kiln::LayoutPlan along1 =
      kiln::plan_layout(views, 1, x.shape, false, 0, {false, true, false});
  REQUIRE(along1.dims.size() == 3);
  CHECK(along1.dims[1].stride[0] == 0);
  CHECK(along1.vec == 4);
  CHECK(along1.dims[2].extent == 4);  // 16 columns in groups of 4
  // A softmax along axis 1 writes every element: contiguous, yet the axis keeps its own dim.
  const TensorView full = view({8, 300, 16}, DType::f32);
  const std::vector<const TensorView*> same = {&full, &x};
  CHECK(kiln::plan_layout(same, 1, x.shape, false, 0, {false, true, false}).dims.size() == 3);
  CHECK(kiln::plan_layout(same, 1, x.shape, false, 0).dims.size() == 1);  // elementwise: one dim
  // Every dim reduced (all elements): the dims merge again, and the output is one value.
  const TensorView one = view({1, 1, 1}, DType::f32);
  const std::vector<const TensorView*> all = {&one, &x};
  const kiln::LayoutPlan every = kiln::plan_layout(all, 1, x.shape, false, 0, {true, true, true});
  CHECK(every.dims.size() == 1);
  CHECK(every.dims[0].stride[0] == 0);
  // An output stepping by 0 along a dim that is not reduced overlaps itself.
  CHECK_THROWS_WITH_AS(kiln::plan_layout(views, 1, x.shape, false, 0),
                       doctest::Contains("its elements overlap"), kiln::ShapeError);
}

TEST_CASE("layouts iterate in the output's memory order: a channels_last result is written along "
          "its channels") {
  // [2, 640, 32, 32] f16 with channels_last strides: the output a window of a [2, 1280, 32, 32]
  // channels_last concat result, the input a channels_last tensor of its own.
  const TensorView out = view({2, 640, 32, 32}, DType::f16, 0x10000, {1310720, 1, 40960, 1280});
  const TensorView in = view({2, 640, 32, 32}, DType::f16, 0x20000, {655360, 1, 20480, 640});
  const std::vector<const TensorView*> views = {&out, &in};
  const kiln::LayoutPlan lp = kiln::plan_layout(views, 1, out.shape, false, 0);
  REQUIRE(lp.dims.size() == 2);  // the pixels (N, H, W merged), then the channels
  CHECK(lp.dims[0].extent == 2 * 32 * 32);
  CHECK(lp.dims[0].stride == std::vector<std::int64_t>{1280, 640});
  CHECK(lp.vec == 8);
  CHECK(lp.dims[1].extent == 640 / 8);
  CHECK(lp.dims[1].stride == std::vector<std::int64_t>{8, 8});
  // A transposed output of a contiguous input: the output's stride-1 dim is innermost.
  const TensorView t_out = view({64, 96}, DType::f32, 0x10000, {1, 64});
  const TensorView t_in = view({64, 96}, DType::f32);
  const std::vector<const TensorView*> pair = {&t_out, &t_in};
  const kiln::LayoutPlan tp = kiln::plan_layout(pair, 1, t_out.shape, false, 0);
  REQUIRE(tp.dims.size() == 2);
  CHECK(tp.dims[1].extent == 64);
  CHECK(tp.dims[1].stride == std::vector<std::int64_t>{1, 96});
  // Rows keep the logical order: the row dim is last whatever the strides.
  CHECK(kiln::plan_layout(pair, 1, t_out.shape, true, 0).dims.back().stride[0] == 64);
}
