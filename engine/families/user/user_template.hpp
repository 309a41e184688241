#pragma once
// Users' templates (include/kiln/template.hpp): a call's arguments and tunables turned into the
// kernel's spec (the template and its headers as the spec's own, keyed by their bytes), its
// launch dims from the template's rule, and its parameters in the generic layout (one
// parameter per template parameter).

#include <kiln/template.hpp>
#include <string>
#include <vector>

#include "engine/codegen/launch.hpp"

namespace kiln {

/// `t` called on `args` with `tunables` (`need_data`: the views must point at memory): its
/// spec, launch dims (a 0 in the grid: nothing to launch, an empty tensor), tunables (defaults
/// included) and parameters, one per template parameter in order. Its pointers are the output
/// parameter's, then every other tensor's in order; its runtime scalars the f32 and f64
/// parameters' in order (integers pick the kernel, so a launch never writes them again); a tensor
/// map's bytes are encoded at launch. ArgumentError naming the template and the parameter
/// for arguments that do not match its parameters (count, tensor or number, a fractional or out
/// of range integer, a view that is not contiguous), an unknown tunable, an instance that does
/// not render, or launch dims that are not whole numbers or exceed the CUDA limits.
KernelLaunch specialize_template(const Template& t, const std::vector<Operand>& args,
                                 const Tunables& tunables, bool need_data);

/// Writes a call's `args` into `p` (a launch of specialize_template of `t` on arguments with the
/// same signature): its pointers and runtime scalars, in specialize_template's order.
void set_template_args(const Template& t, const std::vector<Operand>& args, LaunchParams& p);

}  // namespace kiln
