// conv2d without a GPU: its shape rules and errors, the fp64 reference against values worked by
// hand, the plans it makes (one kernel with its epilogue, channels_last read in 16-byte chunks),
// and NVRTC compiles of the GPU cases and of the tuning candidates with nothing spilled.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/codegen/autotune.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/conv/conv.hpp"
#include "engine/families/rows/rows.hpp"
#include "tests/engine/families/conv/conv_cases.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;
using V = std::vector<std::int64_t>;

namespace {

std::string error_of(std::vector<kiln::Operand> args, Attrs attrs = {}) {
  try {
    kiln::infer("conv2d", args, attrs);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<unsigned char> f32_bytes(const std::vector<double>& v) {
  std::vector<unsigned char> b(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) kiln::store_element(DType::f32, v[i], b.data() + 4 * i);
  return b;
}

// A U-Net layer's 3x3 convolution, N2 C320 64x64 f16, x, w and the output channels_last.
kiln::ConvKernel unet_conv(const char* arch) {
  kiln::ConvKernel k;
  k.arch = arch;
  k.x = kiln::test::desc({2, 320, 64, 64}, DType::f16);
  k.x.strides = {320 * 64 * 64, 1, 64 * 320, 320};
  k.w = kiln::test::desc({320, 320, 3, 3}, DType::f16);
  k.w.strides = {9 * 320, 1, 3 * 320, 320};
  k.geometry = kiln::ops::conv_geometry(k.x.shape, k.w.shape, Attrs().set("padding", V{1}));
  k.outputs = {kiln::test::desc({2, 320, 64, 64}, DType::f16)};
  k.outputs[0].strides = k.x.strides;
  k.epilogue = kiln::identity_epilogue(DType::f16);
  return k;
}

}  // namespace

TEST_CASE("conv2d: shapes, and errors naming the call and the sizes") {
  const auto x = desc({2, 8, 33, 17}, DType::f16);
  const auto w = desc({16, 8, 3, 3}, DType::f16);
  CHECK(kiln::infer("conv2d", {x, w}).shape == Shape{2, 16, 31, 15});
  CHECK(kiln::infer("conv2d", {x, w}, Attrs().set("padding", V{1})).shape == Shape{2, 16, 33, 17});
  CHECK(kiln::infer("conv2d", {x, w}, Attrs().set("padding", V{1}).set("stride", V{2})).shape ==
        Shape{2, 16, 17, 9});
  CHECK(kiln::infer("conv2d", {x, w}, Attrs().set("dilation", V{2, 1})).shape ==
        Shape{2, 16, 29, 15});
  CHECK(kiln::infer("conv2d", {x, desc({16, 4, 1, 1}, DType::f16)}, Attrs().set("groups", 2))
            .shape == Shape{2, 16, 33, 17});
  CHECK(error_of({desc({8, 33, 17}, DType::f16), w}).find("[N, C, H, W]") != std::string::npos);
  CHECK(error_of({x, desc({16, 4, 3, 3}, DType::f16)}).find("8 channels in 1 groups need 8") !=
        std::string::npos);
  CHECK(error_of({x, desc({16, 8, 3, 3}, DType::f16)}, Attrs().set("groups", 3))
            .find("groups 3 must divide") != std::string::npos);
  CHECK(error_of({x, w, desc({15}, DType::f16)}).find("bias must be [16]") != std::string::npos);
  CHECK(error_of({x, desc({16, 8, 3, 3}, DType::f32)}).find("cast one") != std::string::npos);
  CHECK(error_of({x, w}, Attrs().set("stride", V{0})).find("stride 0 is outside") !=
        std::string::npos);
  CHECK(error_of({x, w}, Attrs().set("padding", V{1, 1, 1})).find("one value") !=
        std::string::npos);
  // An empty result names the sizes that make it.
  const std::string empty = error_of({desc({1, 8, 2, 2}, DType::f16), w});
  CHECK(empty.find("empty convolution") != std::string::npos);
  CHECK(empty.find("3x3 filter over 2x2") != std::string::npos);
  // A dilated filter 5 wide over 4 columns at stride 2: none, as torch has it (not one).
  const std::string past = error_of({desc({1, 8, 16, 4}, DType::f16), w},
                                    Attrs().set("dilation", V{2}).set("stride", V{2}));
  CHECK(past.find("gives a 6x0 output") != std::string::npos);
}

TEST_CASE("conv2d: the fp64 reference gives torch's values") {
  // x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], w = [[1, 0], [0, -1]], bias 0.5: each output is
  // x[y][z] - x[y + 1][z + 1] + 0.5 over the taps inside x.
  Graph g;
  const auto x = g.input("x", {1, 1, 3, 3}, DType::f32);
  const auto w = g.input("w", {1, 1, 2, 2}, DType::f32);
  const auto b = g.input("b", {1}, DType::f32);
  g.output(kiln::apply("conv2d", {x, w, b}), "plain");
  g.output(kiln::apply("conv2d", {x, w, b}, Attrs().set("padding", V{1}).set("stride", V{2})),
           "padded");
  // Two groups of one channel: output k reads channel k only.
  const auto x2 = g.input("x2", {1, 2, 1, 2}, DType::f32);
  const auto w2 = g.input("w2", {2, 1, 1, 2}, DType::f32);
  g.output(kiln::apply("conv2d", {x2, w2}, Attrs().set("groups", 2)), "grouped");
  kiln::test::HostInputs in;
  in["x"] = f32_bytes({1, 2, 3, 4, 5, 6, 7, 8, 9});
  in["w"] = f32_bytes({1, 0, 0, -1});
  in["b"] = f32_bytes({0.5});
  in["x2"] = f32_bytes({1, 2, 10, 20});
  in["w2"] = f32_bytes({1, 1, 2, -1});
  const auto v = kiln::test::evaluate(g, in);
  const auto& outs = g.outputs();
  CHECK(v[std::size_t(outs[0])] == std::vector<double>{-3.5, -3.5, -3.5, -3.5});
  // padding 1, stride 2: windows at rows/cols -1 and 1
  CHECK(v[std::size_t(outs[1])] == std::vector<double>{-0.5, -2.5, -6.5, -3.5});
  CHECK(v[std::size_t(outs[2])] == std::vector<double>{3, 0});
}

TEST_CASE("conv2d: the fp64 reference matches the definition summed term by term") {
  // Two images, groups of 3 channels, dilation 2, stride 2, padding (1, 2): the definition's
  // sum written out here, against the reference's (which reorders x and w to sum along C).
  const std::int64_t N = 2, C = 6, H = 7, W = 9, K = 4, R = 3, S = 2, G = 2;
  Graph g;
  const auto x = g.input("x", {N, C, H, W}, DType::f32);
  const auto w = g.input("w", {K, C / G, R, S}, DType::f32);
  g.output(kiln::apply("conv2d", {x, w},
                       Attrs()
                           .set("groups", G)
                           .set("dilation", V{2})
                           .set("stride", V{2})
                           .set("padding", V{1, 2})),
           "y");
  std::vector<float> xv(std::size_t(N * C * H * W)), wv(std::size_t(K * C / G * R * S));
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 7 % 13) - 6) / 4;
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = float(int(i * 5 % 11) - 5) / 8;
  kiln::test::HostInputs in;
  in["x"] = f32_bytes(std::vector<double>(xv.begin(), xv.end()));
  in["w"] = f32_bytes(std::vector<double>(wv.begin(), wv.end()));
  const auto values = kiln::test::evaluate(g, in);
  const std::vector<double>& got = values[std::size_t(g.outputs()[0])];
  const std::int64_t P = (H + 2 - 2 * (R - 1) - 1) / 2 + 1, Q = (W + 4 - 2 * (S - 1) - 1) / 2 + 1;
  REQUIRE(got.size() == std::size_t(N * K * P * Q));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          double want = 0;
          for (std::int64_t c = 0; c < C / G; ++c)
            for (std::int64_t r = 0; r < R; ++r)
              for (std::int64_t t = 0; t < S; ++t) {
                const std::int64_t y = p * 2 - 1 + 2 * r, z = q * 2 - 2 + 2 * t;
                if (y >= 0 && y < H && z >= 0 && z < W)
                  want += double(xv[std::size_t(((n * C + k / 2 * 3 + c) * H + y) * W + z)]) *
                          double(wv[std::size_t(((k * 3 + c) * R + r) * S + t)]);
              }
          CHECK(got[std::size_t(((n * K + k) * P + p) * Q + q)] == doctest::Approx(want));
        }
}

