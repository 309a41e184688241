#pragma once
// Specialization of the row template (kernel_templates/kiln/rows.cuh): a row op over the last
// axis of `shape`, its input computed by a fused elementwise prologue and its result passed
// through a fused elementwise epilogue.

#include <string>
#include <vector>

#include "engine/codegen.hpp"
#include "engine/elementwise.hpp"
#include "ops/op.hpp"

namespace kiln {

/// The bodies and operands of one row kernel.
struct RowKernel {
  const ops::OpDef* op = nullptr;
  codegen::Body prologue;  ///< one result: the row op's input element
  codegen::Body epilogue;  ///< reads the row op's value (Ref::Kind::row); one result per output
  std::vector<TensorView> outputs;   ///< the epilogue's; a reduction has one, one value per row
  std::vector<TensorView> inputs;    ///< the prologue's
  std::vector<TensorView> extras;    ///< weight, bias ([C])
  std::vector<TensorView> epilogue_inputs;
  std::vector<float> scalars;           ///< the prologue's
  std::vector<float> epilogue_scalars;  ///< the epilogue's
  double eps = 1e-5;
};

/// The identity epilogue: the row op's value, stored as `dtype`.
codegen::Body identity_epilogue(DType dtype);

/// The heuristic threads per block for rows of `row_groups` vector groups: one per group, 32
/// to 512 (the tuner's default).
int default_row_block(std::int64_t row_groups);

/// Specializes `k` over `shape` (the prologue's result shape). Throws ShapeError for
/// outputs that do not fit.
KernelLaunch specialize_rows(const RowKernel& k, const std::string& stem, const Shape& shape);

}  // namespace kiln
