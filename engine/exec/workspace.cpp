#include "engine/exec/workspace.hpp"

namespace kiln::detail {

namespace {

// Each part from a 256-byte boundary, as allocations are.
std::uint64_t aligned(std::uint64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

Tensor zeroed_workspace(Engine& engine, std::uint64_t bytes) {
  if (bytes == 0) return Tensor();
  Tensor t = engine.empty({std::int64_t(aligned(bytes) / 8)}, DType::i64);
  t.fill_bytes(0);
  return t;
}

void bind_workspace(PreparedCall& call, Engine& engine) {
  if (call.workspace_bound) return;  // the pointers stay in the launches' parameters
  std::uint64_t total = 0;
  for (PreparedCall::Launch& l : call.launches) {
    l.workspace_at = total;
    total += aligned(l.launch.workspace);
  }
  call.workspace = zeroed_workspace(engine, total);
  for (PreparedCall::Launch& l : call.launches)
    if (l.launch.workspace != 0)
      l.params->set_pointer(l.launch.pointers.size() - 1,
                            call.workspace.view().data + l.workspace_at);
  call.workspace_bound = true;
}

}  // namespace kiln::detail