TEST_CASE("conv2d plans one kernel with its epilogue: a residual, a batch norm, a time embedding") {
  for (bool cl : {true, false}) {
    kiln::test::ConvCase c{2, 64, 16, 16, 128, 3, 3, {1}, {1}, {1}, 1, cl, true, 2};
    const Graph g = kiln::test::conv_graph(c, DType::f16);
    const auto kernels = kiln::Plan(g).kernels();
    REQUIRE(kernels.size() == 1);
    CAPTURE(kernels[0].name);
    CHECK(kernels[0].name.rfind("conv2d", 0) == 0);
    // sm_90a (Plan's default): channels_last on wgmma through an im2col map, NCHW on mma.sync
    // loading element by element.
    CHECK(kernels[0].name.find(cl ? "_im2col_bias" : "_ee_bias") != std::string::npos);
  }
  // A batch norm (its [K] statistics read in place as [K, 1, 1]) or a time embedding ([N, K]
  // seen as [N, K, 1, 1]) and a SiLU after the convolution: its epilogue, on both paths.
  for (int epilogue : {4, 5})
    for (const std::string arch : {"sm_80", "sm_90a"}) {
      kiln::test::ConvCase c{8, 64, 16, 16, 64, 3, 3, {1}, {1}, {1}, 1, true, false, epilogue};
      const auto kernels = kiln::Plan(kiln::test::conv_graph(c, DType::f16)).kernels(arch);
      CAPTURE(epilogue);
      CAPTURE(arch);
      REQUIRE(kernels.size() == 1);  // the norm or the embedding and the SiLU in it
      CHECK(kernels[0].name.rfind("conv2d", 0) == 0);
      // The embedding steps per image alone: the wgmma path reads it all the same.
      if (arch == "sm_90a") CHECK(kernels[0].name.find("__wg") != std::string::npos);
    }
}

