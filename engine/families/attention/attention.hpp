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
#include "engine/codegen/launch.hpp"
#include "engine/codegen/tunable_table.hpp"

namespace kiln {

/// One attention call: its views (out [..., Hq, Sq, D]; q; k and v [..., Hkv, Skv, D]; the mask
/// broadcastable to [..., Hq, Sq, Skv]; kv_lens [B]), its attributes and the target.
struct AttentionKernel {
  TensorView out, q, k, v;
  std::optional<TensorView> mask, lens;
  bool causal = false;
  bool bottom_right = false;  ///< causal_align "bottom_right"
  std::optional<double> scale;  ///< none: 1 / sqrt(D)
  int max_shared = 0;  ///< the target's opt-in shared memory per block (0: 99 KiB)
};

/// The templates' parameters as the specialization chose them: `mma` picks attention_mma
/// (bm, bn, stages its tunables, declared once in attention_tunable_table()) over
/// attention_rows.
struct AttentionTemplate {
  DType dtype = DType::bf16;
  std::optional<DType> mask, lens;
  int d = 64;
  bool mma = true;
  bool causal = false, bottom_right = false;
  int bm = 128, bn = 64, stages = 2;

  /// `kiln::attention::attention_mma<...>` or `kiln::attention::attention_rows<...>`.
  std::string expression() const;
  /// "<stem>__fa128x64s2_d64_causal"; the rows path "<stem>__rows_d64".
  std::string name(std::string_view stem) const;
  /// Dynamic shared memory (attention_config.cuh's layout); 0 for the rows path.
  int shared_bytes() const;
  unsigned threads() const;
};

/// The mma template's tunables, once: bm, bn, stages.
const codegen::TunableTable<AttentionTemplate>& attention_tunable_table();

/// The most keys a tile of the mma path takes at head size `d` (with a mask: `masked`) before
/// its registers spill.
int widest_key_tile(int d, bool masked);

/// The default tiles of the mma path for head size `d` (with a mask: `masked`) within
/// `max_shared` bytes.
AttentionTemplate default_attention_tiles(int d, bool masked, int max_shared);

/// `k`'s kernel with tunables `t` (mma path only; a missing one takes the default).
/// ArgumentError naming `stem` for another tunable or a value the template does not take,
/// ShapeError for views it cannot launch on.
KernelLaunch specialize_attention(const AttentionKernel& k, const std::string& stem,
                                  const Tunables& t);

namespace autotune {
/// What `kiln tune` searches for an attention kernel (nothing for the rows path): bm, bn and
/// stages whose shared memory fits `max_shared`.
Space attention_space(const KernelLaunch& base, int max_shared);
}  // namespace autotune

}  // namespace kiln
