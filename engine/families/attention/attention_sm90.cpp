// The attention family's sm_90a path (kernel_templates/kiln/attention_sm90.cuh): which calls it
// takes, and the TMA maps of q, k and v its launch encodes (attention.hpp).
#include <fmt/format.h>

#include <cmath>
#include <kiln/error.hpp>

#include "engine/families/attention/attention.hpp"
#include "engine/runtime/tensor_map.hpp"
#include "kernel_templates/kiln/attention_config.cuh"

namespace kiln {

namespace cfg = attention::config;

namespace {

// Tensor `t` (cfg::kQ, kK or kV) of `k` as the 5-d view its map takes: [batch dim 1, batch dim
// 2, heads, rows, D] at the call's merged batch strides; a dim of extent 1 is given a stride of
// 16 bytes (its own may be 0 or unaligned, which TMA refuses; it never steps along it).
TensorView map_view(const AttentionKernel& k, const cfg::Params& p, int t) {
  const TensorView& v = t == cfg::kQ ? k.q : t == cfg::kK ? k.k : k.v;
  const std::size_t rank = v.shape.size();
  const cfg::Strides& st = p.s[t];
  const Shape shape = {p.batch[1], p.batch[2], v.shape[rank - 3], v.shape[rank - 2],
                       v.shape[rank - 1]};
  const Shape strides = {st.batch[1], st.batch[2], st.head, st.row, 1};
  TensorView m = v;
  m.shape = shape;
  m.strides = strides;
  const std::int64_t unit = 16 / std::int64_t(size_of(v.dtype));
  for (std::size_t d = 0; d + 1 < 5; ++d)
    if (shape[d] == 1) m.strides[d] = unit;
  m.capacity = 0;
  return m;
}

TensorMapDesc describe(const AttentionKernel& k, const cfg::Params& p, int t, int rows,
                       const std::string& who) {
  return runtime::describe_tensor_map(map_view(k, p, t), {1, 1, 1, std::uint32_t(rows), 64}, 128,
                                      who);
}

}  // namespace

std::string wgmma_unfit(const AttentionKernel& k, const cfg::Params& p) {
  if (!k.wgmma) return "the target is not sm_90a";
  if (k.mask) return "a mask operand takes the mma path";
  // kv_lens: the maps' rows run to Skv, so a batch's last V tile holds a cache's unused rows
  // past its length; the consumers zero them (attention_sm90.cuh's zero_past_keys).
  if (k.dtype() != DType::f16 && k.dtype() != DType::bf16) return "q is not f16 or bf16";
  if (k.q.shape.back() > 192) return "a head size above 192 (the path's registers hold 192)";
  if (p.batch[0] != 1) return "more than two batch dims";
  if (!(p.scale_log2 > 0) || !std::isfinite(p.scale_log2))
    return "a scale of 0 or less, or not finite";
  const std::int64_t blocks = (std::int64_t(p.sq) + cfg::kWgmmaRows - 1) / cfg::kWgmmaRows *
                              std::int64_t(p.batches) * p.heads;
  if (blocks > (std::int64_t(1) << 30)) return "more than 2^30 blocks of 128 rows";
  for (int t : {cfg::kQ, cfg::kK, cfg::kV}) {
    if (t == cfg::kQ && k.has_prologue()) continue;  // the consumers compute q's tile
    const cfg::Strides& st = p.s[t];
    const TensorView& v = t == cfg::kQ ? k.q : t == cfg::kK ? k.k : k.v;
    const std::size_t rank = v.shape.size();
    const bool broadcast =
        (p.batch[1] > 1 && st.batch[1] == 0) || (p.batch[2] > 1 && st.batch[2] == 0) ||
        (v.shape[rank - 3] > 1 && st.head == 0) || (v.shape[rank - 2] > 1 && st.row == 0);
    if (broadcast) return "an operand broadcasts along a dim";
    try {
      describe(k, p, t, 64, "attention");
    } catch (const ArgumentError& e) {
      return e.what();
    }
  }
  return "";
}

void set_wgmma_maps(KernelLaunch& L, const AttentionKernel& k, const cfg::Params& p, int bn,
                    std::uint32_t first, const std::string& stem) {
  const char* names[] = {"q", "k", "v"};
  for (int t : {cfg::kQ, cfg::kK, cfg::kV}) {
    // With a prologue the consumers compute q's tile: its parameter holds k's map, unread.
    const int of = t == cfg::kQ && k.has_prologue() ? cfg::kK : t;
    const int rows = of == cfg::kQ ? cfg::kWgmmaRows : bn;
    L.layout.params.emplace_back(runtime::kTensorMapBytes);
    L.layout.maps.push_back(
        {{std::uint32_t(t), first + std::uint32_t(of - cfg::kQ),
          describe(k, p, of, rows, fmt::format("{}: {}'s map", stem, names[t - 1]))},
         fmt::format("the tensor map of {}", names[t - 1])});
  }
}

}  // namespace kiln
