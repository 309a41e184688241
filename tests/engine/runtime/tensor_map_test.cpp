// Templates with TMA tensor maps (TemplateParam::Kind::tensor_map, kiln/tma.cuh): the map's
// description from a view (dims innermost first, strides in bytes) and every view or box TMA
// cannot take refused as an ArgumentError; NVRTC compiles such a template for sm_90a with no
// GPU; graph JSON carries the box and swizzle; on a GPU a tile copy through the map matches the
// reference on padded views, and a plan encodes the map again for each tensor it is given.
#include "engine/runtime/tensor_map.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <kiln/kiln.hpp>

#include "engine/codegen/launch.hpp"
#include "engine/families/user/user_template.hpp"
#include "tests/support.hpp"

using kiln::DType;

namespace {

// out[r, c] = src[r, c] * s: each block loads a BR x BC tile of src through the map.
const char* kTileScale = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "kiln/tma.cuh"

template <class T, int BR, int BC>
__global__ void tile_scale(const __grid_constant__ kiln::TensorMap src, T* out, int rows,
                           int cols, float s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ alignas(128) T tile[BR * BC];
  __shared__ unsigned long long bar;
  const int r0 = blockIdx.y * BR, c0 = blockIdx.x * BC;
  if (threadIdx.x == 0) kiln::tma::barrier_init(&bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    kiln::tma::arrive_expect_bytes(&bar, BR * BC * sizeof(T));
    kiln::tma::load_2d(tile, &src, c0, r0, &bar);
  }
  kiln::tma::barrier_wait(&bar, 0);
  for (int i = threadIdx.x; i < BR * BC; i += blockDim.x) {
    const int r = r0 + i / BC, c = c0 + i % BC;
    if (r < rows && c < cols) out[(long long)r * cols + c] = T(float(tile[i]) * s);
  }
#endif
}
)";

kiln::Template tile_scale(int swizzle = 0) {
  using K = kiln::TemplateParam::Kind;
  kiln::Template t("tile_scale.cuh", kTileScale);
  t.params({{"src", K::tensor_map, {"BR", "BC"}, swizzle},
            {"out", K::tensor},
            {"rows", K::i32},
            {"cols", K::i32},
            {"s", K::f32}})
      .instance("tile_scale<{out}, {BR}, {BC}>")
      .tunable("BR", {16, 32})
      .tunable("BC", {32, 64})
      .launch({"ceilf(cols / BC)", "ceilf(rows / BR)"}, {"128"});
  return t;
}

// A [rows, cols] view of rows `ld` elements apart.
kiln::TensorView padded(std::int64_t rows, std::int64_t cols, std::int64_t ld, DType t) {
  kiln::TensorView v = kiln::test::desc({rows, cols}, t);
  v.strides = {ld, 1};
  return v;
}

std::vector<kiln::Operand> args_of(const kiln::TensorView& src, const kiln::TensorView& out) {
  return {src, out, double(out.shape[0]), double(out.shape[1]), 2.0};
}

}  // namespace

TEST_CASE("tensor maps: a view's description, innermost first, strides in bytes") {
  kiln::TensorView v = padded(100, 30, 32, DType::bf16);
  v.data = 1 << 20;
  const kiln::TensorMapDesc d = kiln::runtime::describe_tensor_map(v, {16, 64}, 128, "test");
  CHECK(d.rank == 2);
  CHECK(d.dims[0] == 30);
  CHECK(d.dims[1] == 100);
  CHECK(d.strides[0] == 64);  // 32 bf16
  CHECK(d.box[0] == 64);
  CHECK(d.box[1] == 16);
  const auto refused = [](kiln::TensorView view, std::vector<std::uint32_t> box, int swizzle) {
    CHECK_THROWS_AS(kiln::runtime::describe_tensor_map(view, box, swizzle, "test"),
                    kiln::ArgumentError);
  };
  refused(padded(100, 30, 30, DType::bf16), {16, 64}, 0);     // rows 60 bytes apart
  refused(padded(100, 30, 32, DType::bf16), {16, 257}, 0);    // a box over 256
  refused(padded(100, 30, 32, DType::bf16), {16, 0}, 0);      // an empty box
  refused(padded(100, 30, 32, DType::bf16), {64}, 0);         // a box of another rank
  refused(padded(100, 30, 32, DType::bf16), {16, 4}, 0);      // box rows of 8 bytes
  refused(padded(100, 30, 32, DType::bf16), {16, 128}, 128);  // 256-byte rows, 128-byte swizzle
  refused(padded(100, 30, 32, DType::bf16), {16, 64}, 16);    // no such swizzle
  refused(padded(0, 30, 32, DType::bf16), {16, 64}, 0);       // empty
  kiln::TensorView column = padded(100, 30, 32, DType::f32);
  column.strides = {1, 100};
  refused(column, {16, 4}, 0);  // innermost stride 100
  kiln::TensorView odd = padded(100, 32, 32, DType::f32);
  odd.data = 8;
  refused(odd, {16, 4}, 0);  // an address 8 bytes past 16
  refused(kiln::test::desc({2, 2, 2, 2, 2, 4}, DType::f32), {1, 1, 1, 1, 1, 4}, 0);  // rank 6
}

