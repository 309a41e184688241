#include "engine/families/gemm/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/error.hpp>

#include "engine/families/gemm/gemm_buckets.hpp"
#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {
namespace {

// K per stage: 64 two-byte or 32 four-byte elements, a 128-byte swizzled row (gemm.cuh).
int stage_k(DType dtype) { return size_of(dtype) == 4 ? 32 : 64; }

// Shared memory per block: the ring (every dtype's stage holds bm + bn rows of 128 bytes), which
// then holds the accumulator tile (gemm_kernel.cuh's kLd).
int shared_bytes(const GemmTunables& t) {
  return std::max(t.stages * (t.bm + t.bn) * 128, t.bm * (t.bn + 8) * 4);
}

char layout_letter(GemmLayout l) {
  switch (l) {
    case GemmLayout::k_contiguous:
      return 'k';
    case GemmLayout::mn_contiguous:
      return 't';
    case GemmLayout::strided:
      break;
  }
  return 's';
}

// The default warps of a bm x bn tile: warp tiles of 64 x 32, or 32 x 32 on 64 x 64.
int default_warps_m(const GemmTunables& t) { return t.bm == 64 && t.bn == 64 ? 2 : t.bm / 64; }
int default_warps_n(const GemmTunables& t) { return t.bm == 64 && t.bn == 64 ? 2 : t.bn / 32; }

GemmTunables resolved(GemmTunables t, const GemmSizing& s, bool clusters) {
  const GemmTunables d = default_gemm_tunables(s, clusters);
  if (!t.bm) t.bm = d.bm;
  if (!t.bn) t.bn = d.bn;
  if (!t.warps_m) t.warps_m = default_warps_m(t);
  if (!t.warps_n) t.warps_n = default_warps_n(t);
  if (!t.stages) t.stages = d.stages;
  if (!t.split) t.split = t.bm == d.bm && t.bn == d.bn ? d.split : 1;
  return t;
}

}  // namespace

GemmTunables gemm_tunables(const Tunables& t, const std::string& stem) {
  GemmTunables g;
  for (const auto& [name, value] : t) {
    if (name == "bm")
      g.bm = value;
    else if (name == "bn")
      g.bn = value;
    else if (name == "warps_m")
      g.warps_m = value;
    else if (name == "warps_n")
      g.warps_n = value;
    else if (name == "stages")
      g.stages = value;
    else if (name == "wgmma")
      g.wgmma = value;
    else if (name == "split")
      g.split = value;
    else if (name == "skinny")
      g.skinny = value;
    else if (name == "columns")
      g.columns = value;
    else
      throw ArgumentError(
          fmt::format("{}: '{}' is not a tunable of the GEMM template (bm, bn, "
                      "warps_m, warps_n, stages, wgmma, split, skinny, columns)",
                      stem, name));
  }
  return g;
}

GemmTunables default_gemm_tunables(const GemmSizing& s, bool clusters) {
  const std::int64_t m = s.m, n = s.n, k = s.k, batches = s.batches;
  GemmTunables t;
  t.bm = m <= 64 ? 64 : 128;
  t.bn = n <= 64 || m <= 64 ? 64 : 128;
  auto blocks_of = [&](const GemmTunables& x) {
    return (m + x.bm - 1) / x.bm * ((n + x.bn - 1) / x.bn) * batches;
  };
  if (blocks_of(t) * 2 <= s.sms) t.bm = t.bn = 64;  // too few tiles: smaller ones first
  t.warps_m = default_warps_m(t);
  t.warps_n = default_warps_n(t);
  t.stages = 3;
  t.split = 1;
  t.split = default_split(blocks_of(t), (k + 31) / 32, clusters, s.sms);  // the smaller stage
  return t;
}

int default_split(std::int64_t blocks, std::int64_t ktiles, bool clusters, std::int64_t sms) {
  int split = 1;
  if (clusters)
    while (split < 8 && blocks * split * 2 <= sms && ktiles >= 4 * split) split *= 2;
  return split;
}

std::string reject_split(int split, bool clusters) {
  if (split != 1 && split != 2 && split != 4 && split != 8)
    return fmt::format("a split of {}: 1, 2, 4 or 8", split);
  if (split > 1 && !clusters)
    return fmt::format("a split of {} needs thread-block clusters (sm_90 and later)", split);
  return "";
}

