#pragma once
// A matrix product's geometry as the GEMM template takes it: M, N, K, up to four batch dims,
// and per slot (outputs, a, b, bias, epilogue inputs) its address and strides along each.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/families/gemm/gemm.hpp"

namespace kiln {

constexpr std::size_t kGemmBatchDims = 4;  ///< gemm.cuh's kBatchDims
/// The most rows the skinny path (gemm_skinny.cuh) takes.
constexpr std::int64_t kSkinnyRows = 32;
/// The largest N and K it takes: its index sums (a tile count, K plus a batch of steps) stay
/// within int.
constexpr std::int64_t kSkinnyExtent = (std::int64_t(1) << 31) - 1024;

/// One pointer of the kernel and its strides in elements.
struct GemmSlot {
  std::uint64_t data = 0;
  std::size_t element = 1;  ///< bytes per element
  std::int64_t row = 0;     ///< along M (b: along K)
  std::int64_t col = 0;     ///< along N (a: along K)
  std::array<std::int64_t, kGemmBatchDims> batch{};
  /// An output's columns [lo, hi) of the product; `data` is where its column 0 would be, `offset`
  /// bytes from its tensor's address (lo columns before it).
  std::int64_t lo = 0, hi = 0;
  std::int64_t offset = 0;
};

/// How the template reads an operand (gemm.cuh's layout classes).
enum class GemmLayout { k_contiguous = 0, mn_contiguous = 1, strided = 2 };

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  std::array<std::int64_t, kGemmBatchDims> batch_ext{1, 1, 1, 1};
  std::int64_t batches = 1;
  std::vector<GemmSlot> slots;  ///< outputs, a, b, the bias if any, epilogue inputs
  GemmLayout a_layout = GemmLayout::strided, b_layout = GemmLayout::strided;
  std::size_t outputs = 0;
};

/// `k`'s geometry: batch dims merged where every slot allows it (into M first), each operand's
/// layout class. ShapeError naming `stem` when more than four batch dims remain or M, N or K
/// reach 2^31.
GemmProblem gemm_problem(const GemmKernel& k, const std::string& stem);

/// The kernel's parameter (gemm.cuh's Args<P, S>) for `p` with `scalars`.
std::vector<unsigned char> gemm_args(const GemmProblem& p, const std::vector<float>& scalars);

/// Columns per thread in the epilogue (gemm_epilogue.cuh's V): 8 where every output of `p` runs
/// contiguously along N and the bias and every epilogue input does or is constant along it, each
/// 16-byte aligned at every row and batch, with N and the outputs' column windows multiples of
/// 8; else 1.
int epilogue_columns(const GemmProblem& p);

/// `L`'s parameters for `p`: the Args block (its first parameter; `extra` more of 128 bytes,
/// the tensor maps), where each pointer sits in it, the pointers and `scalars`.
void set_gemm_params(KernelLaunch& L, const GemmProblem& p, const std::vector<float>& scalars,
                     std::size_t extra = 0);

/// Why `split` blocks of a cluster cannot split K ("" if they can); `clusters`: whether the
/// target runs thread-block clusters.
std::string reject_split(int split, bool clusters);

/// Whether the sm_90a path (gemm_sm90.cuh) computes `p` of `k`: sm_90a, f16 or bf16 with A
/// contiguous along K and B along K or N, or f32 with both along K (16-byte aligned), no batch,
/// nothing empty.
bool wgmma_fits(const GemmKernel& k, const GemmProblem& p);
/// Why `t` cannot run on the sm_90a path with `max_shared` bytes per block ("" if it can);
/// `exact`: an f32 product to 1e-5 (its stages hold twice the bytes); `b_trans`: B contiguous
/// along N (loaded 64 columns at a time).
std::string reject_wgmma_tunables(const GemmTunables& t, int max_shared, bool exact = false,
                                  bool b_trans = false);
/// Whether `p` of `k` takes the skinny path when no tunable says: `s` (its sizes or their
/// buckets') up to 8 rows, or up to kSkinnyRows of an f32 product (not TF32) whose B is small
/// (it is read once per 8 rows).
bool skinny_by_default(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s);
/// The kernel of the path for up to kSkinnyRows rows (gemm_skinny.cuh), its tile and split
/// chosen for `s`; `clusters`: whether the target runs thread-block clusters.
KernelLaunch specialize_skinny(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s,
                               const std::string& stem, GemmTunables t, bool clusters);

/// The width, split and stages of an f16 or bf16 product on gemm_sm90.cuh's block (a GEMM or a
/// convolution) with the least estimated time for `s`; `b_trans`: B contiguous along N (widths
/// that are multiples of 64 only).
GemmTunables wgmma_fit_tunables(const GemmSizing& s, bool b_trans);

/// Whether gemm_sm90.cuh's block stores `p`'s output through a tensor map (its Store): split 1,
/// one output of 2- or 4-byte elements whose rows are a matrix (V `columns` 8: 16-byte aligned,
/// contiguous along N; a convolution's images one run of rows, as pixel_rows_fit asks), no
/// `bias`, and no epilogue `inputs` unless they are `staged_inputs` (per column, in shared
/// memory: wgmma_column_slots). Read from the fragments' layout through L1, a thread would load
/// per-column operands two columns at a time where the staged walk loads eight, and on an H200 a
/// bias and GELU after a 4096^3 product ran 3.5 % slower that way, a batch norm after a
/// convolution 8 %, where plain products and a SiLU gained 1-7 % (bench/NOTES.md).
bool wgmma_store_fits(const GemmProblem& p, int columns, int split, bool bias, std::size_t inputs,
                      bool staged_inputs);
/// The per-column operands gemm_sm90.cuh's block stages in shared memory once a tile (its
/// Columns; the descriptors' `slots`): split 1, a `bias` and epilogue inputs all per column (a
/// batch norm's statistics, a scale and shift): the bias and the values `epilogue`'s per-column
/// math leaves (codegen::column_operands: a batch norm's scale and shift, computed as they are
/// staged), else 0. The epilogue then reads them there rather than from memory: the loads of a
/// scale and shift made a convolution's block 11 % longer than the same convolution with a SiLU
/// (bench/NOTES.md).
int wgmma_column_slots(const GemmProblem& p, int split, bool bias, const codegen::Body& epilogue);
/// The output's map for that store (parameter 3): its rows, a box of 64 rows and a chunk's columns.
TensorMapParam wgmma_store_map(const GemmProblem& p, DType out, int bn, const std::string& stem);

/// `L`'s launch on gemm_sm90.cuh's block for `p`: a block per 128 x `bn` tile (persistent, at
/// most one an SM, unless `split` blocks of a cluster split K), `shared` bytes, the Args block
/// with `scalars` and three tensor maps after it (the third encoded only where it stores).
void set_wgmma_launch(KernelLaunch& L, const GemmProblem& p, int bn, int split, int shared,
                      const std::vector<float>& scalars);

/// The kernel of the sm_90a path, its tunables resolved (bn, stages) for `s`.
KernelLaunch specialize_wgmma(const GemmKernel& k, const GemmProblem& p, const GemmSizing& s,
                              const std::string& stem, GemmTunables t);

}  // namespace kiln
