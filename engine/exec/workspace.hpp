#pragma once
// Launch workspaces (KernelLaunch::workspace): scratch memory a kernel takes as its last pointer,
// for blocks that merge their parts through global memory (counters and partial results). Each
// launch of a prepared call has a part of its own, zeroed once when allocated; the kernel
// leaves it as its next launch expects, so later calls and graph replays reuse it as is. Like
// the plan's arena of intermediates, it serves one call of the signature in flight at a time.

#include <cstdint>
#include <kiln/engine.hpp>
#include <kiln/tensor.hpp>

#include "engine/exec/prepared_call.hpp"

namespace kiln::detail {

/// Gives each launch of `call` that takes a workspace its part of the call's (allocated and
/// zeroed at the first call on `engine`) and writes its pointer, the launch's last, once: later
/// calls return at once.
void bind_workspace(PreparedCall& call, Engine& engine);

/// A workspace of `bytes` for one launch outside a prepared call (a tuning candidate's), zero;
/// an empty Tensor for 0 bytes.
Tensor zeroed_workspace(Engine& engine, std::uint64_t bytes);

}  // namespace kiln::detail