std::string reject_gemm_tunables(const GemmTunables& t, int max_shared, bool clusters) {
  if (std::string why = reject_split(t.split, clusters); !why.empty()) return why;
  for (int tile : {t.bm, t.bn})
    if (tile != 64 && tile != 128 && tile != 256)
      return fmt::format("a tile of {}x{}: each side 64, 128 or 256", t.bm, t.bn);
  if (t.warps_m < 1 || t.warps_n < 1 || t.bm % (16 * t.warps_m) || t.bn % (16 * t.warps_n))
    return fmt::format("{}x{} warps on a {}x{} tile: each warp's share a multiple of 16", t.warps_m,
                       t.warps_n, t.bm, t.bn);
  if (t.bn / t.warps_n > 64)  // B's fragments of wider warp tiles spill on sm_80
    return fmt::format("a warp's tile {} columns wide: at most 64", t.bn / t.warps_n);
  if (t.warps_m * t.warps_n > 8)  // 16 warps leave ptxas 64 registers a thread: it spills
    return fmt::format("{} warps: at most 8 per block", t.warps_m * t.warps_n);
  const int accumulators = t.bm / t.warps_m * (t.bn / t.warps_n) / 32;
  if (accumulators > 128)
    return fmt::format("{} accumulators per thread: at most 128 (more warps or a smaller tile)",
                       accumulators);
  if (t.stages < 2 || t.stages > 8) return fmt::format("{} stages: 2 to 8", t.stages);
  const int shared = shared_bytes(t);
  if (shared > max_shared)
    return fmt::format("{} bytes of shared memory per block, the device allows {}", shared,
                       max_shared);
  return "";
}

namespace {

// Twice what the family promises against fp64 for f32 (1e-5 of the sum of the products'
// magnitudes; on the tuner's uniform inputs that sum is about sqrt(K) times the mean |C|,
// max_diff's scale). Two correct kernels of f32 4096^3 differ by 1.1e-4 of it (another order of
// the K sum, another rounding of each tensor-core accumulation); a wrong one by far more. TF32
// kernels of one product round their inputs alike: they too differ only by the order of the sum.
double gemm_agreement(const GemmKernel& k, std::int64_t K) {
  if (k.a.dtype != DType::f32) return 0;  // rounding to f16/bf16 dominates: the dtype's tolerance
  return 2e-5 * std::sqrt(double(std::max<std::int64_t>(K, 1)));
}

KernelLaunch specialize_mma(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s,
                            const std::string& stem, GemmTunables t) {
  const bool clusters = has_clusters(k.arch);
  if (t.wgmma == 1)
    throw ArgumentError(fmt::format(
        "{}: the wgmma path takes sm_90a, f16 or bf16 with a contiguous along K and b along K "
        "or N, or f32 with both along K (16-byte aligned), no batch dims and no empty dim; this "
        "product runs on mma.sync",
        stem));
  t = resolved(t, s, clusters);
  const DType dtype = k.a.dtype;
  if (std::string why = reject_gemm_tunables(t, s.max_shared, clusters); !why.empty())
    throw ArgumentError(fmt::format("{}: bad GEMM tunables: {}", stem, why));
  const std::int64_t tiles = (p.m + t.bm - 1) / t.bm * ((p.n + t.bn - 1) / t.bn);
  if (tiles > std::numeric_limits<int>::max())
    throw ShapeError(
        fmt::format("{}: {} tiles of {}x{}: too many for one launch", stem, tiles, t.bm, t.bn));
  const bool exact = dtype == DType::f32 && !k.tf32;
  KernelLaunch L;
  L.spec.source = codegen::render_source("gemm.cuh", {{"kiln_epilogue", &k.epilogue}});
  L.spec.expression = codegen::render_instance(
      "kiln::gemm::gemm",
      {std::string(device_type_of(dtype)), "kiln_epilogue", k.bias ? "true" : "false",
       std::to_string(t.bm), std::to_string(t.bn), std::to_string(stage_k(dtype)),
       std::to_string(t.warps_m), std::to_string(t.warps_n), std::to_string(t.stages),
       std::to_string(int(p.a_layout)), std::to_string(int(p.b_layout)), exact ? "true" : "false",
       std::to_string(t.split), std::to_string(epilogue_columns(p))});
  L.spec.options = codegen::builtin_options();
  L.spec.name = fmt::format("{}__{}x{}w{}x{}s{}{}_{}{}{}{}", stem, t.bm, t.bn, t.warps_m, t.warps_n,
                            t.stages, t.split > 1 ? fmt::format("k{}", t.split) : "",
                            layout_letter(p.a_layout), layout_letter(p.b_layout),
                            k.bias ? "_bias" : "", dtype == DType::f32 && k.tf32 ? "_tf32" : "");
  L.config.grid = {unsigned(p.m && p.n && p.batches ? tiles : 0),
                   unsigned(std::min<std::int64_t>(p.batches, 65535)), unsigned(t.split)};
  L.config.cluster = {1, 1, unsigned(t.split)};
  L.config.block = {unsigned(32 * t.warps_m * t.warps_n), 1, 1};
  L.config.shared = unsigned(shared_bytes(t));
  L.groups = L.config.empty() ? 0 : 1;
  set_gemm_params(L, p, k.epilogue_scalars);
  L.tunables = {{"bm", t.bm},
                {"bn", t.bn},
                {"warps_m", t.warps_m},
                {"warps_n", t.warps_n},
                {"stages", t.stages}};
  if (clusters) L.tunables["split"] = t.split;
  return L;
}

}  // namespace

