#pragma once
// Custom elementwise ops a graph declares (Graph::define_op, graph JSON's "ops"): the catalog
// entry of one, made from its name, operands and expression. The expression is parsed
// (ops/expr.hpp) before anything else: a graph file carries an expression, never code.

#include <kiln/graph.hpp>
#include <memory>

#include "ops/op.hpp"

namespace kiln::ops {

/// Longest custom op name (it names the op's functor in kernel source).
constexpr std::size_t kMaxCustomOpName = 64;

/// The op `op` declares: arithmetic dtype rule (float operands promoted, bool refused), fusing
/// like a built-in elementwise op, its functor rendered from the expression. GraphError naming
/// the op for a name that is not an identifier or is a built-in op's, operands that are not
/// distinct identifiers (1 to 8 of them), or an expression outside the grammar.
std::shared_ptr<const OpDef> make_custom_op(const CustomOp& op);

/// The op a graph's node of user template `t` is, named `name`: FusionClass::kernel, its
/// operands the template's parameters but its output. GraphError naming it for a name that is
/// not an identifier or is a built-in op's, or an output that is not a tensor parameter (nor
/// its `like`).
std::shared_ptr<const OpDef> make_template_op(const std::string& name,
                                              std::shared_ptr<const Template> t);

/// The result of template op `op` on `args` (its `like` parameter's shape and dtype), after
/// checking each argument is what its parameter takes: ArgumentError naming the op otherwise.
TensorView infer_template(const OpDef& op, const std::vector<Operand>& args);

}  // namespace kiln::ops
