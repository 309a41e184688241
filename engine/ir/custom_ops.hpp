#pragma once
// Custom elementwise ops a graph declares (Graph::define_op, graph JSON's "ops"): the catalog
// entry of one, made from its name, operands and expression. The expression is parsed
// (ops/expr.hpp) before anything else: a graph file carries an expression, never code.

#include <kiln/graph.hpp>
#include <kiln/template.hpp>
#include <memory>
#include <string>
#include <vector>

#include "ops/op.hpp"

namespace kiln::ops {

/// Longest custom op name (it names the op's functor in kernel source).
constexpr std::size_t kMaxCustomOpName = 64;

/// The op `op` declares: arithmetic dtype rule (float operands promoted, bool refused), fusing
/// like a built-in elementwise op, its functor rendered from the expression. GraphError naming
/// the op for a name that is not an identifier or is a built-in op's, operands that are not
/// distinct identifiers (1 to 8 of them), or an expression outside the grammar.
std::shared_ptr<const OpDef> make_custom_op(const CustomOp& op);

/// The op a graph's node of user template `t` is, named `name`: an anchor of the "template" family
/// (a kernel of its own), its operands the template's parameters but its output. GraphError naming
/// it for a name that is not an identifier or is a built-in op's, or an output that is not a tensor
/// parameter (nor its `like`).
std::shared_ptr<const OpDef> make_template_op(const std::string& name,
                                              std::shared_ptr<const Template> t);

/// The result of template op `op` on `args` (its `like` parameter's shape and dtype), after
/// checking each argument is what its parameter takes: ArgumentError naming the op otherwise.
TensorView infer_template(const OpDef& op, const std::vector<Operand>& args);

/// The variables a template's rules (launch dims, boxes, an output's shape) see: an integer
/// parameter's value by its name, a tensor's `x_numel` and `x_dim0`, `x_dim1`, ...
struct RuleVariables {
  std::vector<std::string> names;
  std::vector<double> values;
  void add(std::string name, double v) {
    names.push_back(std::move(name));
    values.push_back(v);
  }
  /// Those of parameter `p` called with `arg` (nothing for a float parameter).
  void add(const TemplateParam& p, const Operand& arg);
};

}  // namespace kiln::ops
