#include "ops/custom.hpp"

#include <fmt/format.h>

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
  std::string name_text, functor_text;
  std::vector<std::string> operand_text;
  std::unique_ptr<Expr> parsed;
};

}  // namespace

std::shared_ptr<const OpDef> make_custom_op(const CustomOp& op) {
  const std::string who = fmt::format("custom op '{}'", printable_name(op.name));
  if (!identifier(op.name))
    throw GraphError(fmt::format(
        "{}: a custom op's name is an identifier of 1 to {} letters, digits and underscores, not "
        "starting with a digit",
        who, kMaxCustomOpName));
  bool builtin = true;
  try {
    find_op(op.name);
  } catch (const ArgumentError&) {
    builtin = false;
  }
  if (builtin || op.name == "input")
    throw GraphError(fmt::format("{}: the name is kiln's own op's; choose another", who));
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
  return def;
}

}  // namespace kiln::ops
