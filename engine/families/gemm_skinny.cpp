// The GEMM family's path for up to 8 rows (kernel_templates/kiln/gemm_skinny.cuh): f32 FMA over
// 64 columns a block, K split between the blocks of a cluster where clusters run.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/gemm_problem.hpp"

namespace kiln {
namespace {

constexpr std::int64_t kColumns = 64;

// The default split: K in ranges of 512 or more, while the blocks fill at most two per SM.
int default_split(const GemmProblem& p, bool clusters) {
  const std::int64_t blocks = (p.n + kColumns - 1) / kColumns * p.batches;
  int split = 1;
  while (clusters && split < 8 && p.k / (2 * split) >= 512 && blocks * split <= kGemmSms)
    split *= 2;
  return split;
}

}  // namespace

KernelLaunch specialize_skinny(const GemmKernel& k, const GemmProblem& p, const std::string& stem,
                               GemmTunables t, bool clusters) {
  if (p.m > 8)
    throw ArgumentError(
        fmt::format("{}: the skinny path takes at most 8 rows, M is {}", stem, p.m));
  if (t.bm || t.bn || t.warps_m || t.warps_n || t.stages || t.wgmma == 1)
    throw ArgumentError(fmt::format("{}: the skinny path's only tunable is split", stem));
  if (!t.split) t.split = default_split(p, clusters);
  if (std::string why = reject_split(t.split, clusters); !why.empty())
    throw ArgumentError(fmt::format("{}: {}", stem, why));
  const int rows = p.m <= 1 ? 1 : p.m <= 2 ? 2 : p.m <= 4 ? 4 : 8;
  const bool n_contiguous = p.slots[p.outputs + 1].col == 1;
  const DType dtype = k.a.dtype;
  KernelLaunch L;
  L.spec.source = codegen::render_source("gemm_skinny.cuh", {{"kiln_epilogue", &k.epilogue}});
  L.spec.expression = codegen::render_instance(
      "kiln::gemm::gemm_skinny",
      {std::string(device_type_of(dtype)), "kiln_epilogue", k.bias ? "true" : "false",
       std::to_string(rows), std::to_string(t.split), n_contiguous ? "true" : "false"});
  L.spec.options = codegen::builtin_options();
  L.spec.name =
      fmt::format("{}__rows{}{}_{}{}", stem, rows, t.split > 1 ? fmt::format("k{}", t.split) : "",
                  n_contiguous ? 'n' : 'k', k.bias ? "_bias" : "");
  const bool empty = p.m == 0 || p.n == 0 || p.batches == 0;
  L.config.grid = {empty ? 0u : unsigned((p.n + kColumns - 1) / kColumns),
                   unsigned(std::min<std::int64_t>(p.batches, 65535)), unsigned(t.split)};
  L.config.block = {256, 1, 1};
  L.config.cluster = {1, 1, unsigned(t.split)};
  L.groups = L.config.empty() ? 0 : 1;
  set_gemm_params(L, p, k.epilogue_scalars);
  L.tunables = {{"skinny", 1}};
  if (clusters) L.tunables["split"] = t.split;
  return L;
}

}  // namespace kiln