TEST_CASE("conv2d: the GPU case's convolutions NVRTC-compile for sm_80 and sm_90a, nothing "
          "spilled") {
  std::vector<std::string> bad;
  int compiled = 0;
  for (DType t : {DType::f16, DType::f32})
    for (const auto& c : kiln::test::conv_cases())
      for (const char* arch : {"sm_80", "sm_90a"}) {
        const Graph g = kiln::test::conv_graph(c, t);
        for (const auto& spec : kiln::plan_specs(g, true, {}, nullptr, arch)) {
          if (spec.name.rfind("conv2d", 0) != 0) continue;
          const kiln::CompiledKernel k = kiln::compiler::compile(spec, arch);
          if (k.spill_bytes)  // with ptxas's log, which tells a spill from a call's frame
            bad.push_back(
                fmt::format("{} {}: {} bytes spilled; {}", spec.name, arch, k.spill_bytes, k.log));
          ++compiled;
        }
      }
  CHECK(bad.empty());
  for (const auto& b : bad) MESSAGE(b);
  CHECK(compiled >= 2 * 2 * int(kiln::test::conv_cases().size()));
}

TEST_CASE("conv2d's depthwise kernel compiles with nothing spilled for every filter and step it "
          "takes") {
  // Its R, S (up to 7) and steps along W (up to 2) are template parameters, and it has no
  // tuning space: the largest of each compile here, with an epilogue reading a second input.
  std::vector<std::string> bad;
  int compiled = 0;
  for (DType t : {DType::f16, DType::f32})
    for (std::int64_t r : {1, 7})
      for (std::int64_t step : {1, 2}) {
        kiln::test::ConvCase c{1, 16, 20, 23, 16, r, r, V{1, step}, {r / 2}, V{1, step}, 16,
                               true, true, 2};
        for (const auto& spec :
             kiln::plan_specs(kiln::test::conv_graph(c, t), true, {}, nullptr, "sm_90a")) {
          if (spec.name.find("__dw") == std::string::npos) continue;
          const kiln::CompiledKernel k = kiln::compiler::compile(spec, "sm_90a");
          if (k.spill_bytes) bad.push_back(fmt::format("{}: {} bytes spilled", spec.name,
                                                       k.spill_bytes));
          ++compiled;
        }
      }
  for (const auto& b : bad) MESSAGE(b);
  CHECK(bad.empty());
  CHECK(compiled == 2 * 2 * 2);
}

