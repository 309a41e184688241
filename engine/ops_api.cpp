// The public op functions: check the operands, specialize, prepare (cache or compile), launch.
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <kiln/ops.hpp>

#include "engine/elementwise.hpp"
#include "engine/engine_impl.hpp"
#include "ops/op.hpp"

namespace kiln {
namespace {

void check_view(const ops::OpDef& op, const TensorView& v, std::string_view role, bool need_data) {
  if (!v.strides.empty() && v.strides.size() != v.shape.size())
    throw ShapeError(fmt::format("{}: {} {} has {} strides for {} dims", op.name, role, v.describe(), v.strides.size(), v.shape.size()));
  if (need_data && v.data == 0 && numel_of(v.shape) > 0)
    throw ArgumentError(fmt::format("{}: {} {} has a null data pointer", op.name, role, v.describe()));
  if (v.data % size_of(v.dtype) != 0)
    throw ArgumentError(fmt::format("{}: {} {} at 0x{:x} is not aligned to its {}-byte elements", op.name, role,
                                    v.describe(), v.data, size_of(v.dtype)));
}

void check_operands(const ops::OpDef& op, const std::vector<Operand>& args, bool need_data) {
  for (std::size_t i = 0; i < args.size() && i < op.operands.size(); ++i)
    if (auto* v = std::get_if<TensorView>(&args[i])) check_view(op, *v, op.operands[i], need_data);
}

ElementwiseLaunch specialize(const ops::OpDef& op, const TensorView& out, const std::vector<Operand>& args,
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

void call_into(Engine& engine, std::string_view name, const TensorView& out, const std::vector<Operand>& args,
               const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  const TensorView r = ops::infer_result(op, args, attrs);
  if (out.shape != r.shape)
    throw ShapeError(fmt::format("{}: output {} does not have the result shape {}", name, out.describe(), to_string(r.shape)));
  if (out.dtype != r.dtype)
    throw DtypeError(fmt::format("{}: output {} does not have the result dtype {}", name, out.describe(), name_of(r.dtype)));
  check_operands(op, args, true);
  check_view(op, out, "output", true);
  engine.impl().require_device(fmt::format("running {}", name).c_str());

  engine.impl().launch_elementwise(specialize(op, out, args, attrs));
}

KernelRecord precompile(Engine& engine, std::string_view name, const std::vector<Operand>& args, const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  const TensorView out = ops::infer_result(op, args, attrs);
  check_operands(op, args, false);
  const ElementwiseLaunch L = specialize(op, out, args, attrs);
  if (L.groups == 0) throw ShapeError(fmt::format("{}: the result {} is empty; there is no kernel to compile", name, out.describe()));
  std::string source;
  KernelRecord r = engine.impl().records[engine.impl().prepare(L.spec, &source).record];
  r.source = source;
  return r;
}

}  // namespace kiln
