#pragma once
// The op catalog: for each op its operands, shape/dtype rule, fusion class, the device functor
// it binds to in kernel_templates/kiln/ops.cuh, and its fp64 CPU reference.

#include <kiln/op_schema.hpp>
#include <kiln/ops.hpp>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
class Template;
}

namespace kiln::ops {

class Expr;

/// How an op fuses (docs/ops.md): elementwise ops fuse into chains and into
/// the prologue of row ops; row ops (reductions, softmax, norms over the last axis) anchor a
/// kernel of their own and materialize their result; a user template's node (`kernel`) is a
/// kernel of its own that reads and writes memory only; a matrix product (`gemm`) anchors a
/// kernel whose elementwise consumers fuse as its epilogue; a `view` (reshape) is its operand's
/// memory read with another shape, a copy only where it cannot be (engine/fusion.hpp).
enum class FusionClass { elementwise, row, kernel, gemm, view };

/// fp64 reference of a row op on one row of n values: writes n values (1 for a reduction).
/// `w` and `b` are the norms' weight and bias (null when absent).
using RowReference = void (*)(const double* x, std::int64_t n, const double* w, const double* b,
                              double eps, double* out);

/// A norm's eps when its attrs give none.
constexpr double kDefaultEps = 1e-5;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Which dtype rule applies.
enum class Rule {
  arithmetic,  ///< float operands promoted; bool operands refused
  compare,     ///< any operands; result bool
  select,      ///< where: cond any, values promoted (bool allowed)
  cast,        ///< result is attribute dtype
};

/// Inputs for which an op is well conditioned; tests and benchmarks draw from it.
struct Domain {
  double lo = -4;
  double hi = 4;
};

struct OpDef {
  std::string_view name;
  std::vector<std::string_view> operands;  ///< names in messages: {"a", "b"}
  std::string_view functor;                ///< "kiln::op::Add"
  Rule rule = Rule::arithmetic;
  Domain domain;
  /// fp64 reference on (up to three) operand values; clamp gets (x, min, max).
  double (*reference)(double a, double b, double c) = nullptr;
  FusionClass fusion = FusionClass::elementwise;
  RowReference row_reference = nullptr;  ///< row ops
  bool reduces = false;                  ///< writes one value per row
  std::size_t min_operands = 0;          ///< when some operands are optional (norms); 0 = all
  /// A custom op's expression (ops/custom.hpp): codegen renders its functor from it, references
  /// evaluate it; null for kiln's own ops.
  const Expr* expr = nullptr;
  /// A user template's node (FusionClass::kernel): the template; null otherwise.
  const Template* tmpl = nullptr;
  /// Its attribute schema (kiln/op_schema.hpp): JSON, Python and the eager signature read and
  /// write attributes through it. Operands from `min_operands` on are optional.
  std::vector<AttrSpec> attrs = {};
  std::string_view doc = {};     ///< one paragraph: what it computes
  std::string_view dtypes = {};  ///< its dtype rule; empty: `rule`'s (dtype_rule_doc)
};

/// `op`'s schema: views into `op`.
OpSchema schema_of(const OpDef& op);
/// Dtype rule `rule` in a sentence (docs/ops.md's).
std::string_view dtype_rule_doc(Rule rule);
/// Checks `attrs` against `op`'s schema: ArgumentError (unknown_attr's message, hint included)
/// for an attribute it does not have, ArgumentError naming the op, the attribute and what it
/// takes for a value of another type or outside its range (DtypeError for an unknown dtype
/// name). Attributes a schema requires are the readers' to ask for (infer_result).
void check_attrs(const OpDef& op, const Attrs& attrs);

/// The op called `name`; ArgumentError listing the known ops otherwise.
const OpDef& find_op(std::string_view name);
/// Every op, in catalog order.
const std::vector<OpDef>& all_ops();

// Each family registers its ops (one file each).
std::vector<OpDef> unary_ops();
std::vector<OpDef> binary_ops();
std::vector<OpDef> select_ops();
std::vector<OpDef> row_ops();
std::vector<OpDef> gemm_ops();
std::vector<OpDef> view_ops();

/// "matmul(a: f32[64,128], b: f32[256,32])": an op call in messages.
std::string describe_args(const OpDef& op, const std::vector<Operand>& args);

/// The result of a matrix product (matmul, linear): ShapeError/DtypeError naming every operand.
TensorView infer_gemm(const OpDef& op, const std::vector<Operand>& args);

/// A slice's range: its axis (from 0) and [start, stop) within it, from `attrs` for an operand
/// of shape `x` (negative indexes resolved). ShapeError (ArgumentError for a missing start or
/// stop) starting with `what` when they fall outside the axis.
struct SliceRange {
  std::size_t axis = 0;
  std::int64_t start = 0, stop = 0;
};
SliceRange slice_range(const Shape& x, const Attrs& attrs, const std::string& what);

/// The result of a view op (reshape, slice): ShapeError when reshape's element counts differ or
/// slice's range leaves the axis.
TensorView infer_view(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs);

/// The result shape and dtype of `op` on `args` (data is 0, strides empty). Throws
/// ShapeError/DtypeError/ArgumentError naming the op and every operand.
TensorView infer_result(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs);

/// Scalars an op takes from its attributes, after its args: clamp's bounds (an absent one an
/// infinity); nothing for other ops.
std::vector<double> attr_scalars(const OpDef& op, const Attrs& attrs);

/// The eps of a norm (attribute eps, default 1e-5).
double eps_of(const Attrs& attrs);
/// Whether a reduction's attributes ask for every axis (axis "all").
bool all_axes(const Attrs& attrs);
/// A row op's integer axis, `fallback` when none is set or it is "all".
std::int64_t axis_of(const Attrs& attrs, std::int64_t fallback = -1);

/// The kernel's operand slots: clamp's bounds become scalar operands (an absent bound an
/// infinity); every other op passes its args through.
std::vector<Operand> kernel_operands(const OpDef& op, const std::vector<Operand>& args,
                                     const Attrs& attrs);

}  // namespace kiln::ops
