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

}  // namespace kiln::ops
