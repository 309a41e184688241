// The GEMM family's path for few rows (kernel_templates/kiln/gemm_skinny.cuh): f32 FMA over
// tiles of up to 8 rows and 8 to 64 columns, K split between the blocks of a cluster where
// clusters run.
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <limits>

#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/gemm/gemm_templates.hpp"

namespace kiln {
namespace {

// The tile of a block: up to 8 rows (the power of two that holds M, else 8) and 64 columns, or
// as few as 8 (lanes along K) or 32 (lanes along N) while the tiles would not fill two blocks
// per SM: a latency-bound product wants many warps in flight.
struct SkinnyTile {
  int rows = 8, columns = 64;
  std::int64_t tiles = 0;  // per batch
};

// The narrowest tile: lanes along N take whole warps of columns.
int fewest_columns(bool n_contiguous) { return n_contiguous ? 32 : 8; }

// Chosen for `s` (the sizes, or their buckets'); `tiles` counts `p`'s own.
SkinnyTile skinny_tile(const GemmProblem& p, const GemmSizing& s, bool n_contiguous, int columns) {
  SkinnyTile t;
  t.rows = s.m <= 1 ? 1 : s.m <= 2 ? 2 : s.m <= 4 ? 4 : 8;
  auto tiles = [&](std::int64_t m, std::int64_t n, int columns) {
    return (n + columns - 1) / columns * ((m + t.rows - 1) / t.rows);
  };
  if (columns)
    t.columns = columns;
  else
    while (t.columns > fewest_columns(n_contiguous) &&
           tiles(s.m, s.n, t.columns) * s.batches < 2 * s.sms)
      t.columns /= 2;
  t.tiles = tiles(p.m, p.n, t.columns);
  return t;
}

// The default split: K in ranges of 512 or more, while the blocks fill at most one per SM.
int default_split(const GemmSizing& s, const SkinnyTile& tile, bool clusters) {
  const std::int64_t blocks =
      (s.n + tile.columns - 1) / tile.columns * ((s.m + tile.rows - 1) / tile.rows) * s.batches;
  int split = 1;
  while (clusters && split < 8 && s.k / (2 * split) >= 512 && blocks * split <= s.sms) split *= 2;
  return split;
}

}  // namespace

bool skinny_by_default(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s) {
  if (p.n > kSkinnyExtent || p.k > kSkinnyExtent || s.n > kSkinnyExtent || s.k > kSkinnyExtent)
    return false;
  if (s.m <= 8) return true;
  return s.m <= kSkinnyRows && k.a.dtype == DType::f32 && !k.tf32 && s.n * s.k <= (1 << 20);
}

KernelLaunch specialize_skinny(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s,
                               const std::string& stem, GemmTunables t, bool clusters) {
  if (p.m > kSkinnyRows)
    throw ArgumentError(
        fmt::format("{}: the skinny path takes at most {} rows, M is {}", stem, kSkinnyRows, p.m));
  if (p.n > kSkinnyExtent || p.k > kSkinnyExtent)
    throw ShapeError(
        fmt::format("{}: the skinny path takes N and K up to {} (int index math): "
                    "N is {}, K {}",
                    stem, kSkinnyExtent, p.n, p.k));
  if (t.bm || t.bn || t.warps_m || t.warps_n || t.stages || t.wgmma == 1)
    throw ArgumentError(
        fmt::format("{}: the few-row path's only tunables are split and columns", stem));
  const bool n_contiguous = p.slots[p.outputs + 1].col == 1;
  if (t.columns && ((t.columns != 8 && t.columns != 16 && t.columns != 32 && t.columns != 64) ||
                    t.columns < fewest_columns(n_contiguous)))
    throw ArgumentError(fmt::format(
        "{}: a tile of {} columns: 8, 16, 32 or 64 ({}32 or 64 where B is contiguous along N)",
        stem, t.columns, n_contiguous ? "here " : ""));
  const SkinnyTile tile = skinny_tile(p, s, n_contiguous, t.columns);
  if (!t.split) t.split = default_split(s, tile, clusters);
  if (std::string why = reject_split(t.split, clusters); !why.empty())
    throw ArgumentError(fmt::format("{}: {}", stem, why));
  GemmSkinnyTemplate tp;
  tp.dtype = k.a.dtype;
  tp.bias = k.bias.has_value();
  tp.rows = tile.rows;
  tp.split = t.split;
  tp.n_contiguous = n_contiguous;
  tp.columns = tile.columns;
  KernelLaunch L;
  L.spec = gemm_spec(tp, k.epilogue, stem);
  const bool empty = p.m == 0 || p.n == 0 || p.batches == 0;
  if (tile.tiles > std::numeric_limits<int>::max())
    throw ShapeError(fmt::format("{}: {} tiles of {}x{}: too many for one launch", stem, tile.tiles,
                                 tile.rows, tile.columns));
  L.config.grid = {empty ? 0u : unsigned(tile.tiles),
                   unsigned(std::min<std::int64_t>(p.batches, 65535)), unsigned(t.split)};
  L.config.block = {256, 1, 1};
  L.config.cluster = {1, 1, unsigned(t.split)};
  L.groups = L.config.empty() ? 0 : 1;
  set_gemm_params(L, p, k.epilogue_scalars);
  t.skinny = 1;
  t.columns = tile.columns;
  L.tunables = codegen::launch_tunables(gemm_tunable_table(), t,
                                        kGemmSkinny | (clusters ? kGemmClusters : 0));
  return L;
}

}  // namespace kiln