TEST_CASE("conv2d's tuning spaces: 8 or more candidates on each path, each compiling with "
          "nothing spilled") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    const kiln::ConvKernel k = unet_conv(arch);
    const kiln::KernelLaunch base = kiln::specialize_conv(k, "conv2d_f16");
    const bool wgmma = std::string(arch) == "sm_90a";
    CHECK(base.spec.name.find(wgmma ? "__wg128x" : "_vv") != std::string::npos);
    kiln::autotune::DeviceLimits limits;
    limits.max_shared_bytes_per_block = wgmma ? 227 * 1024 : 163 * 1024;
    const auto candidates = kiln::autotune::conv_space(base).candidates(limits);
    CHECK(candidates.size() >= 8);
    std::vector<std::string> bad;
    const std::size_t step = std::max<std::size_t>(1, candidates.size() / 12);
    for (std::size_t i = 0; i < candidates.size(); i += step) {
      const kiln::KernelLaunch L =
          kiln::specialize_conv(k, "conv2d_f16", kiln::gemm_tunables(candidates[i], "conv2d_f16"));
      const kiln::CompiledKernel c = kiln::compiler::compile(L.spec, arch);
      if (c.spill_bytes != 0 || c.log.find("serialized") != std::string::npos)
        bad.push_back(fmt::format("{}: {} bytes spilled; {}", L.spec.name, c.spill_bytes, c.log));
    }
    for (const auto& b : bad) MESSAGE(b);
    CHECK(bad.empty());
    MESSAGE(fmt::format("{}: {} candidates, every {}th compiled", arch, candidates.size(), step));
  }
}

TEST_CASE("conv2d's wgmma kernel stores a channels_last output by TMA, unless it has a bias or "
          "unaligned rows") {
  kiln::ConvKernel k = unet_conv("sm_90a");  // the pixels of both images: one matrix of rows
  const auto maps = [&k] { return kiln::specialize_conv(k, "conv2d_f16").layout.maps.size(); };
  CHECK(maps() == 3u);
  k.bias = kiln::test::desc({320}, DType::f16);
  CHECK(maps() == 2u);
  k.bias.reset();
  // Pixels 324 channels apart: 648 bytes, not a multiple of 16, so the staged walk.
  k.outputs[0].strides = {324 * 64 * 64, 1, 64 * 324, 324};
  CHECK(maps() == 2u);
  CHECK(kiln::specialize_conv(k, "conv2d_f16").spec.name.find("__wg128x") != std::string::npos);
}

TEST_CASE("conv2d takes the wgmma path where it fits, and channels_last in gives channels_last "
          "out") {
  auto name_of = [](const kiln::test::ConvCase& c, DType t) {
    const auto specs = kiln::plan_specs(kiln::test::conv_graph(c, t), true, {}, nullptr, "sm_90a");
    for (const auto& s : specs)
      if (s.name.rfind("conv2d", 0) == 0) return s.name;
    return std::string();
  };
  const kiln::test::ConvCase cl{2, 64, 16, 16, 128, 3, 3, {1}, {1}, {1}, 1, true, true, 2};
  CHECK(name_of(cl, DType::f16).find("__wg128x") != std::string::npos);
  CHECK(name_of(cl, DType::bf16).find("__wg128x") != std::string::npos);
  CHECK(name_of(cl, DType::f32).find("__wg") == std::string::npos);  // f32: mma.sync
  auto nchw = cl;
  nchw.channels_last = false;
  CHECK(name_of(nchw, DType::f16).find("__wg") == std::string::npos);
  auto grouped = cl;
  grouped.groups = 2;
  CHECK(name_of(grouped, DType::f16).find("__wg") == std::string::npos);
  // Depthwise (groups = C = K) over channels_last x: its own memory-bound kernel on any arch
  // and dtype; NCHW x, or a channel multiplier, on mma.sync.
  const kiln::test::ConvCase dw{2, 64, 16, 16, 64, 3, 3, {1}, {1}, {1}, 64, true, true, 1};
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    CHECK(name_of(dw, t).find("__dw3x3_bias") != std::string::npos);
  auto dw_nchw = dw;
  dw_nchw.channels_last = false;
  CHECK(name_of(dw_nchw, DType::f16).find("__dw") == std::string::npos);
  auto dw_twice = dw;
  dw_twice.k = 128;  // two outputs per channel
  CHECK(name_of(dw_twice, DType::f16).find("__dw") == std::string::npos);
  auto odd = cl;
  odd.c = 13;  // 26 bytes a pixel: TMA needs strides of 16-byte multiples
  CHECK(name_of(odd, DType::f16).find("__wg") == std::string::npos);
  // The result's memory order: channels_last for channels_last x, passed on through silu.
  for (bool channels_last : {true, false}) {
    Graph g;
    auto c = cl;
    c.channels_last = channels_last, c.epilogue = 1;
    g = kiln::test::conv_graph(c, DType::f16);
    std::map<std::string, kiln::TensorView> inputs;
    for (const auto& n : g.nodes())
      if (n.op == "input") inputs[n.name] = desc(n.shape, n.dtype);
    const auto outs = kiln::Plan(g).outputs(inputs);
    const Shape want = channels_last ? Shape{128 * 16 * 16, 1, 16 * 128, 128} : Shape{};
    CHECK(outs.at("y").strides == want);
  }
}

