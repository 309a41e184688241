#pragma once
// Programmatic dependent launch (sm_90 and later): a kernel launched with it (the host's
// LaunchConfig::programmatic) may start while the kernel before it on the stream still runs, so
// its launch and prologue overlap that kernel's last blocks. Such a kernel calls
// wait_for_previous_grid() before its first global load or store; launched without it, both
// calls do nothing.

namespace kiln {

/// Waits until the kernel before this one has finished and its writes are visible.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the kernel after this one start its blocks (they still wait for this one to finish
/// before touching memory).
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace kiln
