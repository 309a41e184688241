// The public op functions: check the operands, specialize, prepare (cache or compile), launch.
#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <kiln/op_schema.hpp>
#include <kiln/ops.hpp>
#include <memory>
#include <mutex>

#include "engine/exec/engine_impl.hpp"
#include "engine/exec/gather_status.hpp"
#include "engine/exec/workspace.hpp"
#include "engine/exec/op_call.hpp"
#include "engine/exec/prepared_call.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/nvtx.hpp"
#include "ops/op.hpp"

namespace kiln {
namespace {

void check_operands(const ops::OpDef& op, const std::vector<Operand>& args, bool need_data) {
  for (std::size_t i = 0; i < args.size() && i < op.operands.size(); ++i)
    if (auto* v = std::get_if<TensorView>(&args[i]); v && !view_ok(*v, need_data))
      check_view(*v, fmt::format("{}: {}", op.name, op.operands[i]), need_data);
}

// An op whose result is its operand's memory, or is written by its operands' kernels, runs in
// a plan, not as a call with an output.
void refuse_in_place(const ops::OpDef& op) {
  if (op.fusion.in_place)
    throw ArgumentError(fmt::format("{} writes into its first operand's memory: it runs in a plan "
                                    "(kiln::Plan), whose later nodes read its result",
                                    op.name));
  if (op.fusion.parts)
    throw ArgumentError(fmt::format("{} is written by one kernel per operand: it runs in a plan "
                                    "(kiln::Plan)",
                                    op.name));
}

}  // namespace

TensorView infer(std::string_view name, const std::vector<Operand>& args, const Attrs& attrs) {
  return ops::infer_result(ops::find_op(name), args, attrs);
}

Tensor call(Engine& engine, std::string_view name, const std::vector<Operand>& args,
            const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  refuse_in_place(op);
  const TensorView r = ops::infer_result(op, args, attrs);
  check_operands(op, args, true);
  Tensor out = engine.empty(r.shape, r.dtype);
  call_into(engine, name, out, args, attrs);
  return out;
}

namespace {

void add_attr_value(detail::Signature& s, bool v) { s.add(v); }
void add_attr_value(detail::Signature& s, std::int64_t v) { s.add(v); }
void add_attr_value(detail::Signature& s, double v) {
  std::int64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  s.add(bits);
}
void add_attr_value(detail::Signature& s, std::string_view v) {
  s.add(std::int64_t(v.size()));
  for (char c : v) s.add(c);
}
void add_attr_value(detail::Signature& s, const std::vector<std::int64_t>& v) {
  s.add(std::int64_t(v.size()));
  for (std::int64_t d : v) s.add(d);
}

// The op, its attributes, the output and every operand: what picks the kernel (scalars' values
// do not: they are the kernel's arguments).
detail::Signature op_signature(const ops::OpDef& op, const TensorView& out,
                               const std::vector<Operand>& args, const Attrs& attrs) {
  detail::Signature s;
  s.add(std::int64_t(detail::CallKind::op));
  s.add(std::int64_t(reinterpret_cast<std::uintptr_t>(&op)));
  // Each attribute it sets: its name, its value's alternative and the value (every attribute,
  // so that one outside the op's schema reaches infer_result's refusal on a later call too).
  // A flag set to false is left out, as attr_values leaves it out ({keepdim: false} is {}).
  for (const auto& [name, v] : attrs.values()) {
    if (std::holds_alternative<bool>(v) && !std::get<bool>(v)) continue;
    add_attr_value(s, std::string_view(name));
    s.add(std::int64_t(v.index()));
    std::visit([&](const auto& x) { add_attr_value(s, x); }, v);
  }
  s.add_view(out);
  for (const Operand& a : args) {
    if (auto* v = std::get_if<TensorView>(&a))
      s.add_view(*v);
    else
      s.add(INT64_MIN + 1);  // a scalar
  }
  return s;
}

// The call's kernel, loaded, and its parameters (no launch when it has no work).
std::shared_ptr<detail::PreparedCall> prepare_op(Engine& engine, const ops::OpDef& op,
                                                 const TensorView& out,
                                                 const std::vector<Operand>& args,
                                                 const Attrs& attrs) {
  auto p = std::make_shared<detail::PreparedCall>();
  const OpCall c = op_call(op, out, args, attrs);
  KernelLaunch L =
      specialize_call(c, detail::impl_of(engine).target, detail::impl_of(engine).tuning);
  if (L.groups == 0 || L.config.empty()) return p;
  const detail::LoadedKernel& k = detail::impl_of(engine).prepare(L.spec);
  const LaunchConfig config = k.config_for(L);
  p->launches.push_back(detail::prepared_launch(std::move(L), k, config));
  if (!c.group.index_inputs.empty()) {  // a gather: its status word follows the operands
    p->launches.back().nodes = c.group.pointer_nodes();
    detail::describe_gathers(c.graph, c.group, c.values, *p, p->launches.back());
  }
  return p;
}

// Writes this call's pointers (the output's, then each tensor operand's) and scalars (the
// scalar operands', then the attributes') into the prepared parameters, and launches them.
void launch_op(Engine& engine, detail::PreparedCall& p, const ops::OpDef& op, const TensorView& out,
               const std::vector<Operand>& args, const Attrs& attrs) {
  std::lock_guard<std::mutex> lock(p.mutex);
  detail::PreparedCall::Launch& l = p.launches.front();
  std::size_t pointer = 0, scalar = 0;
  l.params->set_pointer(pointer++, out.data);
  for (const Operand& a : args) {
    if (auto* v = std::get_if<TensorView>(&a))
      l.params->set_pointer(pointer++, v->data);
    else
      l.params->set_scalar(scalar++, std::get<double>(a));
  }
  for (double s : ops::attr_scalars(op, attrs)) l.params->set_scalar(scalar++, s);  // clamp's
  detail::EngineImpl& e = detail::impl_of(engine);
  detail::bind_status(p, engine);
  detail::bind_workspace(p, engine);
  const runtime::NvtxRange range(op.name.data());  // catalog names are NUL-terminated literals
  runtime::ContextGuard guard(*e.context);
  l.kernel->module->launch(l.config, e.stream(), l.params->pointers());
  detail::check_status(p, e.stream());
}

}  // namespace

void call_into(Engine& engine, std::string_view name, const TensorView& out,
               const std::vector<Operand>& args, const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  refuse_in_place(op);
  const detail::Signature s = op_signature(op, out, args, attrs);
  std::shared_ptr<detail::PreparedCall> p = detail::impl_of(engine).calls.find(s);
  // The first call of a signature checks every rule; a later one only what the signature does
  // not pin: the values of the attributes that become scalars (clamp's bounds, min <= max).
  if (!p || !ops::attr_scalars(op, attrs).empty()) {
    const TensorView r = ops::infer_result(op, args, attrs);
    if (out.shape != r.shape)
      throw ShapeError(fmt::format("{}: output {} does not have the result shape {}", name,
                                   out.describe(), to_string(r.shape)));
    if (out.dtype != r.dtype)
      throw DtypeError(fmt::format("{}: output {} does not have the result dtype {}", name,
                                   out.describe(), name_of(r.dtype)));
  }
  check_operands(op, args, true);
  if (!view_ok(out)) check_view(out, fmt::format("{}: output", op.name));
  if (!engine.has_device())
    detail::impl_of(engine).require_device(fmt::format("running {}", name).c_str());
  if (!p)
    p = detail::impl_of(engine).calls.insert(s, prepare_op(engine, op, out, args, attrs));
  else if (!p->launches.empty())
    detail::impl_of(engine).cache->count_memory_hit();
  if (!p->launches.empty()) launch_op(engine, *p, op, out, args, attrs);
}

KernelRecord precompile(Engine& engine, std::string_view name, const std::vector<Operand>& args,
                        const Attrs& attrs) {
  const ops::OpDef& op = ops::find_op(name);
  refuse_in_place(op);
  const TensorView out = ops::infer_result(op, args, attrs);
  check_operands(op, args, false);
  const KernelLaunch L =
      specialize_call(op_call(op, out, args, attrs), detail::impl_of(engine).target,
                      detail::impl_of(engine).tuning);
  if (L.groups == 0)
    throw ShapeError(fmt::format("{}: the result {} is empty; there is no kernel to compile", name,
                                 out.describe()));
  std::string source;
  KernelRecord r =
      detail::impl_of(engine).records[detail::impl_of(engine).prepare(L.spec, &source).record];
  r.source = source;
  return r;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const ops::OpDef& op : ops::all_ops()) names.emplace_back(op.name);
  return names;
}

}  // namespace kiln
