#pragma once
// The GEMM templates' shared-memory layouts, in bytes, as constexpr functions of ints: the
// templates (gemm_kernel.cuh, gemm_sm90.cuh) lay their shared memory out with them and the host
// (engine/families/gemm) sizes each launch's dynamic shared memory with them, so the two cannot
// drift apart. Plain C++ with no CUDA types: g++ compiles it into the host (as
// "kernel_templates/kiln/gemm_config.cuh"), NVRTC into the kernels (as <kiln/gemm_config.cuh>).

#if defined(__CUDACC__)
#define KILN_GEMM_CONFIG_FN __host__ __device__ constexpr
#else
#define KILN_GEMM_CONFIG_FN constexpr
#endif

namespace kiln::gemm::config {

/// Bytes of K a stage holds per row of A or B: one 128-byte swizzled row.
constexpr int kRowBytes = 128;

/// Elements of K per stage for elements of `element_bytes`: 64 two-byte or 32 four-byte.
KILN_GEMM_CONFIG_FN int stage_k(int element_bytes) { return kRowBytes / element_bytes; }

// The mma.sync template (gemm_kernel.cuh): a ring of `stages` stages, each bm rows of A then bn
// rows of B; once the products are done, the ring holds the bm x bn accumulator tile instead,
// its rows padded by 8 floats (no bank conflicts).

/// One stage of the ring.
KILN_GEMM_CONFIG_FN int mma_stage_bytes(int bm, int bn) { return (bm + bn) * kRowBytes; }
/// The accumulator tile's row, in floats.
KILN_GEMM_CONFIG_FN int mma_tile_ld(int bn) { return bn + 8; }
/// The kernel's dynamic shared memory: the ring or the accumulator tile, the larger.
KILN_GEMM_CONFIG_FN int mma_shared_bytes(int bm, int bn, int stages) {
  const int ring = stages * mma_stage_bytes(bm, bn), tile = bm * mma_tile_ld(bn) * 4;
  return ring > tile ? ring : tile;
}

// The wgmma template (gemm_sm90.cuh): past an alignment pad to 1024 bytes, the ring of `stages`
// stages (128 rows of A, bn of B, and for an exact f32 product bn more: B's rest), then 8-byte
// mbarriers per stage (full, empty; exact: split), then (split 1) each consumer group's staging
// area for its epilogue. A split's blocks pass their 128 x bn tile (rows padded by 8 floats)
// through the ring instead.

constexpr int kWgmmaRows = 128;                ///< the tile's rows (two consumer groups of 64)
constexpr int kWgmmaThreads = 384;             ///< a producer and two consumer warpgroups
constexpr int kWgmmaAlign = 1024;              ///< the ring's alignment (128-byte swizzle atoms)
constexpr int kConsumers = 2;                  ///< consumer warpgroups, a staging area each
constexpr int kStagingRows = 64;               ///< a consumer group's rows
constexpr int kStagingChunk = 32;              ///< columns staged at a time (16 where BN % 32 != 0)
constexpr int kStagingLd = kStagingChunk + 8;  ///< a staged row, in floats

/// The tile widths wgmma.cuh instantiates, narrowest first (a width sized to N fills the GPU
/// with fewer wasted columns: N 320 is two tiles of 160, or four of 80 where a split needs
/// narrow tiles).
constexpr int kWgmmaWidths[] = {64, 80, 96, 128, 160, 192, 256};
/// Whether the wgmma template takes tiles `bn` wide: one of kWgmmaWidths; an N-contiguous B is
/// loaded in atoms of 64 columns, so a multiple of 64 with `b_trans`.
KILN_GEMM_CONFIG_FN bool wgmma_width_ok(int bn, int b_trans) {
  bool listed = false;
  for (int w : kWgmmaWidths) listed = listed || w == bn;
  return listed && (!b_trans || bn % 64 == 0);
}
/// One operand tile of `rows` rows in a stage.
KILN_GEMM_CONFIG_FN int wgmma_tile_bytes(int rows) { return rows * kRowBytes; }
/// One stage of the ring: A, B, and for `exact` B's rest.
KILN_GEMM_CONFIG_FN int wgmma_stage_bytes(int bn, bool exact) {
  return wgmma_tile_bytes(kWgmmaRows) + wgmma_tile_bytes(bn) * (exact ? 2 : 1);
}
/// A split's tile's row, in floats.
KILN_GEMM_CONFIG_FN int wgmma_tile_ld(int bn) { return bn + 8; }
/// mbarriers per stage.
KILN_GEMM_CONFIG_FN int wgmma_barriers(bool exact) { return exact ? 3 : 2; }
/// The ring's stages and their barriers.
KILN_GEMM_CONFIG_FN int wgmma_ring_bytes(int bn, int stages, bool exact) {
  return stages * wgmma_stage_bytes(bn, exact) + wgmma_barriers(exact) * 8 * stages;
}
/// Where the consumer groups' staging areas start (split 1): past the ring and its barriers, on
/// 16 bytes (the epilogue reads them as float4; exact's three barriers a stage leave 8).
KILN_GEMM_CONFIG_FN int wgmma_staging_offset(int bn, int stages, bool exact) {
  return (wgmma_ring_bytes(bn, stages, exact) + 15) / 16 * 16;
}
/// Split 1 with a dense output (the engine's wgmma_store_fits): the epilogue writes each chunk
/// of a consumer group's 64 rows into shared memory as the output's elements (`bytes` each) and
/// a TMA store copies it out, two buffers a group in its staging area, alternating. A chunk's
/// columns: 64 bytes of a row, or 32 where `bn` is not a multiple of those.
KILN_GEMM_CONFIG_FN int wgmma_store_cols(int bn, int bytes) {
  return bn % (64 / bytes) == 0 ? 64 / bytes : 32 / bytes;
}
constexpr int kStoreAlign = 128;  ///< a TMA store's shared-memory source
/// Both buffers fit a group's staging area, past an alignment pad.
static_assert(2 * kStagingRows * 64 + kStoreAlign <= kStagingRows * kStagingLd * 4,
              "a group's two store buffers in its staging area");
/// Split 1 with the epilogue's per-column operands staged (Columns: a bias, a batch norm's
/// statistics): past the staging areas, `slots` rows of bn floats, each operand's value at each of
/// the tile's columns.
KILN_GEMM_CONFIG_FN int wgmma_columns_offset(int bn, int stages, bool exact) {
  return wgmma_staging_offset(bn, stages, exact) + kConsumers * kStagingRows * kStagingLd * 4;
}
/// The kernel's dynamic shared memory; `slots`: the per-column operands staged (Columns).
KILN_GEMM_CONFIG_FN int wgmma_shared_bytes(int bn, int stages, bool exact, int split,
                                           int slots = 0) {
  const int ring = wgmma_ring_bytes(bn, stages, exact);
  const int tile = kWgmmaRows * wgmma_tile_ld(bn) * 4;
  if (split > 1) return (ring > tile ? ring : tile) + kWgmmaAlign;
  return wgmma_columns_offset(bn, stages, exact) + slots * bn * 4 + kWgmmaAlign;
}

}  // namespace kiln::gemm::config

#undef KILN_GEMM_CONFIG_FN
