#pragma once
// The memory planner: the values one kernel of a plan writes and a later one reads (not graph
// outputs) get offsets in one arena, by liveness: a value lives from the kernel that writes it
// to the last kernel that reads it (or reads a view of it), and values whose lives overlap never
// share bytes. A view that shares its operand's memory (view_aliases) has no bytes of its own.

#include <cstdint>
#include <kiln/graph.hpp>
#include <vector>

#include "engine/passes/fusion.hpp"

namespace kiln {

struct ArenaPlan {
  static constexpr std::int64_t kAlign = 256;  ///< every offset: keeps 16-byte packs possible
  std::vector<std::int64_t> offset;            ///< per node id; -1 if the value is not in the arena
  std::vector<std::int64_t> size;  ///< per node id: its bytes rounded up to kAlign (0 if not)
  std::vector<int> first, last;    ///< per node id: the kernels writing it and last reading it
  std::int64_t bytes = 0;          ///< the arena's size
  std::int64_t unshared = 0;       ///< what one buffer per value would take
  int values = 0;
};

/// Plans the arena of `groups` (in launch order) over `graph`'s static shapes.
ArenaPlan plan_arena(const Graph& graph, const std::vector<FusedGroup>& groups);

}  // namespace kiln
