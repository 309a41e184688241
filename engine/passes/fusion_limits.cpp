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
  std::size_t tensors = outputs.size();
  for (int in : epi.inputs) tensors += in != host && in != reads ? 1 : 0;
  return tensors <= r.epilogue_tensors && scalars_of(g, epi.steps) <= r.epilogue_scalars;
}

std::size_t scalars_of(const Graph& g, const std::vector<int>& steps) {
  std::size_t n = 0;
  for (int id : steps) {
    const Graph::Node& node = g.node(id);
    for (const auto& a : node.args) n += std::holds_alternative<double>(a) ? 1 : 0;
    n += ops::attr_scalars(op_def(g, node.op), node.attrs).size();
  }
  return n;
}

}  // namespace kiln::fusion
