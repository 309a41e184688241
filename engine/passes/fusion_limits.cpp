// What an anchor's kernel can take of what would fuse into it (ops::FusionRoles limits).
#include <limits>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln::fusion {

bool epilogue_fits(const Graph& g, int host, const std::vector<int>& outputs, int reads) {
  const ops::FusionRoles& r = roles(g, host);
  constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
  if (g.node(host).shape.size() > r.epilogue_rank) return false;
  if (r.epilogue_tensors == kAny && r.epilogue_scalars == kAny) return true;
  FusedGroup epi;
  collect(g, outputs, {}, epi);
  std::size_t tensors = outputs.size(), scalars = 0;
  for (int in : epi.inputs) tensors += in != host && in != reads ? 1 : 0;
  for (int id : epi.steps) {
    const Graph::Node& n = g.node(id);
    for (const auto& a : n.args) scalars += std::holds_alternative<double>(a) ? 1 : 0;
    scalars += ops::attr_scalars(op_def(g, n.op), n.attrs).size();
  }
  return tensors <= r.epilogue_tensors && scalars <= r.epilogue_scalars;
}

}  // namespace kiln::fusion