TEST_CASE("tensor maps: a TMA template compiles for sm_90a offline; bad maps refused, typed") {
  kiln::test::TempDir tmp;
  kiln::Engine e(kiln::test::offline("sm_90a", tmp / "cache"));
  for (DType t : {DType::f32, DType::bf16}) {
    CAPTURE(t);
    const kiln::TensorView src = padded(300, 250, 256, t), out = kiln::test::desc({300, 250}, t);
    const kiln::KernelRecord r = kiln::precompile(e, tile_scale(), args_of(src, out));
    CHECK(r.source == "compiled");
    CHECK(r.name == fmt::format("tile_scale_{0}_{0}_BC32_BR16", kiln::name_of(t)));
    CHECK(kiln::precompile(e, tile_scale(), args_of(src, out), {{"BC", 64}}).source == "compiled");
  }
  const kiln::TensorView out = kiln::test::desc({300, 250}, DType::f32);
  const auto refused = [&](const kiln::Template& t, const kiln::TensorView& src,
                           const std::map<std::string, int>& tun) {
    CHECK_THROWS_AS(kiln::precompile(e, t, args_of(src, out), tun), kiln::ArgumentError);
  };
  refused(tile_scale(), padded(300, 250, 250, DType::f32), {});             // rows 1000 bytes apart
  refused(tile_scale(), padded(300, 250, 256, DType::f32), {{"BC", 512}});  // box over 256
  refused(tile_scale(64), padded(300, 250, 256, DType::f32), {{"BC", 32}});  // 128 B > 64 B
  kiln::Template no_box = tile_scale();
  std::vector<kiln::TemplateParam> params = no_box.param_list();
  params[0].box.clear();
  no_box.params(params);
  refused(no_box, padded(300, 250, 256, DType::f32), {});
  kiln::Template boxed_pointer = tile_scale();
  params = boxed_pointer.param_list();
  params[1].box = {"BR"};
  boxed_pointer.params(params);
  refused(boxed_pointer, padded(300, 250, 256, DType::f32), {});
  kiln::Engine again(kiln::test::offline("sm_90a", tmp / "cache"));
  CHECK(kiln::precompile(again, tile_scale(), args_of(padded(300, 250, 256, DType::f32), out))
            .source == "disk");
}

TEST_CASE("tensor maps: a template's map is a parameter of its pointer, zero until encoded") {
  const kiln::TensorView src = padded(300, 250, 256, DType::f32),
                         out = kiln::test::desc({300, 250}, DType::f32);
  const kiln::KernelLaunch L =
      kiln::specialize_template(tile_scale(), args_of(src, out), {}, false);
  REQUIRE(L.layout.maps.size() == 1);
  CHECK(L.layout.maps[0].map.param == 0);
  CHECK(L.layout.maps[0].map.pointer == 0);  // no output parameter: pointers in order
  CHECK(L.layout.maps[0].map.desc.rank == 2);
  CHECK(L.layout.maps[0].what == "template tile_scale.cuh: tensor map src");
  CHECK(L.layout.params[0].bytes() ==
        std::vector<unsigned char>(kiln::runtime::kTensorMapBytes, 0));
  kiln::LaunchParams p(L);
  CHECK(p.maps_stale());  // the first launch encodes it
}

