#pragma once
// Specialization of the row template (kernel_templates/kiln/rows.cuh): a row op over the last
// axis of `shape`, its input computed by a fused elementwise prologue.

#include <string>
#include <vector>

#include "engine/codegen.hpp"
#include "engine/elementwise.hpp"
#include "ops/op.hpp"

namespace kiln {

/// Specializes row op `op` over `shape` (the prologue's result shape): `prologue` (one
/// result) reads `inputs`; `extras` are the norms' weight and bias ([C]); `out` has the
/// op's result shape (one value per row for a reduction, keepdim or not).
KernelLaunch specialize_rows(const ops::OpDef& op, const codegen::Body& prologue, const std::string& stem,
                             const Shape& shape, const TensorView& out, const std::vector<TensorView>& inputs,
                             const std::vector<TensorView>& extras, std::vector<float> scalars, double eps);

}  // namespace kiln
