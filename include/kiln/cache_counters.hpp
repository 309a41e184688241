#pragma once
/// \file
/// What an engine's kernel cache counted (Engine::counters): a vocabulary type of its own, so
/// that the cache (cache/) reports it without the engine's header.

#include <cstdint>

namespace kiln {

/// Counters of the kernel cache, for this engine.
struct CacheCounters {
  std::uint64_t compiles = 0;     ///< NVRTC compilations
  std::uint64_t memory_hits = 0;  ///< served from this process's memory
  std::uint64_t bundle_hits = 0;  ///< served from a bundle
  std::uint64_t disk_hits = 0;    ///< served from the disk cache
  std::uint64_t bad_entries = 0;  ///< corrupt entries found, removed and recompiled
  double compile_ms = 0;          ///< total NVRTC time
};

}  // namespace kiln
