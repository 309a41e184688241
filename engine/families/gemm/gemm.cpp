#include "engine/families/gemm/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/error.hpp>

#include "engine/families/gemm/gemm_buckets.hpp"
#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/gemm/gemm_templates.hpp"
#include "engine/families/rows/rows.hpp"
#include "kernel_templates/kiln/gemm_config.cuh"

namespace kiln {
namespace {

// The default warps of a bm x bn tile: warp tiles of 64 x 32, or 32 x 32 on 64 x 64.
int default_warps_m(const GemmTunables& t) { return t.bm == 64 && t.bn == 64 ? 2 : t.bm / 64; }
int default_warps_n(const GemmTunables& t) { return t.bm == 64 && t.bn == 64 ? 2 : t.bn / 32; }

}  // namespace

GemmTunables resolve_mma_tunables(GemmTunables t, const GemmSizing& s, bool clusters) {
  const GemmTunables d = default_gemm_tunables(s, clusters);
  if (!t.bm) t.bm = d.bm;
  if (!t.bn) t.bn = d.bn;
  if (!t.warps_m) t.warps_m = default_warps_m(t);
  if (!t.warps_n) t.warps_n = default_warps_n(t);
  if (!t.stages) t.stages = d.stages;
  if (!t.split) t.split = t.bm == d.bm && t.bn == d.bn ? d.split : 1;
  return t;
}

GemmTunables gemm_tunables(const Tunables& t, const std::string& stem) {
  return codegen::parse_tunables(gemm_tunable_table(), t, GemmTunables{}, stem, "GEMM template");
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
  const int shared = gemm::config::mma_shared_bytes(t.bm, t.bn, t.stages);
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
  t = resolve_mma_tunables(t, s, clusters);
  const DType dtype = k.a.dtype;
  if (std::string why = reject_gemm_tunables(t, s.max_shared, clusters); !why.empty())
    throw ArgumentError(fmt::format("{}: bad GEMM tunables: {}", stem, why));
  const std::int64_t tiles = (p.m + t.bm - 1) / t.bm * ((p.n + t.bn - 1) / t.bn);
  if (tiles > std::numeric_limits<int>::max())
    throw ShapeError(
        fmt::format("{}: {} tiles of {}x{}: too many for one launch", stem, tiles, t.bm, t.bn));
  GemmMmaTemplate tp;
  tp.dtype = dtype;
  tp.bias = k.bias.has_value();
  tp.bm = t.bm, tp.bn = t.bn, tp.warps_m = t.warps_m, tp.warps_n = t.warps_n, tp.stages = t.stages;
  tp.a_layout = p.a_layout, tp.b_layout = p.b_layout;
  tp.exact = dtype == DType::f32 && !k.tf32;
  tp.split = t.split;
  tp.columns = epilogue_columns(p);
  KernelLaunch L;
  L.spec = gemm_spec(tp, k.epilogue, stem);
  L.config.grid = {unsigned(p.m && p.n && p.batches ? tiles : 0),
                   unsigned(std::min<std::int64_t>(p.batches, 65535)), unsigned(t.split)};
  L.config.cluster = {1, 1, unsigned(t.split)};
  L.config.block = {tp.threads(), 1, 1};
  L.config.shared = unsigned(tp.shared_bytes());
  L.groups = L.config.empty() ? 0 : 1;
  set_gemm_params(L, p, k.epilogue_scalars);
  L.tunables =
      codegen::launch_tunables(gemm_tunable_table(), t, kGemmMma | (clusters ? kGemmClusters : 0));
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
  const auto& table = gemm_tunable_table();
  const auto parse = [](const Candidate& c) { return gemm_tunables(c, "gemm_space"); };
  Space s;
  s.fallback = base.tunables;
  const bool clusters = s.fallback.count("split") > 0;
  const unsigned where = clusters ? kGemmClusters : 0;
  if (auto sk = s.fallback.find("skinny"); sk != s.fallback.end() && sk->second == 1) {
    s.tunables = codegen::space_tunables(table, kGemmSkinny | where);
    // A default 32 or more wide may have lanes along N, where 8 and 16 do not exist.
    const bool wide = s.fallback.at("columns") >= 32;
    s.reject = [wide](const Candidate& c, const DeviceLimits&) {
      return wide && c.at("columns") < 32 ? std::string("lanes along N take 32 or 64 columns")
                                          : std::string();
    };
    return s;
  }
  if (auto w = s.fallback.find("wgmma"); w != s.fallback.end() && w->second == 1) {
    // An exact f32 product's stages also hold B's rest: its default asked for that much.
    const GemmTunables d = parse(s.fallback);
    const bool exact = base.config.shared ==
                       unsigned(gemm::config::wgmma_shared_bytes(d.bn, d.stages, true, d.split));
    s.tunables = codegen::space_tunables(table, kGemmWgmma | kGemmClusters);
    s.reject = [exact, parse](const Candidate& c, const DeviceLimits& limits) {
      return reject_wgmma_tunables(parse(c), limits.max_shared_bytes_per_block, exact);
    };
    return s;
  }
  s.tunables = codegen::space_tunables(table, kGemmMma | where);
  s.reject = [clusters, parse](const Candidate& c, const DeviceLimits& limits) -> std::string {
    GemmTunables t = parse(c);
    t.wgmma = 0;
    if (!clusters) t.split = 1;
    if (32 * t.warps_m * t.warps_n > limits.max_threads_per_block)
      return fmt::format("{} threads per block, the device allows {}", 32 * t.warps_m * t.warps_n,
                         limits.max_threads_per_block);
    return reject_gemm_tunables(t, limits.max_shared_bytes_per_block, clusters);
  };
  return s;
}

}  // namespace autotune

}  // namespace kiln
