#pragma once
// Specialization of the convolution template (kernel_templates/kiln/conv.cuh): conv2d as an
// implicit GEMM with its elementwise consumers fused as the epilogue, on the GEMM family's
// tunables. Sizes and strides are the kernel's arguments; what picks the kernel is the dtype,
// whether each operand loads in 16-byte chunks, the epilogue, and the tile.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/codegen/codegen.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/families/gemm/gemm.hpp"
#include "engine/families/gemm/gemm_problem.hpp"
#include "ops/conv2d.hpp"

namespace kiln {

/// The operands and bodies of one convolution kernel.
struct ConvKernel {
  ops::ConvGeometry geometry;
  bool exact = false;      ///< f32 as three TF32 products per term (else plain TF32)
  codegen::Body epilogue;  ///< reads the product (+ bias) as Ref::Kind::row
  std::vector<TensorView> outputs;
  TensorView x, w;
  std::optional<TensorView> bias;
  std::vector<TensorView> epilogue_inputs;
  std::vector<float> epilogue_scalars;
  std::string arch = "sm_80";
  int max_shared = 0, sms = 0;  ///< the target's limits (0: the arch's)
  bool dynamic = false;         ///< a plan's dynamic dim sets N, H or W: M by its bucket
};

/// conv.cuh's Window: how an operand's rows and K index its tensor.
struct ConvWindow {
  std::int64_t s_img = 0, s_c = 0, s_h = 0, s_w = 0;
  int pq = 1, q = 1, h = 1, w = 1, c_ext = 1, taps_w = 1;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  bool vec = false;  ///< loads 16-byte chunks (the channels contiguous and aligned)
};

/// A convolution as the template takes it: the GEMM problem (slots, M = N*P*Q, N = K / groups,
/// K = R*S*C / groups, batches = groups; each result-shaped slot's batch dims (group, image, p,
/// q)) and the windows of x and w.
struct ConvProblem {
  GemmProblem gemm;
  ConvWindow a, b;
};

/// `v`'s strides broadcast to the result [N, K, P, Q] (right-aligned; 0 where it broadcasts or
/// an extent is 1): an output's or an epilogue input's, as both paths read them.
std::array<std::int64_t, 4> result_strides(const TensorView& v);

/// The stride from one output pixel to the next within an image of a result-shaped slot, if
/// (p, q) step it as one run of rows (pixel p * Q + q at that times it); images step by the
/// slot's own stride along N (0 for a per-channel operand, K for a time embedding [N, K, 1, 1]).
std::optional<std::int64_t> row_stride(const TensorView& v, const ops::ConvGeometry& g);
/// Whether every output of `k` steps its pixels as one run of rows, and every epilogue input
/// its pixels within an image.
bool pixel_rows_fit(const ConvKernel& k);
/// `k` as a problem of M = N*P*Q rows (output pixels: row m is pixel m % (P*Q) of image
/// m / (P*Q), batch_ext[0] = P*Q; each slot's pixels one row_stride apart, its images
/// batch[0]), N = K columns and K = `depth`: the slots of the outputs, x and w (their data), the
/// bias and the epilogue inputs, as the sm_90a and depthwise paths take them.
GemmProblem pixel_rows_problem(const ConvKernel& k, std::int64_t depth);

/// `k`'s problem; ShapeError naming `stem` for sizes past the template's int arithmetic.
ConvProblem conv_problem(const ConvKernel& k, const std::string& stem);

/// The kernel of `k` (ShapeError for sizes it cannot take, ArgumentError for tunables that
/// cannot run).
KernelLaunch specialize_conv(const ConvKernel& k, const std::string& stem, GemmTunables t = {});

/// Why `t` cannot run the convolution template with `max_shared` bytes of shared memory per
/// block ("" if it can): the GEMM template's limits, and a thread per 8 rows of the tile.
std::string reject_conv_tunables(const GemmTunables& t, int max_shared, bool clusters);

namespace autotune {
/// The convolution template's tile, warps, stages and split around `base`, the kernel the
/// specializer chose with its defaults.
Space conv_space(const KernelLaunch& base);
}  // namespace autotune

/// conv.cuh's `conv2d<T, Epi, Bias, BM, BN, BK, WM, WN, Stages, VecA, VecB, Exact, Split, V>`.
struct ConvTemplate {
  static constexpr std::string_view kHeader = "conv.cuh";
  DType dtype = DType::f32;
  bool bias = false;
  int bm = 0, bn = 0, warps_m = 0, warps_n = 0, stages = 0;
  bool vec_a = false, vec_b = false, exact = false;
  int split = 1, columns = 1;

  std::string expression() const;
  /// "<stem>__128x128w2x4s3_vv_bias"
  std::string name(std::string_view stem) const;
  int shared_bytes() const;
  unsigned threads() const { return unsigned(32 * warps_m * warps_n); }
};

/// conv_sm90.cuh's `conv2d_sm90<T, Epi, Bias, BN, Stages, V, Split, Store, Columns>` (tiles of
/// 128 pixels; Store and Columns as GemmWgmmaTemplate's).
struct ConvWgmmaTemplate {
  static constexpr std::string_view kHeader = "conv.cuh";
  DType dtype = DType::f16;
  bool bias = false;
  int bn = 0, stages = 0, split = 1, columns = 1;
  bool store = false;
  int slots = 0;  ///< as GemmWgmmaTemplate's

  std::string expression() const;
  /// "<stem>__wg128x128s4_im2col_bias"
  std::string name(std::string_view stem) const;
  int shared_bytes() const;
};

/// conv_depthwise.cuh's `conv2d_depthwise<T, Epi, Bias, V, R, S, SW, DW>` (no tunables).
struct ConvDepthwiseTemplate {
  static constexpr std::string_view kHeader = "conv.cuh";
  DType dtype = DType::f16;
  bool bias = false;
  int r = 1, s = 1, stride_w = 1, dil_w = 1, columns = 1;

  std::string expression() const;
  /// "<stem>__dw3x3_bias", "<stem>__dw3x3_w2d1" (stride 2 along W)
  std::string name(std::string_view stem) const;
};

/// Whether the depthwise path (conv_depthwise.cuh) computes `k`: groups = C = K, f16, bf16 or
/// f32, x's channels contiguous with C and its strides multiples of 16 bytes, R and S up to 7,
/// stride and dilation along W up to 2, and every output and epilogue input stepping its pixels
/// as one run of rows.
bool conv_depthwise_fits(const ConvKernel& k);

/// The depthwise kernel of `k`.
KernelLaunch specialize_conv_depthwise(const ConvKernel& k, const std::string& stem);

/// Whether the sm_90a path (conv_sm90.cuh) computes `k`: sm_90a, f16 or bf16, one group, x's
/// channels contiguous and its strides and C multiples of 16 bytes, w's channels contiguous with
/// its taps one run, padding up to 127, strides up to 8, and every output and epilogue input
/// stepping its pixels (n, p, q) as one run of rows.
bool conv_wgmma_fits(const ConvKernel& k);

/// The sm_90a kernel of `k`, its tunables (bn, stages, split) resolved for `s`.
KernelLaunch specialize_conv_wgmma(const ConvKernel& k, const GemmSizing& s,
                                   const std::string& stem, GemmTunables t);

}  // namespace kiln
