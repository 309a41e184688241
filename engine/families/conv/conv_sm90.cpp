// The convolution family's sm_90a path (kernel_templates/kiln/conv_sm90.cuh): x through an
// im2col TMA map, w through a tiled one, wgmma, gemm_sm90.cuh's block and epilogue.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <kiln/error.hpp>

#include "engine/families/conv/conv.hpp"
#include "engine/families/gemm/gemm_templates.hpp"
#include "engine/runtime/tensor_map.hpp"
#include "kernel_templates/kiln/gemm_config.cuh"

namespace kiln {
namespace {

constexpr int kRows = gemm::config::kWgmmaRows;
constexpr int kDepth = 64;  // channels a stage: 128 bytes of f16 or bf16

bool aligned16(std::int64_t elements, DType t) {
  return elements * std::int64_t(size_of(t)) % 16 == 0;
}

// w as [K, R*S, C] (its taps one dim), where its strides allow.
std::optional<TensorView> taps_view(const TensorView& w) {
  const Shape st = w.resolved_strides();
  const std::int64_t r = w.shape[2], s = w.shape[3];
  const std::int64_t tap = s > 1 ? st[3] : st[2];
  if (r > 1 && s > 1 && st[2] != s * st[3]) return std::nullopt;
  if (w.shape[1] > 1 && st[1] != 1) return std::nullopt;
  TensorView v = w;
  v.shape = {w.shape[0], r * s, w.shape[1]};
  v.strides = {st[0], r * s > 1 ? tap : 16, 1};
  return v;
}

int blocks_of(const ops::ConvGeometry& g) { return int((g.c + kDepth - 1) / kDepth); }

}  // namespace

bool conv_wgmma_fits(const ConvKernel& k) {
  const ops::ConvGeometry& g = k.geometry;
  const DType t = k.x.dtype;
  if (k.arch != "sm_90a" || (t != DType::f16 && t != DType::bf16) || g.groups != 1) return false;
  const Shape xs = k.x.resolved_strides();
  const bool x_ok = (xs[1] == 1 || g.c == 1) && k.x.data % 16 == 0 && aligned16(xs[0], t) &&
                    aligned16(xs[2], t) && aligned16(xs[3], t) && aligned16(g.c, t);
  const auto w = taps_view(k.w);
  const bool w_ok = w && k.w.data % 16 == 0 && aligned16(w->strides[0], t) &&
                    aligned16(w->strides[1], t);
  const std::int64_t up_h = g.pad_h - g.dil_h * (g.r - 1), up_w = g.pad_w - g.dil_w * (g.s - 1);
  const bool walk_ok = g.pad_h <= 127 && g.pad_w <= 127 && up_h >= -128 && up_w >= -128 &&
                       g.stride_h <= 8 && g.stride_w <= 8 && g.dil_h * (g.r - 1) < 65536 &&
                       g.dil_w * (g.s - 1) < 65536;
  return x_ok && w_ok && walk_ok && pixel_rows_fit(k);
}

KernelLaunch specialize_conv_wgmma(const ConvKernel& k, const GemmSizing& s,
                                   const std::string& stem, GemmTunables t) {
  const ops::ConvGeometry& g = k.geometry;
  const GemmTunables d = wgmma_fit_tunables(s, false);
  if (!t.bn) t.bn = d.bn;
  if (!t.stages) t.stages = d.stages;
  if (!t.split) t.split = t.bn == d.bn ? d.split : 1;
  t.wgmma = 1;
  if (std::string why = reject_wgmma_tunables(t, s.max_shared); !why.empty())
    throw ArgumentError(fmt::format("{}: bad convolution tunables: {}", stem, why));
  const GemmProblem p = pixel_rows_problem(k, g.r * g.s * blocks_of(g) * kDepth);
  ConvWgmmaTemplate tp;
  tp.dtype = k.x.dtype;
  tp.bias = k.bias.has_value();
  tp.bn = t.bn, tp.stages = t.stages, tp.split = t.split;
  tp.columns = epilogue_columns(p);
  // A convolution's per-column operands (a batch norm's statistics) are staged and its output
  // stored, so that its epilogue is held over into the next tile's products too.
  const std::size_t inputs = k.epilogue_inputs.size();
  tp.slots = wgmma_column_slots(p, t.split, tp.bias, k.epilogue);
  if (tp.shared_bytes() > s.max_shared) tp.slots = 0;  // the staged columns do not fit
  tp.store = wgmma_store_fits(p, tp.columns, t.split, tp.bias, inputs, tp.slots > 0);
  KernelLaunch L;
  L.spec = gemm_spec(tp, k.epilogue, stem);
  set_wgmma_launch(L, p, t.bn, t.split, tp.shared_bytes(), k.epilogue_scalars);
  std::vector<unsigned char> args = gemm_args(p, k.epilogue_scalars);
  for (std::int64_t v : {g.p * g.q, g.q, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dil_h,
                         g.dil_w, g.s, std::int64_t(blocks_of(g))}) {
    const int i = int(v);
    args.insert(args.end(), reinterpret_cast<const unsigned char*>(&i),
                reinterpret_cast<const unsigned char*>(&i) + 4);
  }
  args.resize((args.size() + 7) / 8 * 8, 0);
  L.layout.params[0] = ParamBytes(args);
  runtime::Im2col walk;
  walk.channels = kDepth, walk.pixels = kRows;
  walk.lower = {int(-g.pad_h), int(-g.pad_w)};
  walk.upper = {int(g.pad_h - g.dil_h * (g.r - 1)), int(g.pad_w - g.dil_w * (g.s - 1))};
  walk.steps = {unsigned(g.stride_h), unsigned(g.stride_w)};
  L.layout.maps.push_back({{1, std::uint32_t(p.outputs),
                            runtime::describe_im2col_map(k.x, walk, stem + ": x's map")},
                           "the tensor map of parameter 1"});
  L.layout.maps.push_back(
      {{2, std::uint32_t(p.outputs + 1),
        runtime::describe_tensor_map(*taps_view(k.w), {unsigned(t.bn), 1, kDepth}, 128,
                                     stem + ": w's map")},
       "the tensor map of parameter 2"});
  if (tp.store) L.layout.maps.push_back(wgmma_store_map(p, k.outputs[0].dtype, t.bn, stem));
  L.tunables = codegen::launch_tunables(gemm_tunable_table(), t, kGemmWgmma | kGemmClusters);
  return L;
}

}  // namespace kiln
