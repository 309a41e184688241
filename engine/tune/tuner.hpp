#pragma once
// Tuning a graph's kernels on this machine's GPU (`kiln tune`): every candidate of a kernel's
// space is compiled in parallel into the cache, run on random inputs, checked against the
// default's output (autotune::tune discards one that differs) and timed with events, the
// inputs rotated through enough copies that no run finds them in L2. The winner becomes a
// tuning record for this GPU.

#include <chrono>
#include <cstdint>
#include <functional>
#include <kiln/engine.hpp>
#include <kiln/graph.hpp>
#include <kiln/tune.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cache/tuning.hpp"
#include "engine/codegen/autotune.hpp"
#include "engine/passes/fusion.hpp"

namespace kiln::autotune {

struct KernelTuning;

struct TuneOptions {
  int warmup = 3;
  int reps = 20;  ///< events per candidate; the median counts
  /// No kernel starts after this (none: no limit).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// Called before each candidate runs: the kernel, the candidate's index (0: the default) and
  /// how many there are.
  std::function<void(const std::string& kernel, int candidate, int candidates)> progress;
  /// Called when a kernel is done (tune_and_record): its tuning, the record saved.
  std::function<void(const KernelTuning&)> done;
};

/// What tuning one kernel of a plan did.
struct KernelTuning {
  std::string kernel;            ///< the default kernel's name
  std::vector<std::string> ops;  ///< the graph nodes it fused
  int candidates = 0;            ///< those the device can launch, the default included
  std::string skipped;           ///< why it was not tuned ("" when it was)
  Result result;                 ///< times and the log of every candidate, when tuned
  cache::TuningRecord record;    ///< when tuned
};

/// Tunes every kernel of `graph`'s plan on `engine`'s GPU (CudaError offline). Tuning needs
/// exact shapes: GraphError if a dim is dynamic. A kernel whose signature is in `done` is
/// skipped (a graph seen before); each one tuned is added.
std::vector<KernelTuning> tune_graph(Engine& engine, const Graph& graph, const TuneOptions& options,
                                     std::set<std::string>& done);

/// tune_graph over `graphs` (a kernel two graphs share is tuned once), each tuned kernel's
/// record put in `db` and saved to `dir` at once.
std::vector<KernelTuning> tune_and_record(Engine& engine, const std::vector<Graph>& graphs,
                                          const TuneOptions& options, cache::TuningDb& db,
                                          const std::string& dir);

/// One kernel of a plan timed alone.
struct KernelTiming {
  std::string kernel;
  std::vector<std::string> ops;  ///< the graph nodes it fused
  double us = 0;                 ///< median of events (0: no work)
  std::int64_t bytes = 0;        ///< what one run reads (each value once) and writes
};

/// Times each kernel of `graph`'s plan (fused or not) alone, as Plan::run specializes it
/// (this GPU's tuning records applied), on random inputs rotated so that no run finds them in
/// L2, `options.reps` events after `options.warmup`. CudaError offline; GraphError if a dim is
/// dynamic.
std::vector<KernelTiming> time_kernels(Engine& engine, const Graph& graph, bool fuse,
                                       const TuneOptions& options);

/// `n` random values of dtype `t` from `seed`: uniform in [-3, 3]; bool: 0 or 1.
std::vector<unsigned char> random_host(DType t, std::int64_t n, std::uint64_t seed);

/// The largest difference of two outputs of dtype `t`, relative to max(|a|, 1, the mean |a| of
/// the output): a sum's result near 0 errs like its neighbours, by a fraction of the terms'
/// size, not of its own. A NaN on one side only (or a size mismatch) is infinite, NaN on both
/// sides agrees.
double max_diff(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, DType t);

/// How far a candidate's output may be from the default's: the sums run in another order, so
/// about one rounding of `t` (f32 1e-4, f16 2e-3, bf16 1e-2; bool exact). A kernel may allow
/// more (KernelLaunch::agreement: a long f32 product); the tuner takes the larger.
double agreement_tolerance(DType t);

/// What the tuner compares a candidate's outputs (`grp`'s, of `graph`, back to back) with the
/// default's by: each output within the larger of agreement_tolerance and `allowed` (the
/// default kernel's KernelLaunch::agreement); "" or how the first differing one differs.
Agree agreement(const Graph& graph, const FusedGroup& grp, double allowed);

}  // namespace kiln::autotune
