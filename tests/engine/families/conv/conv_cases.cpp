// The conv2d tests' convolutions (conv_cases.hpp).
#include "tests/engine/families/conv/conv_cases.hpp"

#include <kiln/norms.hpp>

namespace kiln::test {
namespace {

// An [n, c, h, w] tensor stored channels_last: an [n, h, w, c] input permuted.
Value stored(Graph& g, const std::string& name, const Shape& s, DType t, bool channels_last) {
  if (!channels_last) return g.input(name, s, t);
  return apply("permute", {g.input(name, {s[0], s[2], s[3], s[1]}, t)},
               Attrs().set("dims", std::vector<std::int64_t>{0, 3, 1, 2}));
}

}  // namespace

std::vector<ConvCase> conv_cases() {
  using V = std::vector<std::int64_t>;
  return {
      {2, 3, 7, 7, 4, 3, 3, {1}, {1}, {1}, 1, false, true, 0},      // C 3, K 4: NCHW, bias
      {1, 4, 1, 1, 13, 1, 1, {1}, {0}, {1}, 1, true, true, 1},      // a 1x1 image, C 4
      {2, 13, 33, 33, 64, 3, 3, {2}, {1}, {1}, 1, true, false, 1},  // stride 2, odd sizes
      {1, 64, 33, 7, 64, 3, 3, {1}, {2}, {2}, 1, true, true, 2},    // dilation 2, padding 2
      {2, 320, 7, 7, 320, 3, 3, {1}, {1}, {1}, 1, true, true, 3},   // C and K 320
      {1, 64, 64, 64, 64, 3, 3, {1}, {1}, {1}, 1, true, false, 3},  // many tiles along M
      {2, 64, 9, 9, 64, 3, 3, {1}, {1}, {1}, 2, true, true, 1},     // groups 2
      {1, 26, 7, 7, 4, 1, 1, {1}, {0}, {1}, 2, false, true, 0},     // groups 2, NCHW, 1x1
      {2, 64, 33, 33, 64, 3, 3, {2}, {0}, {1}, 1, false, false, 2}, // NCHW, stride 2, odd
      {2, 320, 7, 7, 64, 1, 1, {1}, {0}, {1}, 1, true, true, 3},    // a 1x1 convolution
      {1, 8, 11, 11, 16, 5, 5, {1}, {2}, {1}, 1, true, true, 1},    // a 5x5 filter
      {1, 16, 9, 10, 8, 1, 3, V{1, 2}, V{0, 1}, {1}, 1, true, false, 0},  // 1x3, pairs
      {3, 64, 64, 7, 13, 3, 3, {2}, {1}, V{2, 1}, 1, true, true, 2},  // K 13, dilation pair
      // Images whose tiles hold whole output rows: stride 2, dilation 2 with padding 2, a 1x1
      // over C 72 (a stage past C), a stride pair, rows of 128 pixels.
      {2, 64, 32, 32, 64, 3, 3, {2}, {1}, {1}, 1, true, true, 1},
      {1, 64, 24, 16, 64, 3, 3, {1}, {2}, {2}, 1, true, false, 2},
      {2, 72, 8, 16, 64, 1, 1, {1}, {0}, {1}, 1, true, true, 3},
      {1, 16, 32, 16, 32, 3, 3, V{2, 1}, {1}, {1}, 1, true, true, 0},
      {1, 8, 2, 128, 8, 3, 3, {1}, {1}, {1}, 1, true, false, 1},
      // 160 tiles on at most 132 persistent blocks, 3 steps of K: a tile's stored chunks held
      // over into the next tile's products (gemm_sm90_held.cuh), more of them than its steps.
      {5, 16, 64, 64, 160, 3, 3, {1}, {1}, {1}, 1, true, false, 1},
      // Depthwise (groups = C = K): 3x3 with a bias, stride 2, 5x5 with dilation 2 into a
      // channels_last result, a 1x1 over C 40 (a channel tile part full), NCHW, and 7x7 with
      // stride and dilation 2.
      {2, 64, 33, 33, 64, 3, 3, {1}, {1}, {1}, 64, true, true, 1},
      {1, 32, 16, 17, 32, 3, 3, {2}, {1}, {1}, 32, true, false, 2},
      {2, 24, 9, 9, 24, 5, 5, {1}, {2}, {2}, 24, true, true, 3},
      {2, 40, 8, 8, 40, 1, 1, {1}, {0}, {1}, 40, true, true, 0},
      {1, 16, 7, 7, 16, 3, 3, {1}, {1}, {1}, 16, false, false, 1},
      {1, 16, 20, 23, 16, 7, 7, {2}, {3}, {2}, 16, true, true, 1},  // 7x7, steps of 2 along W
      // Batch norm and a time embedding in the epilogue (issue 52), channels_last and NCHW, a
      // depthwise one.
      {2, 64, 16, 16, 64, 3, 3, {1}, {1}, {1}, 1, true, true, 4},
      {1, 13, 9, 9, 64, 3, 3, {1}, {1}, {1}, 1, false, false, 4},
      {2, 32, 16, 17, 32, 3, 3, {1}, {1}, {1}, 32, true, false, 4},
      {2, 64, 16, 16, 128, 3, 3, {1}, {1}, {1}, 1, true, false, 5},
      {2, 13, 7, 9, 4, 3, 3, {1}, {1}, {1}, 1, false, true, 5},
      // Batch norm's scale and shift computed once a column as they are staged, the output
      // stored by TMA and held over into the next tile's products (160 tiles, 3 steps of K).
      {5, 16, 64, 64, 160, 3, 3, {1}, {1}, {1}, 1, true, false, 4},
  };
}

Graph conv_graph(const ConvCase& c, DType t) {
  Graph g;
  const Value x = stored(g, "x", {c.n, c.c, c.h, c.w}, t, c.channels_last);
  const Value w = stored(g, "w", {c.k, c.c / c.groups, c.r, c.s}, t, c.channels_last);
  std::vector<GraphArg> args = {x, w};
  if (c.bias) args.push_back(g.input("b", {c.k}, t));
  Attrs attrs;
  attrs.set("stride", c.stride).set("padding", c.padding).set("dilation", c.dilation);
  if (c.groups != 1) attrs.set("groups", c.groups);
  if (t == DType::f32) attrs.set("exact", true);
  Value y = apply("conv2d", args, attrs);
  if (c.epilogue == 4) {
    auto stat = [&g, &c](const char* name) { return g.input(name, {c.k}, DType::f32); };
    y = batch_norm(y, stat("mean"), stat("var"), stat("bn_w"), stat("bn_b"), 1e-3);
  }
  if (c.epilogue == 5)
    y = y + apply("reshape", {g.input("temb", {c.n, c.k}, t)},
                  Attrs().set("shape", std::vector<std::int64_t>{c.n, c.k, 1, 1}));
  if (c.epilogue == 1 || c.epilogue == 2 || c.epilogue >= 4) y = silu(y);
  if (c.epilogue == 2) y = y + stored(g, "res", g.node(y.id()).shape, t, c.channels_last);
  if (c.epilogue == 3)
    y = apply("permute", {y}, Attrs().set("dims", std::vector<std::int64_t>{0, 2, 3, 1}));
  g.output(y, "y");
  return g;
}

}  // namespace kiln::test
