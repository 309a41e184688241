// The catalog and the shape/dtype rules shared by every elementwise op.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/error.hpp>
#include <limits>
#include <optional>
#include <unordered_map>

#include "ops/op.hpp"

namespace kiln::ops {

const TensorView& tensor_operand(const OpDef& op, const std::vector<Operand>& args,
                                 std::size_t i) {
  const auto* v = std::get_if<TensorView>(&args[i]);
  if (!v)
    throw ArgumentError(
        fmt::format("{}: {} must be a tensor", describe_args(op, args), op.operands[i]));
  numel_of(v->shape);
  return *v;
}

std::string describe_args(const OpDef& op, const std::vector<Operand>& args) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::size_t last = op.operands.empty() ? 0 : op.operands.size() - 1;
    const std::string name = op.variadic && i >= last
                                 ? fmt::format("{}[{}]", op.operands.back(), i - last)
                             : i < op.operands.size() ? std::string(op.operands[i])
                                                      : fmt::format("arg{}", i);
    if (auto* v = std::get_if<TensorView>(&args[i]))
      parts.push_back(fmt::format("{}: {}{}", name, name_of(v->dtype), to_string(v->shape)));
    else
      parts.push_back(fmt::format("{}: scalar {}", name, std::get<double>(args[i])));
  }
  return fmt::format("{}({})", op.name, fmt::join(parts, ", "));
}

// Floats and integers never mix unless a cast says so.
std::optional<DType> promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  if (is_integer(a) != is_integer(b)) return std::nullopt;
  return is_integer(a) ? DType::i64 : DType::f32;
}

namespace {

// The dtype of an elementwise op's result on `args` (DtypeError naming the call otherwise).
DType result_dtype(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  std::optional<DType> values;  // promoted dtype of the value operands
  bool all_bool = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto* v = std::get_if<TensorView>(&args[i]);
    if (!v || (op.rule == Rule::select && i == 0)) continue;
    const std::optional<DType> p = values ? promote(*values, v->dtype) : v->dtype;
    if (!p)
      throw DtypeError(fmt::format("{}: {} and {} do not mix; cast one of them first",
                                   describe_args(op, args), name_of(*values), name_of(v->dtype)));
    values = p;
    all_bool = all_bool && v->dtype == DType::boolean;
  }
  if (values && is_integer(*values) && op.rule != Rule::cast)
    for (const Operand& a : args)  // scalars reach kernels as f32: whole and exact there
      if (const auto* d = std::get_if<double>(&a);
          d && !(*d == std::trunc(*d) && std::fabs(*d) <= 16777216))
        throw ArgumentError(fmt::format(
            "{}: a scalar with {} operands must be a whole number of at most 2^24 in magnitude",
            describe_args(op, args), name_of(*values)));
  switch (op.rule) {
    case Rule::arithmetic:
      if (values && all_bool)
        throw DtypeError(
            fmt::format("{}: arithmetic on bool operands; cast them to a float dtype first",
                        describe_args(op, args)));
      if (values && is_integer(*values) && !op.integers)
        throw DtypeError(fmt::format("{}: {} takes float operands, not {}; cast first",
                                     describe_args(op, args), op.name, name_of(*values)));
      return values.value_or(DType::f32);
    case Rule::compare:
      return DType::boolean;
    case Rule::select:
      return values.value_or(DType::f32);
    case Rule::cast:
      if (const std::optional<DType> to = attrs.dtype("dtype")) return *to;
      throw ArgumentError(fmt::format("{}: needs attribute dtype (f32, f16, bf16, bool, i32, i64)",
                                      describe_args(op, args)));
  }
  return DType::f32;
}

}  // namespace

// The op files, in catalog order: each defines the function named here, returning its ops.
// An op file is registered by its line here.
#define KILN_OP_FILES(X) \
  X(unary_ops)           \
  X(binary_ops)          \
  X(select_ops)          \
  X(row_ops)             \
  X(gemm_ops)            \
  X(view_ops)            \
  X(permute_ops)         \
  X(expand_ops)          \
  X(gather_ops)          \
  X(arg_ops)             \
  X(update_ops)          \
  X(scan_ops)            \
  X(group_norm_ops)      \
  X(attention_ops)       \
  X(concat_ops)          \
  X(pad_ops)             \
  X(upsample_ops)        \
  X(conv_ops)            \
  /* a new op file's line goes above */