KernelLaunch specialize_gemm(const GemmKernel& k, const std::string& stem, GemmTunables t) {
  const GemmProblem p = gemm_problem(k, stem);
  const GemmSizing s = gemm_sizing(k, p);
  const bool clusters = has_clusters(k.arch);
  const bool skinny =
      t.skinny == 1 || (t.skinny < 0 && t.wgmma < 0 && !t.bm && skinny_by_default(k, p, s));
  if (t.columns && !skinny)
    throw ArgumentError(fmt::format("{}: columns is a tunable of the few-row path only", stem));
  KernelLaunch L = skinny ? specialize_skinny(k, p, s, stem, t, clusters)
                   : t.wgmma != 0 && wgmma_fits(k, p) ? specialize_wgmma(k, p, s, stem, t)
                                                      : specialize_mma(k, p, s, stem, t);
  L.bucketed = k.dynamic.any();
  L.config.shared_required = true;
  L.agreement = gemm_agreement(k, p.k);
  // Every GEMM template waits for the kernel before it (kiln/grid_dependency.cuh). Not in
  // clusters: their launch may not start early.
  L.config.programmatic = clusters && !L.config.clustered();
  return L;
}

namespace autotune {

Space gemm_space(const KernelLaunch& base) {
  const Candidate& fallback = base.tunables;
  Space s;
  if (auto sk = fallback.find("skinny"); sk != fallback.end() && sk->second == 1) {
    s.tunables = {{"skinny", {1}}};
    // A default 32 or more wide may have lanes along N, where 8 and 16 do not exist.
    if (auto c = fallback.find("columns"); c != fallback.end())
      s.tunables.push_back({"columns", c->second >= 32 ? std::vector<int>{32, 64}
                                                       : std::vector<int>{8, 16, 32, 64}});
    if (fallback.count("split")) s.tunables.push_back({"split", {1, 2, 4, 8}});
    s.fallback = fallback;
    s.reject = [](const Candidate&, const DeviceLimits&) { return std::string(); };
    return s;
  }
  if (auto w = fallback.find("wgmma"); w != fallback.end() && w->second == 1) {
    // An exact f32 product's stages also hold B's rest: its default asked for that much.
    GemmTunables d;
    d.bn = fallback.at("bn"), d.stages = fallback.at("stages"), d.split = fallback.at("split");
    const bool exact = base.config.shared == unsigned(wgmma_shared_bytes(d, true));
    s.tunables = {{"bn", exact ? std::vector<int>{64, 128} : std::vector<int>{64, 128, 256}},
                  {"stages", {3, 4, 5, 6}},
                  {"wgmma", {1}},
                  {"split", {1, 2, 4, 8}}};
    s.fallback = fallback;
    s.reject = [exact](const Candidate& c, const DeviceLimits& limits) {
      GemmTunables t;
      t.bn = c.at("bn"), t.stages = c.at("stages"), t.wgmma = 1, t.split = c.at("split");
      return reject_wgmma_tunables(t, limits.max_shared_bytes_per_block, exact);
    };
    return s;
  }
  s.tunables = {{"bm", {64, 128, 256}},
                {"bn", {64, 128, 256}},
                {"warps_m", {1, 2, 4}},
                {"warps_n", {1, 2, 4}},
                {"stages", {2, 3, 4, 5}}};
  const bool clusters = fallback.count("split") > 0;
  if (clusters) s.tunables.push_back({"split", {1, 2, 4, 8}});
  s.fallback = fallback;
  s.reject = [clusters](const Candidate& c, const DeviceLimits& limits) -> std::string {
    GemmTunables t{c.at("bm"),
                   c.at("bn"),
                   c.at("warps_m"),
                   c.at("warps_n"),
                   c.at("stages"),
                   0,
                   clusters ? c.at("split") : 1};
    if (32 * t.warps_m * t.warps_n > limits.max_threads_per_block)
      return fmt::format("{} threads per block, the device allows {}", 32 * t.warps_m * t.warps_n,
                         limits.max_threads_per_block);
    return reject_gemm_tunables(t, limits.max_shared_bytes_per_block, clusters);
  };
  return s;
}

}  // namespace autotune

}  // namespace kiln