TEST_CASE("tensor maps in graph JSON: box and swizzle read, written back, refused typed") {
  kiln::Graph g;
  g.define_template("tile_scale", tile_scale(64).output("out", "src"));
  auto x = g.input("x", {64, 64}, DType::bf16);
  g.output(g.add("tile_scale", {x, 64.0, 64.0, 2.0}), "y");
  const kiln::Graph back = kiln::Graph::parse(g.to_json());
  const kiln::TemplateParam& p = back.templates().at(0).second->param_list().at(0);
  CHECK(p.kind == kiln::TemplateParam::Kind::tensor_map);
  CHECK(p.box == std::vector<std::string>{"BR", "BC"});
  CHECK(p.swizzle == 64);
  CHECK(kiln::Plan(back).kernels("sm_90a").at(0).name == "tile_scale_bf16_bf16_BC32_BR16");
  std::string text = g.to_json();
  const std::size_t at = text.find(R"("box")");
  REQUIRE(at != std::string::npos);
  text.replace(at, 5, R"("bx")");  // a tensor_map without its box
  CHECK_THROWS_AS(kiln::Graph::parse(text), kiln::GraphError);
}

TEST_CASE("gpu: a TMA tile copy matches the reference on padded views, eager and in a plan" *
          doctest::skip(!kiln::test::has_gpu() || !kiln::test::has_arch(9))) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(91);
  const auto check = [](DType t, const std::vector<unsigned char>& in, std::int64_t ld,
                        const std::vector<unsigned char>& out, std::int64_t rows, std::int64_t cols,
                        const std::string& what) {
    const std::size_t es = kiln::size_of(t);
    int bad = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const double want = 2 * kiln::load_element(t, &in[std::size_t(r * ld + c) * es]);
        const double got = kiln::load_element(t, &out[std::size_t(r * cols + c) * es]);
        if (!(std::fabs(got - want) <= 1e-2 * std::fabs(want)) && ++bad <= 3)
          FAIL_CHECK(fmt::format("{}: [{}, {}]: {} against {}", what, r, c, got, want));
      }
  };
  for (DType t : {DType::f32, DType::bf16}) {
    const std::int64_t align = 16 / std::int64_t(kiln::size_of(t));
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 5}, {37, 100}, {300, 257}}) {
      const std::int64_t ld = (cols + align - 1) / align * align + align;
      const std::vector<unsigned char> host =
          kiln::test::random_bytes(t, std::size_t(rows * ld), -3, 3, rng);
      const kiln::Tensor x = e.from_host({rows, ld}, t, host.data());
      kiln::TensorView src = x.view();
      src.shape = {rows, cols};
      src.strides = {ld, 1};
      for (int br : {16, 32})
        for (int bc : {32, 64}) {
          kiln::Tensor y = e.empty({rows, cols}, t);
          y.fill_bytes(0xff);
          kiln::launch(e, tile_scale(), args_of(src, y.view()), {{"BR", br}, {"BC", bc}});
          check(t, host, ld, kiln::test::bytes_of(y), rows, cols,
                fmt::format("{} [{}, {}] ld {} BR {} BC {}", kiln::name_of(t), rows, cols, ld, br,
                            bc));
        }
    }
    // A plan encodes the map again for each input: run on one tensor, replay on another.
    kiln::Graph g;
    g.define_template("tile_scale", tile_scale().output("out", "src"));
    const std::int64_t rows = 70, cols = 96;
    auto in = g.input("x", {rows, cols}, t);
    g.output(g.add("tile_scale", {in, double(rows), double(cols), 2.0}), "y");
    const kiln::Plan plan(g);
    for (int round = 0; round < 3; ++round) {
      const std::vector<unsigned char> host =
          kiln::test::random_bytes(t, std::size_t(rows * cols), -3, 3, rng);
      const kiln::Tensor x = e.from_host({rows, cols}, t, host.data());
      kiln::Tensor y = e.empty({rows, cols}, t);
      y.fill_bytes(0xff);
      if (round == 0)
        plan.run(e, {{"x", x.view()}}, {{"y", y.view()}});
      else
        plan.replay(e, {{"x", x.view()}}, {{"y", y.view()}});
      check(t, host, cols, kiln::test::bytes_of(y), rows, cols,
            fmt::format("{} plan round {}", kiln::name_of(t), round));
    }
  }
}