#define KILN_DECLARE_OP_FILE(f) std::vector<OpDef> f();
KILN_OP_FILES(KILN_DECLARE_OP_FILE)
#undef KILN_DECLARE_OP_FILE

const std::vector<OpDef>& all_ops() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> all;
#define KILN_ADD_OP_FILE(f) \
  for (auto& op : f()) all.push_back(op);
    KILN_OP_FILES(KILN_ADD_OP_FILE)
#undef KILN_ADD_OP_FILE
    return all;
  }();
  return ops;
}

const OpDef& find_op(std::string_view name) {
  static const std::unordered_map<std::string_view, const OpDef*> by_name =
      [] {  // every eager call looks one up
        std::unordered_map<std::string_view, const OpDef*> m;
        for (const OpDef& op : all_ops()) m.emplace(op.name, &op);
        return m;
      }();
  if (auto it = by_name.find(name); it != by_name.end()) return *it->second;
  std::vector<std::string_view> names;
  for (const OpDef& op : all_ops()) names.push_back(op.name);
  throw ArgumentError(
      fmt::format("unknown op '{}'; known ops: {}", printable_name(name), fmt::join(names, " ")));
}

// Shapes and dtypes of the row ops: reductions over one axis or every element, softmax over
// one axis, norms over the last axis.
const TensorView& float_x(const OpDef& op, const std::vector<Operand>& args) {
  const auto* x = std::get_if<TensorView>(&args[0]);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", describe_args(op, args)));
  if (!is_float(x->dtype))
    throw DtypeError(fmt::format("{}: x is {}; cast it to a float dtype first",
                                 describe_args(op, args), name_of(x->dtype)));
  return *x;
}

std::vector<std::size_t> keeps_channels_last(const std::vector<TensorView>& operands) {
  const TensorView& x = operands.at(0);
  const std::size_t rank = x.shape.size();
  if (rank < 3) return {};
  const Shape st = x.resolved_strides();
  std::int64_t spatial = 1;
  for (std::size_t d = 2; d < rank; ++d) spatial *= x.shape[d];
  if (x.shape[1] <= 1 || st[1] != 1 || spatial <= 1) return {};
  std::vector<std::size_t> order = {0};
  for (std::size_t d = 2; d < rank; ++d) order.push_back(d);
  order.push_back(1);
  return order;
}

namespace {

// The axes a row op works along, from 0 (every one for "all"): ShapeError for one out of range,
// a list that is empty, repeats one or leaves a gap (its axes run as one row: [1, 2], not [0, 2]).
std::vector<std::int64_t> checked_axes(const OpDef& op, const std::vector<Operand>& args,
                                       const Attrs& attrs, std::int64_t rank) {
  const AttrValue* given = attrs.find("axis");
  const auto* list = given ? std::get_if<std::vector<std::int64_t>>(given) : nullptr;
  if (list && list->empty())
    throw ArgumentError(fmt::format("{}: axis [] names no axis; give one or more, or \"all\"",
                                    describe_args(op, args)));
  for (std::int64_t axis : list ? *list : std::vector<std::int64_t>{axis_of(attrs)})
    if (!all_axes(attrs) && (axis < -rank || axis >= rank))
      throw ShapeError(fmt::format("{}: axis {} is out of range for rank {}",
                                   describe_args(op, args), axis, rank));
  const std::vector<std::int64_t> axes = reduce_axes(attrs, rank);
  for (std::size_t i = 1; i < axes.size(); ++i)
    if (axes[i] == axes[i - 1] || axes[i] != axes[i - 1] + 1)
      throw ShapeError(fmt::format(
          "{}: axis {} {}; the axes of one reduction are adjacent, as [1, 2] (permute x to "
          "bring them together, or reduce one axis after another)",
          describe_args(op, args), value_text(*given),
          axes[i] == axes[i - 1] ? fmt::format("names axis {} twice", axes[i])
                                 : fmt::format("leaves a gap between {} and {}", axes[i - 1],
                                               axes[i])));
  return axes;
}

}  // namespace

