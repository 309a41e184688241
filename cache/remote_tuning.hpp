#pragma once
// Tuning records shared by a fleet through the remote layer: one Redis hash per GPU name,
// kiln:v<format>:tuning:<GPU name>, a field per kernel signature holding that record (a
// TuningDb's JSON with one record, signed like entries where KILN_REMOTE_CACHE_KEY is set),
// and a field us:<signature> holding its measured time. For one kernel and one GPU name the
// faster record wins, atomically on the server. An engine takes the remote records of its GPU
// for the kernels its local file has none for; a record that does not verify is refused.

#include <string>

#include "cache/kernel_cache.hpp"
#include "cache/remote.hpp"
#include "cache/tuning.hpp"

namespace kiln::cache {

/// The Redis key of a GPU's shared records.
std::string remote_tuning_key(const std::string& gpu);

/// Publishes `r` (signed with the remote's key, if any) unless the remote holds a record of the
/// same kernel and GPU measured at least as fast. True where it was stored; false where a faster
/// one stays or the call failed (the layer then backs off).
bool publish_tuning(RemoteCache& remote, const TuningRecord& r);

struct RemoteTuning {
  TuningDb records{""};     ///< those of the GPU that verify
  std::size_t refused = 0;  ///< records that did not (unsigned or badly signed, malformed,
                            ///< another GPU's or kernel's): never used, each logged
  bool reached = false;     ///< the remote answered
};
/// The remote's records of `gpu`, in one round trip (HGETALL), verified.
RemoteTuning fetch_tuning(RemoteCache& remote, const std::string& gpu);

/// Adds to `local` the records of `remote` for kernels it has none for; returns how many.
std::size_t fill_missing(TuningDb& local, const TuningDb& remote);

/// The records an engine on `gpu` uses: those of its file in `dir` (one that cannot be read or
/// parsed costs a warning, never a run), then, where `cache` has a remote layer, the remote's
/// records of `gpu` for the kernels the file has none for (refusals counted in `cache`).
TuningDb tuning_records(const std::string& dir, const std::string& gpu, KernelCache& cache);

}  // namespace kiln::cache