TEST_CASE("conv2d's default tiles on issue 51's layers are those measured fastest") {
  // The width and split measured fastest (`kiln tune`, then configurations graphed beside cuDNN:
  // bench/NOTES.md): the estimate (gemm_sm90.cpp's wgmma_fit_tunables) must keep choosing them.
  struct Row {
    kiln::test::ConvCase c;
    const char* tile;
  };
  const std::vector<Row> rows = {
      {{2, 320, 64, 64, 320, 3, 3, {1}, {1}, {1}}, "__wg128x160s4_"},
      {{2, 640, 32, 32, 640, 3, 3, {1}, {1}, {1}}, "__wg128x160s4k2_"},
      {{2, 1280, 16, 16, 1280, 3, 3, {1}, {1}, {1}}, "__wg128x192s4k4_"},
      {{8, 256, 64, 64, 256, 3, 3, {1}, {1}, {1}}, "__wg128x256s4_"},
      {{2, 320, 64, 64, 320, 3, 3, {2}, {1}, {1}}, "__wg128x80s4k2_"},
      {{2, 640, 32, 32, 1280, 1, 1, {1}, {0}, {1}}, "__wg128x160s4_"},
  };
  for (const Row& r : rows) {
    const auto specs =
        kiln::plan_specs(kiln::test::conv_graph(r.c, DType::f16), true, {}, nullptr, "sm_90a");
    std::string name;
    for (const auto& s : specs)
      if (s.name.rfind("conv2d", 0) == 0) name = s.name;
    CAPTURE(name);
    CHECK(name.find(r.tile) != std::string::npos);
  }
}

TEST_CASE("memory order: a value a reshape reads in place stays row-major; a view nothing reads "
          "is not made") {
  // conv (channels_last) -> silu -> reshape read in place by a row op: the reshape needs
  // row-major memory, so the silu's result is not laid out channels_last.
  Graph g;
  const auto x = kiln::apply("permute", {g.input("x", {2, 8, 8, 64}, DType::f16)},
                             Attrs().set("dims", V{0, 3, 1, 2}));
  const auto w = kiln::apply("permute", {g.input("w", {16, 3, 3, 64}, DType::f16)},
                             Attrs().set("dims", V{0, 3, 1, 2}));
  const auto y = kiln::silu(kiln::apply("conv2d", {x, w}, Attrs().set("padding", V{1})));
  g.output(kiln::softmax(kiln::apply("reshape", {y}, Attrs().set("shape", V{2, 16 * 64}))), "s");
  std::map<std::string, kiln::TensorView> inputs;
  for (const auto& n : g.nodes())
    if (n.op == "input") inputs[n.name] = desc(n.shape, n.dtype);
  const auto specs = kiln::plan_specs(g, true, inputs, nullptr, "sm_90a");
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name.find("conv2d") == 0);
  CHECK(specs[0].name.find("__wg") == std::string::npos);  // a row-major result: mma.sync
  // A reshape of a transposed input that no kernel reads: planning does not try to make it.
  Graph h;
  const auto hx = h.input("x", {3, 2, 5}, DType::f32);
  kiln::apply("reshape", {hx}, Attrs().set("shape", V{6, 5}));  // unused
  h.output(kiln::silu(hx), "y");
  kiln::TensorView t = desc({3, 2, 5}, DType::f32);
  t.strides = {10, 1, 2};
  CHECK(kiln::plan_specs(h, true, {{"x", t}}, nullptr, "sm_90a").size() == 1);
}