TensorView infer_row(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* given = std::get_if<TensorView>(&args[0]);
  const TensorView* x =  // sum, max, min also of integers (the arg family's exact kernels)
      op.integers && given && is_integer(given->dtype) ? given : &float_x(op, args);
  const std::int64_t rank = std::int64_t(x->shape.size());
  if (rank == 0)
    throw ShapeError(fmt::format("{}: x has no axis to work along", describe_args(op, args)));
  numel_of(x->shape);
  // Only a reduction gets here with "all" or a list: check_attrs refuses them for an integer
  // axis (softmax).
  const bool all = all_axes(attrs);
  const std::vector<std::int64_t> axes = checked_axes(op, args, attrs, rank);
  if (op.operands.size() > 1 && axes.back() + 1 != rank)
    throw ShapeError(fmt::format("{}: a norm works along the last axis, not axis {}",
                                 describe_args(op, args), axis_of(attrs)));
  for (std::int64_t a : axes)
    if (x->shape[std::size_t(a)] == 0)
      throw ShapeError(fmt::format("{}: {} is empty", describe_args(op, args),
                                   all ? "x" : fmt::format("axis {}", a)));
  check_affine(op, args, attrs, x->shape.back(), "the last axis of x");
  TensorView r;
  r.shape = x->shape;
  r.dtype = x->dtype;
  if (op.reduces) {
    for (std::size_t d = r.shape.size(); d-- > 0;) {
      if (!std::binary_search(axes.begin(), axes.end(), std::int64_t(d))) continue;
      if (attrs.flag("keepdim"))
        r.shape[d] = 1;
      else
        r.shape.erase(r.shape.begin() + std::ptrdiff_t(d));
    }
  }
  return r;
}

void check_affine(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs,
                  std::int64_t channels, std::string_view along) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto* v = std::get_if<TensorView>(&args[i]);
    if (!v || v->shape != Shape{channels})
      throw ShapeError(fmt::format("{}: {} must be a tensor of shape [{}] ({})",
                                   describe_args(op, args), op.operands[i], channels, along));
    if (!is_float(v->dtype))
      throw DtypeError(
          fmt::format("{}: {} must be a float tensor", describe_args(op, args), op.operands[i]));
  }
  if (const auto eps = attrs.number("eps"); eps && !(*eps > 0))  // NaN passes the range check
    throw ArgumentError(fmt::format("{}: eps must be > 0", describe_args(op, args)));
}

