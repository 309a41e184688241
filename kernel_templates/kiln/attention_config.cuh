#pragma once
// The attention templates' parameter block and shared-memory layout, as plain C++ with no CUDA
// types: g++ compiles it into the host (engine/families/attention fills the block and sizes the
// launch's shared memory with it), NVRTC into the kernels (attention.cuh), so the two cannot
// drift apart.

#if defined(__CUDACC__)
#define KILN_ATTENTION_CONFIG_FN __host__ __device__ constexpr
#else
#define KILN_ATTENTION_CONFIG_FN constexpr
#endif

namespace kiln::attention::config {

/// Batch dims a launch takes (q's dims before its heads); the host merges contiguous ones.
constexpr int kBatchDims = 3;

/// Strides (elements) of one tensor seen as [batch..., heads, rows, cols]: cols are D for q, k,
/// v and the output, the keys for a mask (0 where it broadcasts), none (0) for the lse.
struct Strides {
  long long batch[kBatchDims];
  long long head, row, col;
};

/// The tensors of a launch, in this order: what `Params::s` holds strides for. The first five
/// are also their pointers' slots in Params::ptr; the lse (the rows' log-sum-exp, f32) is not.
enum Tensor { kOut = 0, kQ = 1, kK = 2, kV = 3, kMask = 4, kLse = 5, kTensors = 6 };
/// Params::ptr's slot of the launch's workspace (the decode path's chunks), after the lens'.
constexpr int kWorkspace = 6;
/// Params::ptr's slot of the lse, 0 where the call does not ask for it.
constexpr int kLsePointer = 7;

/// Tensors an epilogue (elementwise consumers of the result, computed at its store) reads and
/// writes besides output 0 (whose pointer and strides are kOut's): its outputs 1 and on, then
/// its inputs, each over the result's [batch..., heads, rows, cols]; and its scalars.
constexpr int kEpilogueSlots = 4;
constexpr int kEpilogueScalars = 8;
struct EpilogueSlots {
  unsigned long long ptr[kEpilogueSlots];
  Strides s[kEpilogueSlots];
  float scalars[kEpilogueScalars];
};

/// The kernels' one parameter. Pointers first (the launch writes each call's there: out, q, k,
/// v, then mask, lens and lse where the call has them), then the sizes of the call. An out of 0
/// is not written (a call that asks for the lse alone).
struct Params {
  unsigned long long ptr[8];   ///< out, q, k, v, mask, lens, workspace, lse (0 when absent)
  Strides s[kTensors];         ///< per Tensor
  long long batch[kBatchDims]; ///< the batch dims' extents (1 for unused ones, leading)
  long long lens_stride;       ///< kv_lens' stride (elements)
  int batches;                 ///< product of `batch`
  int heads;                   ///< Hq
  int group;                   ///< Hq / Hkv: query heads per key/value head
  int sq, skv;                 ///< query rows, keys
  int m_blocks;                ///< blocks along the query rows (the mma path)
  float scale_log2;            ///< scale * log2(e)
  /// The prefill paths' (batch, head) pairs a section: a section's blocks run together, query
  /// blocks outermost, so that they read its keys and values from L2 (block_work).
  int section;
  EpilogueSlots epi;  ///< where the kernel has an epilogue
};

/// Slot of pointer `i` (the launch's order) in Params.
KILN_ATTENTION_CONFIG_FN unsigned pointer_offset(int i) { return unsigned(i) * 8u; }

// The mma.sync template: the Q tile (bm rows), then a ring of `stages` stages of bn rows of K
// then bn rows of V. D is padded to the MMA's k-step (16) and each row by 8 more elements, so
// that the 8 rows an ldmatrix reads fall on distinct banks.

/// D padded to the MMA's k-step.
KILN_ATTENTION_CONFIG_FN int padded_d(int d) { return (d + 15) / 16 * 16; }
/// A row of a tile in shared memory, in elements.
KILN_ATTENTION_CONFIG_FN int row_elements(int d) { return padded_d(d) + 8; }
/// The kernel's dynamic shared memory for 2-byte elements.
KILN_ATTENTION_CONFIG_FN int shared_bytes(int d, int bm, int bn, int stages) {
  return (bm + 2 * bn * stages) * row_elements(d) * 2;
}
/// Whether Q's fragments stay in registers for the whole block (else they are read from the
/// Q tile at each step: D above 128 would spill).
KILN_ATTENTION_CONFIG_FN bool q_in_registers(int d) { return padded_d(d) <= 128; }

// The sm_90a template (attention_sm90.cuh): 128 query rows a block, 64 a consumer warpgroup;
// Q (one or two tiles: wgmma_q_tiles), then a ring of `stages` stages of K and of V (bn rows
// each), every tile in atoms of 64 columns (128 bytes a row, 128-byte swizzled as TMA writes
// them: D padded to 64 with zeros); then the barriers (Q landed, then Q free, a Q tile each;
// then K landed, K free, V landed, V free, `stages` of each); then a Q tile's item, each, and
// each consumer group's copy of it.

constexpr int kWgmmaRows = 128;
/// A producer warpgroup and two consumer warpgroups.
constexpr int kWgmmaThreads = 384;
/// D padded to the atoms of 64 columns.
KILN_ATTENTION_CONFIG_FN int wgmma_d(int d) { return (d + 63) / 64 * 64; }
/// A tile of `rows` rows of 2-byte elements at head size `d`, in bytes.
KILN_ATTENTION_CONFIG_FN int wgmma_tile_bytes(int rows, int d) { return rows * wgmma_d(d) * 2; }
/// The most shared memory a block of sm_90 takes (its opt-in limit).
constexpr int kWgmmaMaxShared = 227 * 1024;
KILN_ATTENTION_CONFIG_FN int wgmma_barriers(int stages, int q_tiles) {
  return 2 * q_tiles + 4 * stages;
}
/// The sm_90a kernel's dynamic shared memory with `q_tiles` Q tiles: 1024 bytes to align the
/// tiles, the tiles, the barriers, the item of each Q tile and the groups' copies.
KILN_ATTENTION_CONFIG_FN int wgmma_bytes(int d, int bn, int stages, int q_tiles) {
  return 1024 + q_tiles * wgmma_tile_bytes(kWgmmaRows, d) + 2 * stages * wgmma_tile_bytes(bn, d) +
         8 * wgmma_barriers(stages, q_tiles) + 3 * 4 * q_tiles;
}
/// Two Q tiles where they fit beside the ring (a block's next item's Q then loads while this
/// item's tiles run: the short items of short sequences waited for it), else one.
KILN_ATTENTION_CONFIG_FN int wgmma_q_tiles(int d, int bn, int stages) {
  return wgmma_bytes(d, bn, stages, 2) <= kWgmmaMaxShared ? 2 : 1;
}
KILN_ATTENTION_CONFIG_FN int wgmma_shared_bytes(int d, int bn, int stages) {
  return wgmma_bytes(d, bn, stages, wgmma_q_tiles(d, bn, stages));
}

/// Query rows per block of the plain path (a warp each).
constexpr int kRowWarps = 4;

// The decode template (attention_decode.cuh): a tile of 16 packed rows (query row, head of a
// group), then a ring of `stages` stages of bn keys and bn values for each warp. After the keys,
// the ring holds each warp's partial results and the block's merge of them (f32: 16 maxima, 16
// sums, 16 rows of padded D), which the cluster's blocks merge in turn.

/// Packed rows a decode block takes.
constexpr int kDecodeRows = 16;
/// One partial result in floats: the rows' maxima and sums, then their outputs.
KILN_ATTENTION_CONFIG_FN int decode_part_floats(int d) {
  return 2 * kDecodeRows + kDecodeRows * padded_d(d);
}
/// The decode kernel's dynamic shared memory for 2-byte elements.
KILN_ATTENTION_CONFIG_FN int decode_shared_bytes(int d, int bn, int stages, int warps) {
  const int ring = warps * stages * 2 * bn * row_elements(d) * 2;
  const int parts = (warps + 1) * decode_part_floats(d) * 4;
  return kDecodeRows * row_elements(d) * 2 + (ring > parts ? ring : parts);
}

}  // namespace kiln::attention::config

#undef KILN_ATTENTION_CONFIG_FN
