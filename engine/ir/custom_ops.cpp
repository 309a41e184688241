#include "engine/ir/custom_ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "ops/expr.hpp"

namespace kiln::ops {
namespace {

constexpr std::size_t kMaxOperands = 8;

bool identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxCustomOpName) return false;
  const auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// An OpDef whose views point into its own strings (it is never moved: made and kept by
// shared_ptr).
struct CustomOpDef : OpDef {
  std::string name_text, functor_text, doc_text;
  std::vector<std::string> operand_text;
  std::unique_ptr<Expr> parsed;
  std::shared_ptr<const Template> kept;
};

// GraphError unless `name` may name an op of a graph: an identifier, not kiln's own op's.
void check_op_name(const std::string& name, const std::string& who) {
  if (!identifier(name))
    throw GraphError(fmt::format(
        "{}: a custom op's name is an identifier of 1 to {} letters, digits and underscores, not "
        "starting with a digit",
        who, kMaxCustomOpName));
  bool builtin = true;
  try {
    find_op(name);
  } catch (const ArgumentError&) {
    builtin = false;
  }
  if (builtin || name == "input")
    throw GraphError(fmt::format("{}: the name is kiln's own op's; choose another", who));
}

}  // namespace

std::shared_ptr<const OpDef> make_custom_op(const CustomOp& op) {
  const std::string who = fmt::format("custom op '{}'", printable_name(op.name));
  check_op_name(op.name, who);
  if (op.operands.empty() || op.operands.size() > kMaxOperands)
    throw GraphError(fmt::format("{}: it takes 1 to {} operands, not {}", who, kMaxOperands,
                                 op.operands.size()));
  std::set<std::string> seen;
  for (const std::string& o : op.operands)
    if (!identifier(o) || !seen.insert(o).second)
      throw GraphError(
          fmt::format("{}: operand '{}' is not a distinct identifier", who, printable_name(o)));
  auto def = std::make_shared<CustomOpDef>();
  def->parsed = std::make_unique<Expr>(Expr::parse(op.name, op.expr, op.operands));
  def->name_text = op.name;
  def->functor_text = "kiln_op_" + op.name;
  def->operand_text = op.operands;
  def->name = def->name_text;
  def->functor = def->functor_text;
  for (const std::string& o : def->operand_text) def->operands.push_back(o);
  def->rule = Rule::arithmetic;
  def->expr = def->parsed.get();
  def->doc_text = fmt::format("A custom elementwise op of the graph: {}.", op.expr);
  def->doc = def->doc_text;
  return def;
}

std::shared_ptr<const OpDef> make_template_op(const std::string& name,
                                              std::shared_ptr<const Template> t) {
  const std::string who = fmt::format("template op '{}'", printable_name(name));
  check_op_name(name, who);
  const auto param = [&](const std::string& name) -> const TemplateParam* {
    for (const TemplateParam& q : t->param_list())
      if (q.name == name) return &q;
    return nullptr;
  };
  const TemplateParam *out = param(t->output_param()), *like = param(t->output_like());
  if (!out || out->kind != TemplateParam::Kind::tensor || !like || !like->takes_tensor() ||
      t->output_param() == t->output_like())
    throw GraphError(fmt::format(
        "{}: its output '{}' (like '{}') is not one of its tensor parameters (Template::output)",
        who, printable_name(t->output_param()), printable_name(t->output_like())));
  auto def = std::make_shared<CustomOpDef>();
  def->name_text = name;
  for (const TemplateParam& q : t->param_list())
    if (q.name != t->output_param()) def->operand_text.push_back(q.name);
  def->name = def->name_text;
  for (const std::string& o : def->operand_text) def->operands.push_back(o);
  def->fusion = {FusionKind::anchor, "template"};
  def->infer = [](const OpDef& o, const std::vector<Operand>& args, const Attrs&) {
    return infer_template(o, args);
  };
  def->kept = std::move(t);
  def->tmpl = def->kept.get();
  def->doc_text = fmt::format("The graph's op for user template {}, a kernel of its own.",
                              printable_name(def->kept->name()));
  def->doc = def->doc_text;
  def->dtypes = "each operand as the template's parameter takes it; the result is like its "
                "output's `like` parameter.";
  return def;
}

void RuleVariables::add(const TemplateParam& p, const Operand& arg) {
  if (p.takes_tensor()) {
    const TensorView& v = std::get<TensorView>(arg);
    add(p.name + "_numel", double(v.numel()));
    for (std::size_t d = 0; d < v.shape.size(); ++d)
      add(fmt::format("{}_dim{}", p.name, d), double(v.shape[d]));
  } else if (p.is_integer()) {
    add(p.name, std::get<double>(arg));
  }
}

// The result's shape from the template's rule (Template::output's `shape`).
Shape shape_rule(const OpDef& op, const std::vector<std::string>& dims, const RuleVariables& vars) {
  Shape shape;
  for (const std::string& text : dims) {
    const double v = [&] {
      try {
        return Expr::parse(op.name, text, vars.names).evaluate(vars.values.data());
      } catch (const Error& e) {
        throw ArgumentError(fmt::format("{}: output dim '{}': {}", op.name, text, e.what()));
      }
    }();
    if (!(v >= 0) || v != std::floor(v) || v > 1e15)
      throw ArgumentError(fmt::format("{}: output dim '{}' is {}, not a whole number of elements",
                                      op.name, text, v));
    shape.push_back(std::int64_t(v));
  }
  return shape;
}

TensorView infer_template(const OpDef& op, const std::vector<Operand>& args) {
  const Template& t = *op.tmpl;
  if (args.size() != op.operands.size())
    throw ArgumentError(fmt::format("{} takes {} operand(s) ({}), got {}", op.name,
                                    op.operands.size(), fmt::join(op.operands, ", "), args.size()));
  TensorView out;
  RuleVariables vars;  // the shape rule's
  std::size_t i = 0;
  for (const TemplateParam& p : t.param_list()) {
    if (p.name == t.output_param()) continue;
    const Operand& arg = args[i++];
    const TensorView* v = std::get_if<TensorView>(&arg);
    if (p.takes_tensor() != (v != nullptr))
      throw ArgumentError(
          fmt::format("{}: operand {} takes {}", op.name, p.name, v ? "a number" : "a tensor"));
    if (v && p.name == t.output_like()) {
      out.shape = v->shape;
      out.dtype = v->dtype;
    }
    vars.add(p, arg);
  }
  if (!t.output_shape().empty()) out.shape = shape_rule(op, t.output_shape(), vars);
  return out;
}

}  // namespace kiln::ops
