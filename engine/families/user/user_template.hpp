#pragma once
// Users' templates (include/kiln/template.hpp): a call's arguments and tunables turned into the
// kernel's spec (the template and its headers as the spec's own, keyed by their bytes), its
// launch dims from the template's rule, and its parameter bytes.

#include <array>
#include <kiln/template.hpp>
#include <string>
#include <vector>

#include "stages/kernel.hpp"
#include "stages/launch.hpp"

namespace kiln {

struct UserLaunch {
  KernelSpec spec;
  LaunchConfig config;  ///< grid (a 0: nothing to launch, an empty tensor), block, shared bytes
  Tunables tunables;    ///< every tunable's value, defaults included
  /// Each parameter's bytes, in order (cuLaunchKernel takes a pointer to each).
  std::vector<std::vector<unsigned char>> params;
  /// The tensor map parameters (TensorMapArg::pointer: the parameter's index too), their bytes
  /// in `params` zero until a launch encodes them at their tensor's address.
  std::vector<TensorMapArg> maps;
};

/// `t` called on `args` with `tunables` (`need_data`: the views must point at memory).
/// ArgumentError naming the template and the parameter
/// for arguments that do not match its parameters (count, tensor or number, a fractional or out
/// of range integer, a view that is not contiguous), an unknown tunable, an instance that does
/// not render, or launch dims that are not whole numbers or exceed the CUDA limits.
UserLaunch specialize_template(const Template& t, const std::vector<Operand>& args,
                               const Tunables& tunables, bool need_data);

/// Writes `args` into `L.params` (their pointers and scalars; a tensor map's bytes zero: launches
/// encode it): at specialization, and again for a call whose signature matched that one.
void pack_params(const Template& t, const std::vector<Operand>& args, UserLaunch& L);

}  // namespace kiln
