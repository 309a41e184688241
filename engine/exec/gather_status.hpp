#pragma once
// The status words of kernels that gather (kernel_templates/kiln/gather.cuh): an index outside
// its axis reads entry 0 and reports itself there; after a call's kernels, the host reads the
// words and raises an ArgumentError naming the op, the index and the axis. Under a CUDA graph
// capture (torch.compile, a caller's graph) nothing may wait for the host: the words are not
// read then, and a report stays until the next call that reads them.

#include <kiln/engine.hpp>
#include <kiln/graph.hpp>

#include "engine/exec/prepared_call.hpp"
#include "engine/passes/fusion.hpp"

namespace kiln::detail {

/// What `grp`'s kernel reports name, for its launch `l` (the gathers of `bound`'s group), and
/// its status word's index in `call` (counted there).
void describe_gathers(const Graph& bound, const FusedGroup& grp,
                      const std::vector<TensorView>& values, PreparedCall& call,
                      PreparedCall::Launch& l);

/// Gives each launch of `call` that gathers its status word (allocated and zeroed at the
/// first call on `engine`) and writes its pointer.
void bind_status(PreparedCall& call, Engine& engine);

/// After `call`'s kernels were queued on `stream`: waits for them and raises an ArgumentError
/// for the first report of the first launch that has one (zeroing the words again), unless
/// `stream` is capturing a graph.
void check_status(PreparedCall& call, CUstream stream);

}  // namespace kiln::detail
