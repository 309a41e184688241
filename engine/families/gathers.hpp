#pragma once
// The slots of a kernel that reads gather views in place (kernel_templates/kiln/gather.cuh):
// each such slot reads its operand at the indices of an index tensor, whose slots, with the
// launch's status word, come after every slot of the family's own. The families whose
// templates read operands through kiln's InputPacks (elementwise, rows, columns, a view's copy)
// share this.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/codegen/launch.hpp"
#include "engine/codegen/layout.hpp"
#include "engine/families/family.hpp"

namespace kiln {

struct GatherSlots {
  GatherSlots();  ///< none, the status word's placeholder set
  struct Slot {
    std::size_t slot = 0;   ///< the gathering slot, among the family's own
    std::size_t index = 0;  ///< its index tensor, in `indices`
    std::int64_t stride = 0, extent = 0;  ///< the indexed axis of its operand
    /// A remap view's slot (ops::ViewRule::remap): the axes it reads at computed positions,
    /// rendered as kiln::Remap; its index tensor is a coordinate slot, never read.
    struct Axis {
      /// The coordinate: (offset / radix) % span (the next axis's radix over this one's; the
      /// result's extent for the last axis).
      std::int64_t radix = 1, span = 0;
      std::int64_t lo = 0, scale = 1;      ///< x's entry: (coordinate - lo) / scale
      std::int64_t stride = 0, x_extent = 0;
    };
    bool remapped = false;
    std::vector<Axis> remap;  ///< none for a pad of no margin: x read as it lies
    double fill = 0;
  };
  std::vector<Slot> slots;
  /// An output slot written at an offset moved `stride` elements per unit of its index tensor's
  /// one value, which must lie in [0, limit] (a slice_update's start given as a tensor).
  struct Scatter {
    std::size_t slot = 0, index = 0;
    std::int64_t stride = 0, limit = 0;
  };
  std::vector<Scatter> scatters;
  std::vector<TensorView> indices;  ///< each index tensor over the gather view's shape
  /// The status word's slot: an i64 scalar (its pointer is the plan's, bound at each run).
  TensorView status;
  bool wide = false;  ///< an operand read at indices reaches 2^31 elements: 64-bit offsets

  bool empty() const { return slots.empty() && scatters.empty(); }
  /// plan_layout of `views` (the family's own slots; the other arguments plan_layout's) with
  /// the index tensors and the status word after them, which it appends to `views` (the
  /// launch's pointers): a gathering slot's alignment is what its reads at indices keep, and
  /// offsets are 64-bit where an operand read at indices needs them. plan_layout alone where
  /// there are no slots.
  LayoutPlan plan(std::vector<const TensorView*>& views, std::size_t outputs, const Shape& shape,
                  bool rows, std::int64_t slack, const std::vector<bool>& reduced = {}) const;
  /// `lp`'s layout type, a kiln::Gathering of it where there are slots, for `own` slots.
  std::string layout_type(const LayoutPlan& lp, std::size_t own) const;
};

/// The gathering slots of `w`'s group, whose own slots (pointer_nodes but the index tensors
/// and the status word) read `views`, outputs first (`outputs` of them); none where it reads
/// no gather view in place. A gather view's copy reads its x (its input) at the indices.
GatherSlots gather_slots(const GroupWork& w, const std::vector<TensorView>& views,
                         std::size_t outputs);

}  // namespace kiln
