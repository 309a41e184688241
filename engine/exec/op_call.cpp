#include "engine/exec/op_call.hpp"

#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/family.hpp"

namespace kiln {

OpCall op_call(const ops::OpDef& op, const TensorView& out, const std::vector<Operand>& args,
               const Attrs& attrs) {
  OpCall c;
  std::vector<GraphArg> gargs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const auto* v = std::get_if<TensorView>(&args[i])) {
      gargs.push_back(c.graph.input(std::string(op.operands.at(i)), v->shape, v->dtype));
      c.values.push_back(*v);
    } else {
      gargs.push_back(std::get<double>(args[i]));
    }
  }
  c.graph.output(c.graph.add(op.name, gargs, attrs, "out"));
  c.values.push_back(out);
  std::vector<FusedGroup> groups = fuse(c.graph, true);
  if (groups.size() != 1)
    throw Error(
        fmt::format("internal error: a call of {} fused into {} kernels", op.name, groups.size()));
  analyze_groups(c.graph, groups);
  c.group = std::move(groups[0]);
  return c;
}

KernelLaunch specialize_call(const OpCall& call, const Target& target,
                             const Tunables& tunables) {
  return specialize_group({call.group, call.values, call.graph, call.graph, target}, tunables);
}

KernelLaunch specialize_call(const OpCall& call, const Target& target,
                             const cache::TuningDb& records) {
  return specialize_tuned({call.group, call.values, call.graph, call.graph, target}, records);
}

}  // namespace kiln
