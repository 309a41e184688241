// The GEMM family's sm_90a path (kernel_templates/kiln/gemm_sm90.cuh): TMA maps of A and B,
// wgmma, a producer and two consumer warpgroups; f16, bf16, and f32 on TF32 (three products per
// term unless the op asks for plain TF32).
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/gemm/gemm_templates.hpp"
#include "engine/runtime/tensor_map.hpp"
#include "kernel_templates/kiln/gemm_config.cuh"

namespace kiln {
namespace {

constexpr int kRows = gemm::config::kWgmmaRows;

bool exact_f32(const GemmKernel& k) { return k.a.dtype == DType::f32 && !k.tf32; }

// A view of the operand at `data`: `outer` rows of `inner` contiguous elements `stride` apart
// (a stride of 0, one row, replaced by any multiple of 16 bytes the map accepts).
TensorView rows_view(std::uint64_t data, std::int64_t outer, std::int64_t inner,
                     std::int64_t stride, DType t) {
  TensorView v;
  v.data = data;
  v.dtype = t;
  v.shape = {outer, inner};
  const std::int64_t e = std::int64_t(size_of(t));
  v.strides = {stride ? stride : (inner * e + 15) / 16 * 16 / e, 1};
  return v;
}

// An f32 product's width (exact or TF32): 64 columns where N fits them, or where an exact
// product has 16 or fewer tiles 128 wide, which split or not leave most SMs idle (M = 1024,
// N = 256, K = 4096: 16 tiles; at bn 64 and split 2, 64 blocks); else 256 for TF32 products of
// 256 or more each way, 128 otherwise.
int default_f32_bn(const GemmSizing& s, bool exact) {
  const std::int64_t tiles128 = (s.m + kRows - 1) / kRows * ((s.n + 127) / 128);
  if (s.n <= 64 || (exact && tiles128 * 4 * 2 <= s.sms)) return 64;
  return s.n >= 256 && s.m >= 256 && !exact ? 256 : 128;
}

// An exact product splits K between the blocks of a cluster (2 or 4) while the blocks stay within
// half the SMs and each keeps 8 stages or more: a cluster needs all its blocks in one GPC at once,
// and an H100's GPCs are unequal, so more blocks in clusters of 4 may not start in one wave.
// TF32 products do not split by default.
int exact_split(std::int64_t tiles, std::int64_t ktiles, std::int64_t sms) {
  int split = 1;
  while (split < 4 && tiles * split * 2 <= sms / 2 && ktiles >= 8 * split * 2) split *= 2;
  return split;
}

}  // namespace

// The tile width and split of least estimated time. A block's K steps (64 elements) each cost
// its B columns plus 200 (a convolution's step on an H200 grew as 1.54 ns x (bn + 200) from 80
// to 192 columns wide: its loads, A's 128 rows among them, and its fixed costs weigh more than
// its products); persistent blocks take ceil(tiles / SMs) rounds; a split (blocks of a cluster,
// one round only) keeps 8 steps or more a block and costs 4 steps more for the sum through
// distributed shared memory. Every cluster must fit at once: at one block an SM, 66 clusters of
// 2 fit 132 SMs but only 30 of 4 (120 blocks; bench/trace/cluster_occupancy.cu), and a launch
// past that runs a second round (128 blocks in clusters of 4 took twice as long). A width sized
// to N wastes fewer columns: N 320 is two tiles of 160, where 128 makes three. Products take it
// too, so that one of few tiles still fills the GPU.
GemmTunables wgmma_fit_tunables(const GemmSizing& s, bool b_trans) {
  constexpr int depth = gemm::config::stage_k(2);  // elements of K a stage: 128 bytes
  const std::int64_t steps = (s.k + depth - 1) / depth, rows = (s.m + kRows - 1) / kRows;
  const auto fit = [&](std::int64_t blocks, int split) {
    return blocks <= (split <= 2 ? s.sms : s.sms * 10 / 11);
  };
  GemmTunables best;
  double best_cost = 0;
  for (int bn : gemm::config::kWgmmaWidths) {
    if (!gemm::config::wgmma_width_ok(bn, b_trans)) continue;
    const std::int64_t tiles = rows * ((s.n + bn - 1) / bn);
    for (int split = 1; split <= 4; split *= 2) {
      if (split > 1 && (!fit(tiles * split, split) || steps < 8 * split)) continue;
      const std::int64_t rounds = split > 1 ? 1 : (tiles + s.sms - 1) / s.sms;
      const std::int64_t per = (steps + split - 1) / split + (split > 1 ? 4 : 0);
      const double cost = double(rounds) * double(per) * (bn + 200);
      if (best.bn == 0 || cost < best_cost) best.bn = bn, best.split = split, best_cost = cost;
    }
  }
  best.stages = 4;
  return best;
}

namespace {
/// Whether every epilogue input of `p` (past the bias) steps along N alone.
bool inputs_per_column(const GemmProblem& p, bool bias) {
  for (std::size_t i = p.outputs + 2 + (bias ? 1 : 0); i < p.slots.size(); ++i) {
    const GemmSlot& g = p.slots[i];
    bool per_column = g.row == 0;
    for (std::int64_t b : g.batch) per_column = per_column && b == 0;
    if (!per_column) return false;
  }
  return true;
}
}  // namespace

bool wgmma_store_fits(const GemmProblem& p, int columns, int split, bool bias, std::size_t inputs,
                      bool staged_inputs) {
  const GemmSlot& o = p.slots[0];  // V 8: contiguous along N, each row 16-byte aligned
  return split == 1 && p.outputs == 1 && columns == 8 && !bias &&
         (inputs == 0 || (staged_inputs && inputs_per_column(p, bias))) &&
         (o.element == 2 || o.element == 4) && o.lo == 0 && o.hi == p.n &&
         (p.m == 1 || o.row >= p.n);
}

int wgmma_column_slots(const GemmProblem& p, int split, bool bias, const codegen::Body& epilogue) {
  if (split != 1 || (!bias && epilogue.inputs.empty()) || !inputs_per_column(p, bias)) return 0;
  return int(bias) + codegen::column_operands(epilogue);
}

TensorMapParam wgmma_store_map(const GemmProblem& p, DType out, int bn, const std::string& stem) {
  const GemmSlot& o = p.slots[0];
  const unsigned cols = unsigned(gemm::config::wgmma_store_cols(bn, int(size_of(out))));
  return {{3, 0,
           runtime::describe_tensor_map(rows_view(o.data, p.m, p.n, o.row, out), {64, cols}, 0,
                                        stem + ": the output's map")},
          "the tensor map of parameter 3"};
}

void set_wgmma_launch(KernelLaunch& L, const GemmProblem& p, int bn, int split, int shared,
                      const std::vector<float>& scalars) {
  const std::int64_t tiles = (p.m + kRows - 1) / kRows * ((p.n + bn - 1) / bn);
  L.config.grid = {unsigned(tiles), 1, unsigned(split)};
  L.config.cluster = {1, 1, unsigned(split)};
  L.config.persistent = split == 1;
  L.config.block = {unsigned(gemm::config::kWgmmaThreads), 1, 1};
  L.config.shared = unsigned(shared);
  L.groups = 1;
  set_gemm_params(L, p, scalars, 3);
}

bool wgmma_fits(const GemmKernel& k, const GemmProblem& p) {
  const DType t = k.a.dtype;
  const bool b_fits =
      t == DType::f32 ? p.b_layout == GemmLayout::k_contiguous : p.b_layout != GemmLayout::strided;
  return k.arch == "sm_90a" && (t == DType::f16 || t == DType::bf16 || t == DType::f32) &&
         p.a_layout == GemmLayout::k_contiguous && b_fits && p.batches == 1 && p.m > 0 && p.n > 0 &&
         p.k > 0;
}

std::string reject_wgmma_tunables(const GemmTunables& t, int max_shared, bool exact, bool b_trans) {
  if (!gemm::config::wgmma_width_ok(t.bn, 0))
    return fmt::format("bn {}: the wgmma path takes {}", t.bn,
                       fmt::join(gemm::config::kWgmmaWidths, ", "));
  if (b_trans && !gemm::config::wgmma_width_ok(t.bn, 1))
    return fmt::format("bn {}: a B contiguous along N takes 64, 128 or 256", t.bn);
  if (exact && t.bn != 64 && t.bn != 128)
    return fmt::format("bn {}: an exact f32 product takes 64 or 128", t.bn);
  if (t.bm || t.warps_m || t.warps_n)
    return "bm, warps_m and warps_n are the mma.sync path's (the wgmma path's tile has 128 rows)";
  if (std::string why = reject_split(t.split ? t.split : 1, true); !why.empty()) return why;
  if (t.stages < 2 || t.stages > 8) return fmt::format("{} stages: 2 to 8", t.stages);
  const int shared = gemm::config::wgmma_shared_bytes(t.bn, t.stages, exact, t.split ? t.split : 1);
  if (shared > max_shared)
    return fmt::format("{} bytes of shared memory per block, the device allows {}", shared,
                       max_shared);
  return "";
}

KernelLaunch specialize_wgmma(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s,
                              const std::string& stem, GemmTunables t) {
  const bool exact = exact_f32(k);
  const bool trans = p.b_layout == GemmLayout::mn_contiguous;
  const int depth = gemm::config::stage_k(int(size_of(k.a.dtype)));  // elements of K a stage
  if (k.a.dtype != DType::f32) {
    const GemmTunables d = wgmma_fit_tunables(s, trans);
    if (!t.bn) t.bn = d.bn;
    if (!t.split) t.split = t.bn == d.bn ? d.split : 1;
  } else {
    if (!t.bn) t.bn = default_f32_bn(s, exact);
    if (!t.split) {
      const std::int64_t planned = (s.m + kRows - 1) / kRows * ((s.n + t.bn - 1) / t.bn);
      t.split = exact ? exact_split(planned, (s.k + depth - 1) / depth, s.sms) : 1;
    }
  }
  if (!t.stages) t.stages = 4;
  t.wgmma = 1;
  if (std::string why = reject_wgmma_tunables(t, s.max_shared, exact, trans); !why.empty())
    throw ArgumentError(fmt::format("{}: bad GEMM tunables: {}", stem, why));
  const DType dtype = k.a.dtype;
  const GemmSlot& a = p.slots[p.outputs];
  const GemmSlot& b = p.slots[p.outputs + 1];
  GemmWgmmaTemplate tp;
  tp.dtype = dtype;
  tp.bias = k.bias.has_value();
  tp.bn = t.bn, tp.stages = t.stages;
  tp.b_trans = trans;
  tp.columns = epilogue_columns(p);
  tp.exact = exact;
  tp.split = t.split;
  tp.store = wgmma_store_fits(p, tp.columns, t.split, tp.bias, k.epilogue_inputs.size(), false);
  tp.slots = tp.store ? 0 : wgmma_column_slots(p, t.split, tp.bias, k.epilogue);
  if (tp.shared_bytes() > s.max_shared) tp.slots = 0;  // the staged columns do not fit
  KernelLaunch L;
  L.spec = gemm_spec(tp, k.epilogue, stem);
  set_wgmma_launch(L, p, t.bn, t.split, tp.shared_bytes(), k.epilogue_scalars);
  const TensorView va = rows_view(a.data, p.m, p.k, a.row, dtype);
  const TensorView vb =
      trans ? rows_view(b.data, p.k, p.n, b.row, dtype) : rows_view(b.data, p.n, p.k, b.col, dtype);
  const std::vector<std::uint32_t> box_b =
      trans ? std::vector<std::uint32_t>{unsigned(depth), 64}
            : std::vector<std::uint32_t>{unsigned(t.bn), unsigned(depth)};
  L.layout.maps.push_back(
      {{1, std::uint32_t(p.outputs),
        runtime::describe_tensor_map(va, {kRows, unsigned(depth)}, 128, stem + ": a's map")},
       "the tensor map of parameter 1"});
  L.layout.maps.push_back({{2, std::uint32_t(p.outputs + 1),
                            runtime::describe_tensor_map(vb, box_b, 128, stem + ": b's map")},
                           "the tensor map of parameter 2"});
  if (tp.store) L.layout.maps.push_back(wgmma_store_map(p, k.outputs[0].dtype, t.bn, stem));
  L.tunables = codegen::launch_tunables(gemm_tunable_table(), t, kGemmWgmma | kGemmClusters);
  return L;
}

}  // namespace kiln
