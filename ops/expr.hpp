#pragma once
// A custom elementwise op's expression (issue 23: ops a graph declares, `"expr": "x *
// tanhf(log1pf(expf(x)))"`), parsed into a tree before anything reaches NVRTC: one expression
// over the op's operands, numeric literals, arithmetic, comparison, logical and conditional
// operators, and calls of an allow-list of math functions. Anything else — statements, braces,
// comments, preprocessor lines, strings, indexing, unknown names, a newline — is a GraphError
// naming the op, so a graph file cannot carry code into a kernel. The tree renders to CUDA in
// engine/codegen and evaluates in fp64 for references.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ops {

struct ExprNode {
  enum class Kind { literal, operand, negate, logical_not, binary, conditional, call } kind;
  double value = 0;         ///< literal
  int operand = 0;          ///< operand: its index in the op's operands
  std::string_view symbol;  ///< binary: "+", "<=", "&&"...; call: the function ("tanhf")
  std::vector<std::unique_ptr<ExprNode>> args;
};

/// A math function an expression may call: its CUDA name, arity and fp64 meaning.
struct ExprFunction {
  std::string_view name;  ///< "expf"
  int arity;
  double (*eval)(const double* args);
};

/// The functions an expression may call (expf, logf, tanhf, fminf, powf, ...).
const std::vector<ExprFunction>& expr_functions();

class Expr {
 public:
  /// Parses `text` as an expression over `operands`; GraphError naming op `op`, the reason
  /// and the column for anything outside the grammar. At most 4096 characters and 64 levels.
  static Expr parse(std::string_view op, std::string_view text,
                    const std::vector<std::string>& operands);

  const ExprNode& root() const { return *root_; }
  std::size_t operands() const { return operands_; }

  /// Its value for operand values `x` (operands() of them), in fp64: comparisons and logical
  /// operators give 1 or 0, a condition is true when not 0 (as the rendered CUDA does).
  double evaluate(const double* x) const;

 private:
  std::shared_ptr<const ExprNode> root_;
  std::size_t operands_ = 0;
};

}  // namespace kiln::ops