TensorView infer_result(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  check_attrs(op, attrs);  // every entry point infers first: no reader meets an unchecked value
  const std::size_t least = op.min_operands ? op.min_operands : op.operands.size();
  if (op.variadic && args.size() < least)
    throw ArgumentError(fmt::format("{} takes {} or more operands ({}...), got {}: {}", op.name,
                                    least, fmt::join(op.operands, ", "), args.size(),
                                    describe_args(op, args)));
  if (!op.variadic && (args.size() < least || args.size() > op.operands.size()))
    throw ArgumentError(fmt::format("{} takes {}{} operand(s) ({}), got {}: {}", op.name,
                                    least == op.operands.size() ? "" : fmt::format("{} to ", least),
                                    op.operands.size(), fmt::join(op.operands, ", "), args.size(),
                                    describe_args(op, args)));
  if (op.infer) return op.infer(op, args, attrs);
  if (args.size() != op.operands.size())
    throw ArgumentError(fmt::format("{} takes {} operand(s) ({}), got {}: {}", op.name,
                                    op.operands.size(), fmt::join(op.operands, ", "), args.size(),
                                    describe_args(op, args)));
  // Shape: NumPy broadcasting over the tensor operands.
  Shape shape;
  bool any_tensor = false;
  for (const Operand& a : args) {
    const auto* v = std::get_if<TensorView>(&a);
    if (!v) continue;
    any_tensor = true;
    numel_of(v->shape);  // rejects negative extents and overflow
    if (v->shape.size() > shape.size())
      shape.insert(shape.begin(), v->shape.size() - shape.size(), 1);
    for (std::size_t i = 0; i < v->shape.size(); ++i) {
      std::int64_t& out = shape[shape.size() - v->shape.size() + i];
      const std::int64_t in = v->shape[i];
      if (out == 1)
        out = in;
      else if (in != 1 && in != out)
        throw ShapeError(fmt::format("{}: shapes do not broadcast (dim {} from the end: {} vs {})",
                                     describe_args(op, args), v->shape.size() - i, out, in));
    }
  }
  if (!any_tensor)
    throw ArgumentError(
        fmt::format("{}: needs at least one tensor operand", describe_args(op, args)));

  const DType out = result_dtype(op, args, attrs);
  if (const auto lo = attrs.number("min"), hi = attrs.number("max");
      op.name == "clamp" && lo && hi && *lo > *hi)
    throw ArgumentError(
        fmt::format("{}: min {} is greater than max {}", describe_args(op, args), *lo, *hi));
  TensorView r;
  r.shape = shape;
  r.dtype = out;
  return r;
}

std::string_view dtype_rule_doc(Rule rule) {
  switch (rule) {
    case Rule::arithmetic:
      return "float operands (f32, f16, bf16), mixed ones promoted (f16 with bf16, or either "
             "with f32, give f32); integers (i32, i64; i32 with i64 gives i64) where the op "
             "takes them; a float with an integer refused (cast one); a scalar never changes "
             "the dtype (with integers, a whole number up to 2^24); bool refused.";
    case Rule::compare:
      return "operands of any dtype, but not a float with an integer; the result is bool.";
    case Rule::select:
      return "cond of any dtype (true where nonzero); a and b promoted as arithmetic's (both "
             "bool allowed, a float with an integer refused).";
    case Rule::cast:
      return "x of any dtype; the result is dtype.";
  }
  return "";
}

double eps_of(const Attrs& attrs) { return attrs.number("eps").value_or(kDefaultEps); }

bool all_axes(const Attrs& attrs) {
  const AttrValue* v = attrs.find("axis");
  return v && std::holds_alternative<std::string>(*v) && std::get<std::string>(*v) == "all";
}

std::int64_t axis_of(const Attrs& attrs, std::int64_t fallback) {
  const AttrValue* v = attrs.find("axis");
  return v && std::holds_alternative<std::int64_t>(*v) ? std::get<std::int64_t>(*v) : fallback;
}

std::vector<std::int64_t> reduce_axes(const Attrs& attrs, std::int64_t rank) {
  std::vector<std::int64_t> axes;
  if (all_axes(attrs)) {
    for (std::int64_t d = 0; d < rank; ++d) axes.push_back(d);
    return axes;
  }
  const AttrValue* v = attrs.find("axis");
  if (const auto* list = v ? std::get_if<std::vector<std::int64_t>>(v) : nullptr)
    axes = *list;
  else
    axes = {axis_of(attrs)};
  for (std::int64_t& a : axes)
    if (a < 0) a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

double row_scalar(const OpDef& op, const Attrs& attrs) {
  if (op.name == "var" || op.name == "std") return attrs.number("correction").value_or(1.0);
  return eps_of(attrs);
}

std::vector<double> attr_scalars(const OpDef& op, const Attrs& attrs) {
  if (op.name != "clamp") return {};
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {attrs.number("min").value_or(-inf), attrs.number("max").value_or(inf)};
}

std::vector<Operand> kernel_operands(const OpDef& op, const std::vector<Operand>& args,
                                     const Attrs& attrs) {
  std::vector<Operand> out = args;
  for (double s : attr_scalars(op, attrs)) out.emplace_back(s);
  return out;
}

}  // namespace kiln::ops
