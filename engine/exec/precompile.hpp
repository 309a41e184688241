#pragma once
// Compiling a manifest without a GPU: every spec for every arch, on a thread pool of NVRTC
// programs, into the cache's persistent layers. A kernel found in a bundle or on disk counts
// as cached; one compiled but not saved where the cache has a directory (read-only, not a
// directory, full) as failed; a cache made without one compiles into memory by choice. One failure
// does not stop the others.

#include <functional>
#include <string>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "stages/kernel.hpp"

namespace kiln {

struct PrecompileOptions {
  std::vector<std::string> archs;  ///< e.g. {"sm_80", "sm_90a"}
  int jobs = 0;                    ///< threads; 0 = one per core
  int shard_index = 0;  ///< this machine's share: items i with i % shard_count == shard_index
  int shard_count = 1;
  /// Also publish to the cache's remote layer the kernels found in a local layer (compiled
  /// ones are published by the cache itself): a build farm fills the fleet's cache.
  bool publish_cached = false;
};

struct PrecompileItem {
  std::string name;
  std::string arch;
  std::string status;  ///< "compiled", "cached" or "failed"
  std::string error;   ///< the first line of the error, when failed
  double ms = 0;
  std::string message;  ///< the whole error message, when failed
  std::string log;      ///< NVRTC's log, when NVRTC rejected the kernel
};

struct PrecompileSummary {
  int compiled = 0;
  int cached = 0;
  int failed = 0;
  int total = 0;
  double seconds = 0;
  std::vector<PrecompileItem> failures;
};

/// One kernel to compile: a spec and the arch it is for.
struct PrecompileWork {
  KernelSpec spec;
  std::string arch;
};

using PrecompileProgress = std::function<void(int done, int total, const PrecompileItem&)>;

/// Compiles `specs` x `options.archs` (this shard's share) into `cache`. `progress` is called
/// after each item, from one thread at a time, with the count done so far and the total.
PrecompileSummary precompile_specs(const std::vector<KernelSpec>& specs,
                                   const PrecompileOptions& options, cache::KernelCache& cache,
                                   const PrecompileProgress& progress = {});

/// Compiles `work` (this shard's share; `options.archs` unused: each item names its arch) into
/// `cache`, as precompile_specs.
PrecompileSummary precompile_work(const std::vector<PrecompileWork>& work,
                                  const PrecompileOptions& options, cache::KernelCache& cache,
                                  const PrecompileProgress& progress = {});

}  // namespace kiln
