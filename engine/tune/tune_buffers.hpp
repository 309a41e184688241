#pragma once
// What a tuning run measures a kernel on (engine/tune/tuner.cpp): random operands, several sets
// of them, and for a kernel that reads gather views their operands with indices in range.

#include <cstdint>
#include <kiln/engine.hpp>
#include <kiln/tensor.hpp>
#include <vector>

#include "engine/exec/plan_impl.hpp"
#include "engine/passes/fusion.hpp"

namespace kiln::autotune {

// A kernel's operands, `sets` times over: each set's views hold the same random inputs, and
// timing runs cycle through the sets so that each run reads memory no earlier run left in L2.
struct Buffers {
  std::vector<std::vector<TensorView>> values;  // per set, indexed by node id like the plan's
  std::vector<Tensor> tensors;
  std::vector<Tensor> checked;  // set 0's outputs, in the group's order
  std::int64_t bytes = 0;       // one run's reads (each value once) and writes
  Tensor status;                // a kernel that gathers: its status word (zero)
};

/// `grp`'s operands (random, of `p`'s shapes; each index tensor's values within the axis its
/// gather reads) and outputs, in enough sets that cycling through them keeps each run's reads
/// out of an L2 of `l2_bytes`. Each buffer is laid out as `planned` (the plan's views, by node)
/// lays out its value where that is dense in some order of its dims (a channels_last view read
/// in place, a channels_last result), else row-major.
Buffers make_buffers(Engine& engine, const detail::PlanImpl& p, const FusedGroup& grp,
                     int l2_bytes, const std::vector<TensorView>& planned);

}  // namespace kiln::autotune
