#pragma once
// Products whose sizes a plan's dynamic dims set (a linear over a dynamic token count): M, N, K
// and the batches are the GEMM kernel's arguments, but its tile and split are chosen by size.
// A dynamic size chooses them by its bucket instead (powers of two up to kGemmTopBucket, then
// one bucket for every larger size), so a bounded set of kernels serves every extent, each
// listed by `kiln precompile` and picked at launch.

#include <cstdint>
#include <vector>

#include "engine/families/gemm/gemm.hpp"
#include "engine/families/gemm/gemm_problem.hpp"

namespace kiln {

/// The bucket every larger size shares.
constexpr std::int64_t kGemmTopBucket = std::int64_t(1) << 16;

/// The size `extent`'s bucket chooses kernels for: the power of two at or above it, at most
/// kGemmTopBucket (0 stays 0).
std::int64_t gemm_bucket(std::int64_t extent);

/// What `k`'s defaults are chosen for: `p`'s sizes, each that a dynamic dim sets in its bucket,
/// with the target's limits (the arch's where `k` gives none).
GemmSizing gemm_sizing(const GemmKernel& k, const GemmProblem& p);

/// Extents of a dynamic dim that reach every bucket of a size that is the extent times a
/// constant (M of x[?, 4, 768] is 4 times it): 1, 2, 4, ... past kGemmTopBucket.
std::vector<std::int64_t> gemm_bucket_probes();

}  // namespace kiln
