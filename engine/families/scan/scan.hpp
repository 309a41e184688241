#pragma once
// Specialization of the scan template (kernel_templates/kiln/scan.cuh): an inclusive prefix sum
// along one axis, its input computed by a fused elementwise prologue and its result passed
// through a fused elementwise epilogue.

#include <cstdint>
#include <kiln/tensor.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cache/tuning.hpp"
#include "engine/codegen/autotune.hpp"
#include "engine/codegen/codegen.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/codegen/tunable_table.hpp"

namespace kiln {

/// The bodies and operands of one scan kernel.
struct ScanKernel {
  codegen::Body prologue;           ///< one result: the value each element adds
  codegen::Body epilogue;           ///< reads the running sum (Ref::Kind::row)
  std::vector<TensorView> outputs;  ///< the epilogue's, each of x's shape
  std::vector<TensorView> inputs;   ///< the prologue's, each broadcast to x's shape
  std::vector<TensorView> epilogue_inputs;
  std::vector<float> scalars;           ///< the prologue's
  std::vector<float> epilogue_scalars;  ///< the epilogue's
  Shape shape;                          ///< x's
  std::int64_t axis = -1;               ///< the axis summed along (negative: from the end)
  bool reverse = false;                 ///< suffix sums: from the axis's end
};

/// The template's parameters (scan.cuh's scan_rows), as the specialization chose them: one
/// instance, rendered by expression(), its kernel named by name(). Its tunables are fields
/// (block, items), declared once in scan_tunable_table().
struct ScanTemplate {
  static constexpr std::string_view kHeader = "scan.cuh";
  std::string layout;  ///< kiln::Layout<...>: the rows, the scanned axis last in groups of `vec`
  int vec = 1;
  bool index64 = false;
  int block = 256;          ///< threads per block (one row each)
  int items = 4;            ///< groups a thread takes per chunk of the row
  std::int64_t groups = 1;  ///< groups per row (IG)
  bool reverse = false;

  /// `kiln::scan_rows<kiln_body, kiln_epilogue, ...>`.
  std::string expression() const;
  /// "<stem>__scan2v4_rev", with "_b<block>i<items>" where `tuned` (not the default); `dims`
  /// the layout's.
  std::string name(std::string_view stem, std::size_t dims, bool tuned) const;
};

/// The scan template's tunables, once: specialize_scan parses by it, its launch records its
/// rows and autotune::scan_space() searches them.
const codegen::TunableTable<ScanTemplate>& scan_tunable_table();

/// The default block and items for rows of `groups` groups: a chunk of block * items groups
/// covers a row of up to 1024 groups at once (one barrier); longer rows take 256 x 4.
std::pair<int, int> default_scan_shape(std::int64_t groups);

/// `k`'s kernel with tunables `t` ("block", "items"; a missing one takes the default).
/// ArgumentError naming `stem` for another tunable, a value the template does not take, or
/// bodies that do not match the operands; ShapeError for an axis outside x.
KernelLaunch specialize_scan(const ScanKernel& k, const std::string& stem, const Tunables& t);

namespace autotune {
/// What `kiln tune` searches for a scan kernel: block and items.
Space scan_space(const Candidate& fallback);
}  // namespace autotune

}  // namespace kiln
