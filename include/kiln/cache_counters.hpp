#pragma once
/// \file
/// What an engine's kernel cache counted (Engine::counters): a vocabulary type of its own, so
/// that the cache (cache/) reports it without the engine's header.

#include <cstdint>

namespace kiln {

/// Counters of the kernel cache, for this engine.
struct CacheCounters {
  std::uint64_t compiles = 0;        ///< NVRTC compilations
  std::uint64_t memory_hits = 0;     ///< served from this process's memory
  std::uint64_t bundle_hits = 0;     ///< served from a bundle
  std::uint64_t disk_hits = 0;       ///< served from the disk cache
  std::uint64_t bad_entries = 0;     ///< corrupt entries found, removed and recompiled
  std::uint64_t remote_hits = 0;     ///< served from the remote cache (KILN_REMOTE_CACHE)
  std::uint64_t remote_misses = 0;   ///< asked of the remote cache, which had no entry
  std::uint64_t remote_refused = 0;  ///< remote entries that did not verify: never loaded
  std::uint64_t remote_errors = 0;   ///< remote calls that failed (the layer then backs off)
  /// Kernels this engine waited for while another machine compiled them (it held the lease):
  /// each then came as a remote hit, or, where none came in time, was compiled here.
  std::uint64_t remote_waits = 0;
  double compile_ms = 0;  ///< total NVRTC time
};

}  // namespace kiln
