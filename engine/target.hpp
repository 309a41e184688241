#pragma once
// What a kernel is specialized for: an arch and the limits of the GPU that runs it. The
// families read the shared memory a block may use and the SMs a launch must fill from here, so
// that an sm_86 engine never plans a tile that only an H100 can hold.

#include <string>
#include <vector>

namespace kiln {

struct Target {
  std::string arch;    ///< "sm_90a"
  int max_shared = 0;  ///< bytes of shared memory a block may use (opt-in)
  int sms = 0;         ///< multiprocessors: how many blocks fill the GPU
};

/// The limits of `arch`'s GPUs: the shared memory a block may use (sm_80 and sm_87 163 KB,
/// sm_86, sm_89 and sm_12x 99 KB, sm_90 and sm_10x 227 KB), and the SMs of its largest part (an
/// offline build plans for those). ArgumentError for a malformed arch.
Target target_of(const std::string& arch);

/// Whether a cubin built for `built` runs on a GPU that an engine targets as `device`, as the
/// driver has it: the same major, a minor no newer; an arch-specific one ("sm_90a") only on
/// its own arch.
bool runs_on(const std::string& built, const std::string& device);

/// The archs whose cubins run on `device` besides its own, nearest first (sm_89: sm_87, sm_86,
/// sm_80), among those a bundle is made for.
std::vector<std::string> older_compatible_archs(const std::string& device);

}  // namespace kiln
