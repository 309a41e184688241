// build_body (engine/passes/fusion.hpp): the elementwise bodies of a collected group and its
// kernel's name stem.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using codegen::Ref;

// The dtypes a typed body converts step `n`'s arguments to (`dtypes` theirs; none for a
// scalar, an f32): a comparison's operands to their promoted dtype, a select's values and
// everything else to the result's dtype; a cast's and a select's condition as they are.
std::vector<DType> arg_dtypes(const ops::OpDef& op, const Graph::Node& n,
                              const std::vector<std::optional<DType>>& dtypes) {
  std::vector<DType> out(dtypes.size(), n.dtype);
  const auto own = [&](std::size_t k) { return dtypes[k].value_or(DType::f32); };
  if (op.rule == ops::Rule::cast)
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = own(k);
  if (op.rule == ops::Rule::select && !out.empty()) out[0] = own(0);
  if (op.rule == ops::Rule::compare) {
    std::optional<DType> wide;  // inference has refused operands that do not promote
    for (const auto& t : dtypes)
      if (t) wide = wide ? ops::promote(*wide, *t) : t;
    std::fill(out.begin(), out.end(), wide.value_or(DType::f32));
  }
  return out;
}

// A body computing `steps` from `inputs` (and, for an epilogue, the row op's value `row`);
// `refs` may hold values the body reads otherwise (the prologue's x).
codegen::Body make_body(const Graph& g, const std::vector<int>& steps,
                        const std::vector<int>& inputs, int row, std::vector<float>& scalars,
                        std::map<int, Ref>& refs) {
  codegen::Body b;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    refs[inputs[i]] = {Ref::Kind::input, int(i)};
    b.inputs.push_back(g.node(inputs[i]).dtype);
  }
  if (row >= 0) refs[row] = {Ref::Kind::row, 0};
  auto scalar = [&](double v) {
    scalars.push_back(float(v));
    return Ref{Ref::Kind::scalar, b.scalars++};
  };
  for (int id : steps) {
    const Graph::Node& n = g.node(id);
    const ops::OpDef& op = op_def(g, n.op);
    codegen::Step step{std::string(op.functor), {}, op.rule == ops::Rule::cast, n.dtype, op.expr};
    std::vector<std::optional<DType>> dtypes;  // none: a scalar
    for (const auto& a : n.args) {
      const bool node = std::holds_alternative<int>(a);
      step.args.push_back(node ? refs.at(std::get<int>(a)) : scalar(std::get<double>(a)));
      dtypes.push_back(node ? std::optional<DType>(g.node(std::get<int>(a)).dtype) : std::nullopt);
    }
    for (double s : ops::attr_scalars(op, n.attrs)) {
      step.args.push_back(scalar(s));
      dtypes.emplace_back();
    }
    step.arg_dtypes = arg_dtypes(op, n, dtypes);
    refs[id] = {Ref::Kind::step, int(b.steps.size())};
    b.steps.push_back(step);
  }
  return b;
}

std::string op_names(const Graph& g, const std::vector<int>& steps) {
  std::vector<std::string> names;
  for (int id : steps) names.push_back(g.node(id).op);
  if (names.size() > 4)
    names = {names[0], names[1], names[2], fmt::format("{}_more", names.size() - 3)};
  return fmt::format("{}", fmt::join(names, "_"));
}

// The value output `id` of a kernel takes: a slice's operand where the kernel writes the slice
// as a window of the operand's columns (window_slices), else `id` itself.
int window_source(const Graph& g, int id) {
  return is_window(g, id) ? std::get<int>(g.node(id).args[0]) : id;
}

}  // namespace

std::vector<int> prologue_steps(const Graph& g, const FusedGroup& grp) {
  std::set<int> mine, todo = {grp.x};
  const std::set<int> steps(grp.steps.begin(), grp.steps.end());
  while (!todo.empty()) {
    const int id = *todo.begin();
    todo.erase(todo.begin());
    if (!steps.count(id) || !mine.insert(id).second) continue;
    for (const auto& a : g.node(id).args)
      if (const int* p = std::get_if<int>(&a)) todo.insert(*p);
  }
  std::vector<int> out;
  for (int id : grp.steps)
    if (mine.count(id)) out.push_back(id);
  return out;
}

bool involves_integer(const Graph& g, int root) {
  std::vector<int> todo = {root};
  std::set<int> seen;
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second) continue;
    const Graph::Node& n = g.node(id);
    if (is_integer(n.dtype)) return true;
    if (n.op == "input" || op_def(g, n.op).fusion.kind != ops::FusionKind::chain) continue;
    for (const auto& a : n.args)
      if (const int* p = std::get_if<int>(&a)) todo.push_back(*p);
  }
  return false;
}

