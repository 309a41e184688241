// The convolution family's depthwise path (kernel_templates/kiln/conv_depthwise.cuh): groups =
// C = K over channels_last x, bound by memory, its epilogue on rows of output pixels.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/conv/conv.hpp"
#include "engine/families/gemm/gemm_templates.hpp"
#include "engine/families/rows/rows.hpp"
#include "kernel_templates/kiln/conv_config.cuh"

namespace kiln {
namespace {

using namespace conv::depthwise;
constexpr int kMaxTaps = 7;  // R and S unrolled in the kernel
constexpr int kMaxStep = 2;  // the steps along W (stride, dilation): template parameters

int channels_per_thread(DType t) { return 16 / int(size_of(t)); }

bool aligned(std::int64_t elements, DType t) {
  return elements % channels_per_thread(t) == 0;
}

}  // namespace

std::string ConvDepthwiseTemplate::expression() const {
  return codegen::render_instance("kiln::conv::conv2d_depthwise",
                                  {std::string(device_type_of(dtype)), "kiln_epilogue",
                                   bias ? "true" : "false", std::to_string(columns),
                                   std::to_string(r), std::to_string(s), std::to_string(stride_w),
                                   std::to_string(dil_w)});
}

std::string ConvDepthwiseTemplate::name(std::string_view stem) const {
  const std::string steps =
      stride_w == 1 && dil_w == 1 ? "" : fmt::format("_w{}d{}", stride_w, dil_w);
  return fmt::format("{}__dw{}x{}{}{}", stem, r, s, steps, bias ? "_bias" : "");
}

bool conv_depthwise_fits(const ConvKernel& k) {
  const ops::ConvGeometry& g = k.geometry;
  const DType t = k.x.dtype;
  if (t != DType::f16 && t != DType::bf16 && t != DType::f32) return false;
  if (g.groups != g.c || g.k != g.c || !aligned(g.c, t) || g.r > kMaxTaps || g.s > kMaxTaps ||
      g.stride_w > kMaxStep || g.dil_w > kMaxStep)
    return false;
  const Shape xs = k.x.resolved_strides();
  const bool x_ok = xs[1] == 1 && k.x.data % 16 == 0 && aligned(xs[0], t) && aligned(xs[2], t) &&
                    aligned(xs[3], t);
  return x_ok && g.n * g.p * g.q < (std::int64_t(1) << 31) && pixel_rows_fit(k);
}

KernelLaunch specialize_conv_depthwise(const ConvKernel& k, const std::string& stem) {
  const ops::ConvGeometry& g = k.geometry;
  const GemmProblem p = pixel_rows_problem(k, g.r * g.s);
  ConvDepthwiseTemplate tp;
  tp.dtype = k.x.dtype;
  tp.bias = k.bias.has_value();
  tp.r = int(g.r), tp.s = int(g.s), tp.stride_w = int(g.stride_w), tp.dil_w = int(g.dil_w);
  tp.columns = epilogue_columns(p) > 1 ? channels_per_thread(tp.dtype) : 1;
  KernelLaunch L;
  L.spec = gemm_spec(tp, k.epilogue, stem);
  const int tile = kLanes * channels_per_thread(tp.dtype);
  const std::int64_t strips = (g.q + kStrip - 1) / kStrip;  // along a row
  L.config.grid = {unsigned((g.n * g.p * strips + kPixels - 1) / kPixels),
                   unsigned((g.c + tile - 1) / tile), 1};
  L.config.block = {kThreads, 1, 1};
  L.config.programmatic = has_clusters(k.arch);  // grid dependency control: sm_90 and later
  L.groups = 1;
  set_gemm_params(L, p, k.epilogue_scalars);
  std::vector<unsigned char> args = gemm_args(p, k.epilogue_scalars);
  auto put = [&args](const void* v, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(v);
    args.insert(args.end(), b, b + bytes);
  };
  const Shape xs = k.x.resolved_strides(), ws = k.w.resolved_strides();
  for (std::int64_t v : {xs[0], xs[2], xs[3], ws[0], ws[2], ws[3]}) put(&v, 8);
  for (std::int64_t v : {g.h, g.w, g.c, g.p, g.q, strips, g.stride_h, g.pad_h, g.pad_w, g.dil_h}) {
    const int i = int(v);
    put(&i, 4);
  }
  args.resize((args.size() + 7) / 8 * 8, 0);
  L.layout.params[0] = ParamBytes(args);
  L.bucketed = k.dynamic;
  return L;
}

}  // namespace kiln
