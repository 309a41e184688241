// The convolution template's descriptor and specialization (engine/families/conv/conv.hpp).
#include "engine/families/conv/conv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <kiln/error.hpp>

#include "engine/families/gemm/gemm_buckets.hpp"
#include "engine/families/gemm/gemm_templates.hpp"
#include "engine/families/rows/rows.hpp"
#include "engine/target.hpp"
#include "kernel_templates/kiln/gemm_config.cuh"

namespace kiln {
namespace {

std::string flag(bool b) { return b ? "true" : "false"; }
std::string num(int v) { return std::to_string(v); }

// conv.cuh's Window, field by field (8-byte strides, then ints: 80 bytes).
void put_window(std::vector<unsigned char>& out, const ConvWindow& w) {
  auto put = [&out](const void* v, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(v);
    out.insert(out.end(), b, b + bytes);
  };
  for (std::int64_t s : {w.s_img, w.s_c, w.s_h, w.s_w}) put(&s, 8);
  for (int v : {w.pq, w.q, w.h, w.w, w.c_ext, w.taps_w, w.stride_h, w.stride_w, w.pad_h, w.pad_w,
                w.dil_h, w.dil_w})
    put(&v, 4);
}

// What `k`'s defaults are chosen for (either path): M = N*P*Q (its bucket where a dynamic dim
// sets it), N = K / groups, K = R*S*C / groups, the groups as batches; the target's limits.
GemmSizing sizing_of(const ConvKernel& k) {
  const ops::ConvGeometry& g = k.geometry;
  const Target arch = target_of(k.arch);
  GemmSizing s;
  s.max_shared = k.max_shared ? k.max_shared : arch.max_shared;
  s.sms = k.sms ? k.sms : arch.sms;
  s.m = k.dynamic ? gemm_bucket(g.n * g.p * g.q) : g.n * g.p * g.q;
  s.n = g.k / g.groups, s.k = g.r * g.s * (g.c / g.groups), s.batches = g.groups;
  return s;
}

}  // namespace

std::string ConvTemplate::expression() const {
  return codegen::render_instance(
      "kiln::conv::conv2d",
      {std::string(device_type_of(dtype)), "kiln_epilogue", flag(bias), num(bm), num(bn),
       num(gemm::config::stage_k(int(size_of(dtype)))), num(warps_m), num(warps_n), num(stages),
       flag(vec_a), flag(vec_b), flag(exact), num(split), num(columns)});
}

std::string ConvTemplate::name(std::string_view stem) const {
  return fmt::format("{}__{}x{}w{}x{}s{}{}_{}{}{}{}", stem, bm, bn, warps_m, warps_n, stages,
                     split > 1 ? fmt::format("k{}", split) : "", vec_a ? 'v' : 'e',
                     vec_b ? 'v' : 'e', bias ? "_bias" : "",
                     dtype == DType::f32 && !exact ? "_tf32" : "");
}

int ConvTemplate::shared_bytes() const { return gemm::config::mma_shared_bytes(bm, bn, stages); }

std::string ConvWgmmaTemplate::expression() const {
  return codegen::render_instance("kiln::conv::conv2d_sm90",
                                  {std::string(device_type_of(dtype)), "kiln_epilogue", flag(bias),
                                   num(bn), num(stages), num(columns), num(split),
                                   flag(store), flag(slots > 0)});
}

std::string ConvWgmmaTemplate::name(std::string_view stem) const {
  return fmt::format("{}__wg{}x{}s{}{}_im2col{}", stem, gemm::config::kWgmmaRows, bn, stages,
                     split > 1 ? fmt::format("k{}", split) : "", bias ? "_bias" : "");
}

int ConvWgmmaTemplate::shared_bytes() const {
  return gemm::config::wgmma_shared_bytes(bn, stages, false, split, slots);
}

std::string reject_conv_tunables(const GemmTunables& t, int max_shared, bool clusters) {
  if (std::string why = reject_gemm_tunables(t, max_shared, clusters); !why.empty()) return why;
  // Each thread keeps the origin of each row it loads (conv.cuh's WindowTile): 8 at most; and
  // with fewer than 32 accumulators a thread, ptxas spills the index arithmetic.
  const int threads = 32 * t.warps_m * t.warps_n;
  if (t.bm * t.bn / threads < 32)
    return fmt::format("{} threads for a {}x{} tile: at most one per 32 of its elements", threads,
                       t.bm, t.bn);
  if (std::max(t.bm, t.bn) * 8 / threads > 8)
    return fmt::format("{} threads for a {}x{} tile: at least one per 8 of its rows", threads,
                       t.bm, t.bn);
  return "";
}

KernelLaunch specialize_conv(const ConvKernel& k, const std::string& stem, GemmTunables t) {
  if (t.skinny == 1 || t.columns)
    throw ArgumentError(fmt::format(
        "{}: the convolution templates take bm, bn, warps_m, warps_n, stages, split and wgmma",
        stem));
  t.skinny = 0;
  const ConvProblem cp = conv_problem(k, stem);  // ShapeError for sizes past int arithmetic
  // Depthwise where it fits and no tunable asks for a GEMM path (it has none of its own).
  const bool asked = t.bm || t.bn || t.warps_m || t.warps_n || t.stages || t.split || t.wgmma >= 0;
  if (!asked && conv_depthwise_fits(k)) return specialize_conv_depthwise(k, stem);
  const bool wgmma = t.wgmma != 0 && conv_wgmma_fits(k);
  if (t.wgmma == 1 && !wgmma)
    throw ArgumentError(fmt::format(
        "{}: the wgmma path takes sm_90a, f16 or bf16, one group, channels_last x and w with "
        "16-byte aligned strides, padding up to 127 and strides up to 8; this convolution runs "
        "on mma.sync",
        stem));
  if (wgmma) {
    if (t.bm || t.warps_m || t.warps_n)
      throw ArgumentError(fmt::format("{}: bad convolution tunables: bm, warps_m and warps_n are "
                                      "the mma.sync path's",
                                      stem));
    KernelLaunch L = specialize_conv_wgmma(k, sizing_of(k), stem, t);
    L.bucketed = k.dynamic;
    L.config.shared_required = true;
    L.config.programmatic = !L.config.clustered();
    return L;
  }
  t.wgmma = 0;
  const GemmProblem& p = cp.gemm;
  const GemmSizing s = sizing_of(k);
  const bool clusters = has_clusters(k.arch);
  t = resolve_mma_tunables(t, s, clusters);
  if (std::string why = reject_conv_tunables(t, s.max_shared, clusters); !why.empty())
    throw ArgumentError(fmt::format("{}: bad convolution tunables: {}", stem, why));
  const std::int64_t tiles = (p.m + t.bm - 1) / t.bm * ((p.n + t.bn - 1) / t.bn);
  ConvTemplate tp;
  tp.dtype = k.x.dtype;
  tp.bias = k.bias.has_value();
  tp.bm = t.bm, tp.bn = t.bn, tp.warps_m = t.warps_m, tp.warps_n = t.warps_n, tp.stages = t.stages;
  tp.vec_a = cp.a.vec, tp.vec_b = cp.b.vec;
  tp.exact = tp.dtype == DType::f32 && k.exact;
  tp.split = t.split;
  tp.columns = epilogue_columns(p);
  KernelLaunch L;
  L.spec = gemm_spec(tp, k.epilogue, stem);
  L.config.grid = {unsigned(tiles), unsigned(std::min<std::int64_t>(p.batches, 65535)),
                   unsigned(t.split)};
  L.config.cluster = {1, 1, unsigned(t.split)};
  L.config.block = {tp.threads(), 1, 1};
  L.config.shared = unsigned(tp.shared_bytes());
  L.config.shared_required = true;
  L.config.programmatic = clusters && t.split == 1;
  L.groups = 1;
  set_gemm_params(L, p, k.epilogue_scalars);
  std::vector<unsigned char> args = gemm_args(p, k.epilogue_scalars);
  put_window(args, cp.a);
  put_window(args, cp.b);
  L.layout.params[0] = ParamBytes(args);
  L.tunables = codegen::launch_tunables(gemm_tunable_table(), t,
                                        kGemmMma | (clusters ? kGemmClusters : 0));
  L.bucketed = k.dynamic;
  // As the GEMM family's: f32 kernels of one convolution differ by the order of the K sum.
  L.agreement = tp.dtype == DType::f32 ? 2e-5 * std::sqrt(double(std::max<std::int64_t>(p.k, 1)))
                                       : 0;
  return L;
}

namespace autotune {

Space conv_space(const KernelLaunch& base) {
  // The GEMM family's spaces, the wgmma path's with the widths sized to N too (conv_sm90.cpp);
  // the mma.sync path's also refuses what the window loaders cannot take.
  if (base.tunables.empty()) return {};  // the depthwise path: its default only
  Space s = gemm_space(base);
  if (s.fallback.count("bm") == 0) {
    for (Tunable& t : s.tunables)
      if (t.name == "bn")
        t.values.assign(std::begin(gemm::config::kWgmmaWidths),
                        std::end(gemm::config::kWgmmaWidths));
    return s;
  }
  const bool clusters = s.fallback.count("split") > 0;
  s.reject = [clusters, gemm = s.reject](const Candidate& c, const DeviceLimits& limits) {
    if (std::string why = gemm(c, limits); !why.empty()) return why;
    GemmTunables t = gemm_tunables(c, "conv_space");
    if (!clusters) t.split = 1;
    return reject_conv_tunables(t, limits.max_shared_bytes_per_block, clusters);
  };
  return s;
}

}  // namespace autotune

}  // namespace kiln
