#pragma once
// Specialization of the attention templates: attention.cuh's mma.sync kernel (f16 and bf16 with
// D contiguous and 16-byte rows) and attention_rows.cuh's plain one (f32, or any strides). Both
// read q, k and v as strided views in place and take B, H, Sq and Skv as arguments, so a new
// length reuses the compiled kernel.

#include <kiln/tensor.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "engine/codegen/autotune.hpp"
#include "engine/codegen/codegen.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/codegen/tunable_table.hpp"
#include "kernel_templates/kiln/attention_config.cuh"

namespace kiln {

/// One attention call: its views (out [..., Hq, Sq, D]; q; k and v [..., Hkv, Skv, D]; the mask
/// broadcastable to [..., Hq, Sq, Skv]; kv_lens [B]; the lse [..., Hq, Sq], f32), its attributes
/// and the target.
struct AttentionKernel {
  TensorView out, q, k, v;
  std::optional<TensorView> mask, lens, lse;
  /// Whether the kernel writes `out` (a call of the lse alone does not: `out` then only gives
  /// the shape).
  bool store_out = true;
  bool causal = false;
  bool bottom_right = false;    ///< causal_align "bottom_right"
  std::optional<double> scale;  ///< none: 1 / sqrt(D)
  double scale_factor = 1;      ///< the scale times this: factors folded from q and k
  int max_shared = 0;           ///< the target's opt-in shared memory per block (0: 99 KiB)
  int sms = 0;            ///< the target's multiprocessors (0: 108), which the decode path fills
  bool clusters = false;  ///< the target runs thread-block clusters (sm_90 and later)
  bool wgmma = false;     ///< the target runs wgmma and TMA (sm_90a)
  bool dynamic = false;   ///< a dim of the call is dynamic: the launch serves a bucket of extents
  /// Elementwise consumers of the result computed at its store (FusedGroup::epilogue: the
  /// result is its last input, Ref::Kind::row); none without outputs. Its output 0 is `out`,
  /// the rest `epilogue_outputs`; its tensor inputs `epilogue_inputs`, each of the result's
  /// shape or broadcast to it.
  codegen::Body epilogue;
  std::vector<TensorView> epilogue_outputs, epilogue_inputs;
  std::vector<float> epilogue_scalars;
  bool has_epilogue() const { return !epilogue.outputs.empty(); }
  /// q's elementwise producers computed as its tile is loaded (ops::FusionRoles::loads_prologue):
  /// `q` is then the prologue's input 0 seen over q's shape (strides 0 where it broadcasts; its
  /// own dtype), `prologue_inputs` its others (of q's shape or broadcast to it), in the slots
  /// after the epilogue's; the kernel rounds the value to dtype().
  codegen::Body prologue;
  std::vector<TensorView> prologue_inputs;
  std::vector<float> prologue_scalars;
  bool has_prologue() const { return !prologue.outputs.empty(); }
  /// The element type of q, k and v (q's view may be a prologue's input of another).
  DType dtype() const { return k.dtype; }
};

/// The templates' parameters as the specialization chose them: `mma` picks attention_mma
/// (tunables bm, bn, stages, wm) over attention_rows, `decode` (with `mma`) attention_decode
/// for few query rows (tunables bn, stages, warps, split, chunks), `wgmma` (with `mma`)
/// attention_sm90 (tunables bn, stages); attention_tunable_table() declares them once.
struct AttentionTemplate {
  DType dtype = DType::bf16;
  std::optional<DType> mask, lens;
  int d = 64;
  bool mma = true, decode = false;
  bool causal = false, bottom_right = false;
  int bm = 128, bn = 64, stages = 2;
  int wm = 16;               ///< the mma path's query rows a warp (16 or 32)
  int warps = 4, split = 1;  ///< the decode path's warps a block, and blocks a cluster
  /// The decode path's clusters (or blocks) a tile of packed rows, over its keys, merged through
  /// the launch's workspace by the last to finish.
  int chunks = 1;
  /// The sm_90a path (attention_sm90.cuh); a tunable, 0 on the mma path of an sm_90a target
  /// (`hopper`), so that a tuning record can choose either (`kiln tune` searches the default's
  /// path).
  int wgmma = 0;
  bool hopper = false;
  /// The kernel applies the epilogue `kiln_epilogue` (its source's) at its store.
  bool epilogue = false;
  /// The kernel computes q by the prologue `kiln_prologue` (its source's) as it loads it.
  bool prologue = false;

