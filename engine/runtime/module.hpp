#pragma once
// A loaded module (cubin or PTX image) and the kernel function in it.

#include <cuda.h>

#include <array>
#include <memory>
#include <string>

namespace kiln::runtime {

struct ModuleDeleter {
  void operator()(CUmodule m) const;
};
using ModuleHandle = std::unique_ptr<std::remove_pointer_t<CUmodule>, ModuleDeleter>;

/// A module loaded into the current context, holding one kernel.
class Module {
 public:
  /// `image` is a cubin or NUL-terminated PTX; `lowered_name` the kernel's mangled name.
  Module(const std::string& image, const std::string& lowered_name, const std::string& kernel);

  CUfunction function() const { return function_; }
  int registers() const;
  /// Lets launches use up to `optin` bytes of shared memory per block (the device's opt-in
  /// limit) less the kernel's static shared memory; returns that dynamic allowance.
  unsigned allow_dynamic_shared(int optin);
  /// Launches on `stream` with `shared` bytes of dynamic shared memory, in thread-block clusters
  /// of `cluster` blocks if more than 1 (sm_90 and later; a kernel without compiled cluster
  /// dims); `args` as cuLaunchKernel wants them.
  void launch(unsigned grid, unsigned block, unsigned shared, CUstream stream, void** args,
              unsigned cluster = 1) const {
    launch({grid, 1, 1}, {block, 1, 1}, shared, stream, args, cluster);
  }
  /// The same with 3-D grid and block dims (x, y, z); clusters of `cluster` blocks along x.
  void launch(const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
              unsigned shared, CUstream stream, void** args, unsigned cluster = 1) const;

 private:
  ModuleHandle module_;
  CUfunction function_ = nullptr;
  std::string kernel_;
};

}  // namespace kiln::runtime