void build_body(const Graph& g, FusedGroup& grp) {
  if (grp.part >= 0) {  // a concat's operands, computed by its steps or read from memory
    std::map<int, Ref> refs;
    grp.body = make_body(g, grp.steps, grp.inputs, -1, grp.scalars, refs);
    const Graph::Node& concat = g.node(grp.anchor_node);
    grp.body.outputs.assign(std::size_t(grp.parts), concat.dtype);
    for (int i = grp.part; i < grp.part + grp.parts; ++i)
      grp.body.results.push_back(refs.at(std::get<int>(concat.args.at(std::size_t(i)))));
    const std::string pro = op_names(g, grp.steps);
    grp.stem = fmt::format("{}{}concat_{}", pro, pro.empty() ? "" : "__",
                           name_of(g.node(grp.anchor_node).dtype));
    return;
  }
  // An anchor's steps are its prologue, or factors folded into its scale (fold_scales), which
  // its code does not show: then no body, and the name of the kernel without them.
  const bool folded = grp.anchor && grp.anchor->fusion.folds_scale;
  const bool loads = grp.anchor && grp.anchor->fusion.loads_prologue && grp.x >= 0;
  std::map<int, Ref> refs;
  const std::vector<int> pro = loads ? prologue_steps(g, grp) : folded ? std::vector<int>{}
                                                                       : grp.steps;
  if (loads) {  // operand 0's slot holds the first input, grp.extras the others
    std::vector<int> inputs = {grp.inputs[0]};
    inputs.insert(inputs.end(), grp.extras.begin(), grp.extras.end());
    grp.body = make_body(g, pro, inputs, -1, grp.scalars, refs);
    grp.body.outputs = {g.node(grp.x).dtype};
    grp.body.results = {refs.at(grp.x)};
  }
  if (grp.anchor && !grp.anchor->fusion.prologue && !grp.anchor->fusion.epilogue) {
    // an anchor without prologue or epilogue (a user template's, a lone attention_lse) or a
    // view's copy: no bodies but a prologue it loads. Steps only where a factor folded into its
    // scale (fold_scales), which the kernel's code does not show: the name stays, and so does
    // the compiled kernel.
    const std::string pre = op_names(g, pro);
    grp.stem = fmt::format("{}{}{}_{}", pre, pre.empty() ? "" : "__", grp.anchor->name,
                           name_of(g.node(grp.anchor_node).dtype));
    return;
  }
  if (!loads && !folded) grp.body = make_body(g, grp.steps, grp.inputs, -1, grp.scalars, refs);
  const std::string dtype(name_of(g.node(grp.outputs[0]).dtype));
  if (grp.anchor) {
    if (grp.x >= 0 && !loads) {  // a row op's prologue; a matrix product reads its operands as
                                 // they are
      grp.body.outputs = {DType::f32};
      grp.body.results = {refs.at(grp.x)};
    }
    std::map<int, Ref> erefs;
    if (grp.hands_on) erefs[grp.x] = {Ref::Kind::prologue, 0};  // x as the prologue computed it
    // Views of the result are the result at each element: the kernel indexes through them.
    for (int v : grp.epilogue_views) erefs[v] = {Ref::Kind::row, 0};
    grp.epilogue = make_body(g, grp.epilogue_steps, grp.epilogue_inputs, grp.anchor_node,
                             grp.epilogue_scalars, erefs);
    for (int id : grp.outputs) {
      if (id != grp.anchor_node && !fusion::roles(g, id).joins.empty())
        continue;  // a result joining the kernel, written beside
      grp.epilogue.outputs.push_back(g.node(id).dtype);
      grp.epilogue.results.push_back(erefs.at(window_source(g, id)));
    }
    const std::string pre = op_names(g, pro);
    const std::string epi = op_names(g, grp.epilogue_steps);
    grp.stem = fmt::format("{}{}{}{}{}_{}", pre, pre.empty() ? "" : "__", grp.anchor->name,
                           epi.empty() ? "" : "__", epi, name_of(g.node(grp.anchor_node).dtype));
    return;
  }
  for (int id : grp.outputs) {
    grp.body.outputs.push_back(g.node(id).dtype);
    grp.body.results.push_back(refs.at(id));
  }
  grp.stem = fmt::format("{}_{}", op_names(g, grp.steps), dtype);
}

}  // namespace kiln