  /// `kiln::attention::attention_mma<...>`, `...attention_decode<...>`, `...attention_sm90<...>`
  /// or `...attention_rows<...>`.
  std::string expression() const;
  /// "<stem>__fa128x64s2_d64_causal" ("...s2r32_..." with 32 rows a warp); the decode path
  /// "<stem>__dec32s3w4k2_d128"; the sm_90a path "<stem>__wg128x128s2_d128"; the rows path
  /// "<stem>__rows_d64".
  std::string name(std::string_view stem) const;
  /// Dynamic shared memory (attention_config.cuh's layouts); 0 for the rows path.
  int shared_bytes() const;
  unsigned threads() const;
  /// The tunable table's path bits of this template (kAttentionMma, kAttentionDecode,
  /// kAttentionWgmma), with kAttentionClusters where `clusters` and kAttentionHopper where
  /// `hopper`.
  unsigned where(bool clusters) const;
};

/// Path bits of attention_tunable_table().
constexpr unsigned kAttentionMma = 1, kAttentionDecode = 2, kAttentionClusters = 4;
constexpr unsigned kAttentionWgmma = 8, kAttentionHopper = 16;

/// The templates' tunables, once: the mma path's bm, bn, stages, wm; the decode path's bn, stages,
/// warps, chunks and (with clusters) split.
const codegen::TunableTable<AttentionTemplate>& attention_tunable_table();

/// The most keys a tile of the mma path takes at head size `d` (with a mask: `masked`; with
/// kv_lens or a bottom-right causal diagonal, bounds of each row's keys known at run time:
/// `ragged`) and `wm` query rows a warp before its registers spill (0: none fits), on sm_90 and
/// later (`sm90`) or before.
int widest_key_tile(int d, bool masked, int wm, bool sm90, bool ragged = false);

/// The default tiles of the mma path for head size `d` (with a mask: `masked`; `ragged` as
/// widest_key_tile's) within `max_shared` bytes, on sm_90 and later (`sm90`) or before.
AttentionTemplate default_attention_tiles(int d, bool masked, int max_shared, bool sm90,
                                          bool ragged = false);

/// Whether the sm_90a path's tiles of `bn` keys at head size `d` keep their scores,
/// probabilities and outputs in a consumer's registers without spilling.
bool wgmma_key_tile_fits(int d, int bn);

/// The default tiles of the sm_90a path for head size `d` within `max_shared` bytes.
AttentionTemplate default_wgmma_tiles(int d, int max_shared);

/// The default tiles of the decode path for head size `d` (with a mask: `masked`) within
/// `max_shared` bytes: `work` tiles of packed rows over `keys` keys, split between the blocks
/// of a cluster (where `clusters`), then between chunks, while the blocks still fit one wave on
/// `sms` multiprocessors.
AttentionTemplate default_decode_tiles(int d, bool masked, int max_shared, std::int64_t work,
                                       std::int64_t keys, bool clusters, int sms);

/// `t` over `defaults` (a template of the mma or decode path); ArgumentError naming `stem` for
/// a tunable its path does not have, a value the template does not take, a split where the
/// target has no clusters, or tiles whose shared memory the block does not have.
AttentionTemplate resolve_attention_tiles(const Tunables& t, const AttentionTemplate& defaults,
                                          const std::string& stem, int max_shared, bool clusters);

/// The name of the epilogue's struct in a kernel's source, the templates' Epi.
constexpr const char* kAttentionEpilogue = "kiln_epilogue";
/// The name of the prologue's struct in a kernel's source, the templates' Pro.
constexpr const char* kAttentionPrologue = "kiln_prologue";

/// The epilogue's tensors of `k` (outputs after the first, then inputs), then the prologue's
/// inputs after its first, appended to `strides`, each over the result's shape (0 where it
/// broadcasts), with their slots in `dst`; their pointers and the epilogue's scalars, then the
/// prologue's, in p.epi. ArgumentError naming `stem` past the slots
/// (the fusion pass keeps an epilogue within them: ops::FusionRoles::epilogue_tensors).
void set_epilogue_slots(attention::config::Params& p, const AttentionKernel& k,
                        const std::string& stem, std::vector<Shape>& strides,
                        std::vector<attention::config::Strides*>& dst);

/// L's pointers in the group's order (FusedGroup::pointer_nodes): its outputs (the result or the
/// epilogue's, then the lse), its inputs, the prologue's inputs after its first (the group's
/// extras), then the epilogue's inputs; each where the kernel
/// reads it, written into `p` too (a launch straight from L, the tuner's, reads them there).
/// Returns q's position.
std::uint32_t set_attention_pointers(KernelLaunch& L, attention::config::Params& p,
                                     const AttentionKernel& k);

/// The source of `k`'s kernel from template header `header`: its include, and the epilogue's
/// and the prologue's structs where `k` has them.
std::string attention_source(std::string_view header, const AttentionKernel& k);

/// `k`'s kernel with tunables `t` (mma and decode paths; a missing one takes the default).
/// ArgumentError naming `stem` for another tunable or a value the template does not take,
/// ShapeError for views it cannot launch on.
KernelLaunch specialize_attention(const AttentionKernel& k, const std::string& stem,
                                  const Tunables& t);

/// Why the call `k` (its parameter block `p`) cannot take the sm_90a path: not sm_90a, a mask or
/// kv_lens, not 16-bit, D above 192, a scale not above 0 or not finite, more than two batch dims,
/// more than 2^30 blocks of 128 rows, a broadcast operand, a view TMA cannot map; empty where it
/// can.
std::string wgmma_unfit(const AttentionKernel& k, const attention::config::Params& p);

/// Appends to `L` the TMA maps of q, k and v (parameters 1 to 3 of attention_sm90; tiles of
/// 128 query rows and of `bn` keys) of its pointers `first` to `first` + 2, errors naming `stem`.
void set_wgmma_maps(KernelLaunch& L, const AttentionKernel& k, const attention::config::Params& p,
                    int bn, std::uint32_t first, const std::string& stem);

namespace autotune {
/// What `kiln tune` searches for an attention kernel (nothing for the rows path): its path's
/// tunables whose shared memory fits `max_shared` and whose key tiles do not spill (on sm_90 and
/// later: `sm90`).
Space attention_space(const KernelLaunch& base, int max_shared, bool sm90);
}  // namespace autotune

}  // namespace kiln
