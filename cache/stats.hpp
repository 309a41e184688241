#pragma once
// Counts kept in a cache directory across processes, as `ccache -s` keeps its own: kernels
// served by the disk, a bundle or the remote, misses, compiles, bad entries found, the remote
// layer's misses, refusals, failed calls and waits. Each process adds what
// it did (KernelCache flushes after a compile and when it is destroyed); `kiln cache stats`
// shows the sums.

#include <cstdint>
#include <string>

namespace kiln::cache {

struct DirStats {
  std::uint64_t disk_hits = 0;
  std::uint64_t bundle_hits = 0;
  std::uint64_t misses = 0;  ///< lookups no persistent layer could serve
  std::uint64_t compiles = 0;
  std::uint64_t bad_entries = 0;
  std::uint64_t remote_hits = 0;     ///< kernels served by the remote layer (KILN_REMOTE_CACHE)
  std::uint64_t remote_misses = 0;   ///< remote lookups that found no entry
  std::uint64_t remote_refused = 0;  ///< remote entries and records that did not verify
  std::uint64_t remote_errors = 0;   ///< remote calls that failed (the layer then backed off)
  std::uint64_t remote_waits = 0;    ///< kernels waited for while another machine compiled them
  bool empty() const {
    return !disk_hits && !bundle_hits && !misses && !compiles && !bad_entries && !remote_hits &&
           !remote_misses && !remote_refused && !remote_errors && !remote_waits;
  }
  DirStats& operator+=(const DirStats& o);
};

/// The sums kept in `dir` (zeros when none are, or they cannot be read).
DirStats read_stats(const std::string& dir);

/// Adds `delta` to the sums kept in `dir` under a lock (other processes add theirs at the same
/// time). Best effort: false, and nothing changed, where the directory cannot be written.
bool add_stats(const std::string& dir, const DirStats& delta);

}  // namespace kiln::cache
