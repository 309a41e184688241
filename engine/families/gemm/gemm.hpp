#pragma once
// Specialization of the GEMM template (kernel_templates/kiln/gemm.cuh): a matrix product
// (matmul, linear) of any views, with its elementwise consumers fused as an epilogue. M, N, K,
// strides and batch dims are the kernel's arguments; what picks the kernel is the dtype, each
// operand's layout class, the epilogue, and the tile (tunables).

#include <optional>
#include <string>
#include <vector>

#include "engine/codegen/autotune.hpp"
#include "engine/codegen/codegen.hpp"
#include "engine/codegen/launch.hpp"
#include "ops/op.hpp"

namespace kiln {

/// Which of a product's sizes a plan's dynamic dims set ("?"): the kernel is chosen for their
/// bucket (engine/families/gemm/gemm_buckets.hpp), so every size of a bucket runs one kernel.
struct GemmDynamic {
  bool m = false, n = false, k = false, batches = false;
  bool any() const { return m || n || k || batches; }
};

/// What a kernel's default tunables are chosen for: the product's sizes (each dynamic one its
/// bucket's), and the limits of the GPU it is for.
struct GemmSizing {
  std::int64_t m = 0, n = 0, k = 0, batches = 1;
  std::int64_t sms = 132;         ///< blocks that fill the GPU (the target's SMs)
  int max_shared = 227 * 1024;    ///< bytes of shared memory a block may use
};

/// The operands and bodies of one GEMM kernel.
struct GemmKernel {
  const ops::OpDef* op = nullptr;  ///< matmul or linear
  bool tf32 = false;               ///< f32 on plain TF32 (else three TF32 products per term)
  codegen::Body epilogue;          ///< reads the product (+ bias) as Ref::Kind::row
  std::vector<TensorView> outputs;
  /// Per output, the product's column its column 0 holds where it is a slice of the columns
  /// (its last extent the slice's width: QKV's three outputs); empty: 0 for every output.
  std::vector<std::int64_t> column0;
  TensorView a, b;  ///< matmul's a and b; linear's x and w
  std::optional<TensorView> bias;
  std::vector<TensorView> epilogue_inputs;
  std::vector<float> epilogue_scalars;
  std::string arch = "sm_80";  ///< the target: sm_90a takes the wgmma path where it fits
  /// The target's limits (0: the arch's, engine/target.hpp): the shared memory a block may use
  /// and the SMs a launch should fill.
  int max_shared = 0, sms = 0;
  GemmDynamic dynamic;  ///< the sizes a plan's dynamic dims set
};

/// The template's tunables: the block's tile of C (bm x bn), its warps (warps_m x warps_n) and
/// the stages of the shared-memory ring along K. 0: the heuristic default. `wgmma`: 1 the
/// sm_90a path (gemm_sm90.cuh: bn, stages and split only, its tile 128 rows), 0 the mma.sync path,
/// -1 the first where it fits. Each is a row of gemm_tunable_table() (gemm_templates.hpp): its
/// name, values and paths.
struct GemmTunables {
  int bm = 0;
  int bn = 0;
  int warps_m = 0;
  int warps_n = 0;
  int stages = 0;
  int wgmma = -1;
  int split = 0;  ///< blocks of a cluster that split K (1, 2, 4, 8; sm_90 and later)
  /// 1 the path for few rows (gemm_skinny.cuh: split and columns only), 0 not, -1 where it fits.
  int skinny = -1;
  /// The few-row path's tile width: 8, 16, 32 or 64 columns (B contiguous along N: 32 or 64).
  int columns = 0;
};

/// `t`'s tunables by name; ArgumentError naming `stem` for any other name.
GemmTunables gemm_tunables(const Tunables& t, const std::string& stem);

/// The default tile for `s`'s M x N x K product (`batches` of them); where `clusters` run, K
/// splits between the blocks of a cluster when the tiles alone would leave most of the GPU idle.
GemmTunables default_gemm_tunables(const GemmSizing& s, bool clusters);

/// `t` with each unset (0) tunable of the mma.sync path set: the tile and split
/// default_gemm_tunables() gives for `s`, warp tiles of 64 x 32 (32 x 32 on a 64 x 64 tile).
GemmTunables resolve_mma_tunables(GemmTunables t, const GemmSizing& s, bool clusters);

/// How many blocks of a cluster split K by default: doubling (up to 8) while `blocks` tiles
/// times the split fill at most half of `sms` and each block keeps 4 or more of the `ktiles`
/// stages along K; 1 where clusters do not run.
int default_split(std::int64_t blocks, std::int64_t ktiles, bool clusters, std::int64_t sms);

/// Why `t` cannot run with `max_shared` bytes of shared memory per block ("" if it can);
/// `clusters`: whether the target runs thread-block clusters (a split needs them).
std::string reject_gemm_tunables(const GemmTunables& t, int max_shared, bool clusters);

/// The kernel of `k` (ShapeError for views it cannot take, ArgumentError for tunables that
/// cannot run).
KernelLaunch specialize_gemm(const GemmKernel& k, const std::string& stem, GemmTunables t = {});

namespace autotune {
/// The GEMM template's tile, warps and stages around `base`, the kernel the specializer chose
/// with its defaults (the wgmma path's bn, stages and split when it took that path; for an
/// exact f32 product, only what fits its stages).
Space gemm_space(const KernelLaunch& base);
}  // namespace autotune

}  // namespace kiln
