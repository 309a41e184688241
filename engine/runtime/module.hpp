#pragma once
// A loaded module (cubin or PTX image) and the kernel function in it.

#include <cuda.h>

#include <memory>
#include <string>

#include "stages/launch.hpp"

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
  /// Launches on `stream` through cuLaunchKernelEx (clusters are a launch attribute there);
  /// `args` as cuLaunchKernel wants them: a pointer to each parameter's bytes.
  void launch(const LaunchConfig& config, CUstream stream, void** args) const;

 private:
  ModuleHandle module_;
  CUfunction function_ = nullptr;
  std::string kernel_;
};

}  // namespace kiln::runtime
