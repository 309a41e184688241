// The public op functions: check the operands, specialize, prepare (cache or compile), launch.
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/elementwise.hpp"
#include "engine/engine_impl.hpp"
#include "engine/fusion.hpp"
#include "ops/op.hpp"

namespace kiln {
namespace {


void check_operands(const ops::OpDef& op, const std::vector<Operand>& args, bool need_data) {
  for (std::size_t i = 0; i < args.size() && i < op.operands.size(); ++i)
    if (auto* v = std::get_if<TensorView>(&args[i])) check_view(*v, fmt::format("{}: {}", op.name, op.operands[i]), need_data);
}

KernelLaunch specialize(const ops::OpDef& op, const TensorView& out, const std::vector<Operand>& args,
                             const Attrs& attrs) {
  return specialize_op(op, out, ops::kernel_operands(op, args, attrs));
}

}  // namespace

TensorView infer(std::string_view name, const std::vector<Operand>& args, const Attrs& attrs) {
  return ops::infer_result(ops::find_op(name), args, attrs);
}

Tensor call(Engine& engine, std::string_view name, const std::vector<Operand>& args, const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  const TensorView r = ops::infer_result(op, args, attrs);
  check_operands(op, args, true);
  Tensor out = engine.empty(r.shape, r.dtype);
  call_into(engine, name, out, args, attrs);
  return out;
}

namespace {

// A row op as a one-node graph, so eager calls and plans share one path.
Graph row_graph(const ops::OpDef& op, const std::vector<Operand>& args, const Attrs& attrs,
                std::map<std::string, TensorView>* inputs) {
  Graph g;
  std::vector<GraphArg> gargs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto* v = std::get_if<TensorView>(&args[i]);
    if (!v) throw ArgumentError(fmt::format("{}: operand {} must be a tensor", op.name, op.operands[i]));
    const std::string name(op.operands[i]);
    gargs.push_back(g.input(name, v->shape, v->dtype));
    if (inputs) (*inputs)[name] = *v;
  }
  g.output(g.add(op.name, gargs, attrs, "out"));
  return g;
}

}  // namespace

void call_into(Engine& engine, std::string_view name, const TensorView& out, const std::vector<Operand>& args,
               const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  const TensorView r = ops::infer_result(op, args, attrs);
  if (out.shape != r.shape)
    throw ShapeError(fmt::format("{}: output {} does not have the result shape {}", name, out.describe(), to_string(r.shape)));
  if (out.dtype != r.dtype)
    throw DtypeError(fmt::format("{}: output {} does not have the result dtype {}", name, out.describe(), name_of(r.dtype)));
  check_operands(op, args, true);
  check_view(out, fmt::format("{}: output", op.name));
  engine.impl().require_device(fmt::format("running {}", name).c_str());
  if (op.fusion == ops::FusionClass::row) {
    std::map<std::string, TensorView> inputs;
    const Graph g = row_graph(op, args, attrs, &inputs);
    Plan(g, true).run(engine, inputs, {{"out", out}});
    return;
  }

  engine.impl().launch_kernel(specialize(op, out, args, attrs));
}

KernelRecord precompile(Engine& engine, std::string_view name, const std::vector<Operand>& args, const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  const TensorView out = ops::infer_result(op, args, attrs);
  check_operands(op, args, false);
  if (op.fusion == ops::FusionClass::row) {
    std::string source;
    KernelRecord r = engine.impl().records[engine.impl().prepare(plan_specs(row_graph(op, args, attrs, nullptr), true, {}, nullptr, engine.arch()).at(0), &source).record];
    r.source = source;
    return r;
  }
  const KernelLaunch L = specialize(op, out, args, attrs);
  if (L.groups == 0) throw ShapeError(fmt::format("{}: the result {} is empty; there is no kernel to compile", name, out.describe()));
  std::string source;
  KernelRecord r = engine.impl().records[engine.impl().prepare(L.spec, &source).record];
  r.source = source;
  return r;
}

}  // namespace kiln
