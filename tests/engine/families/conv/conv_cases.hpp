#pragma once
// The convolutions the conv2d tests run (conv_test.cpp compiles them, conv_gpu_test.cpp checks
// them on the GPU against fp64).

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <string>
#include <vector>

namespace kiln::test {

/// One convolution of the tests: x [n, c, h, w] * w [k, c / groups, r, s].
struct ConvCase {
  std::int64_t n, c, h, w, k, r, s;
  std::vector<std::int64_t> stride, padding, dilation;
  std::int64_t groups = 1;
  bool channels_last = true;  ///< x and w stored channels_last (else NCHW-contiguous)
  bool bias = false;
  /// After it: 0 nothing, 1 silu, 2 silu then a residual add, 3 the output permuted to
  /// [n, p, q, k] (a channels_last result), 4 batch_norm (f32 inputs mean, var, bn_w, bn_b of
  /// [k]; var must be drawn positive) then silu, 5 a time embedding (input temb [n, k] seen as
  /// [n, k, 1, 1]) added, then silu.
  int epilogue = 0;
};

/// The cases: H, W in {1, 7, 33, 64}, C and K in {3, 4, 13, 64, 320}, padding 0, 1, 2, stride
/// 2 over odd sizes, dilation 2, groups 1 and 2, rectangular filters and pairs, channels_last
/// and NCHW, fused epilogues.
std::vector<ConvCase> conv_cases();

/// The graph of `c` over dtype `t` (f32 exact: three TF32 products per term).
Graph conv_graph(const ConvCase& c, DType t);

}  // namespace kiln::test
