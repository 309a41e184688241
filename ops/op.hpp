#pragma once
// The op catalog: for each op its operands, attribute schema, shape/dtype rule, fusion roles,
// the device functor it binds to in kernel_templates/kiln/ops.cuh (or the family computing it),
// its fp64 CPU reference and its doc. Each op file registers its ops (catalog.cpp lists them).

#include <kiln/attrs.hpp>
#include <kiln/op_schema.hpp>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
class Template;
}

namespace kiln::ops {

class Expr;

/// What an op is to the fusion pass (engine/passes/fusion.cpp asks nothing else of it;
/// docs/ops.md).
enum class FusionKind {
  chain,   ///< elementwise: fuses into chains, and into an anchor's prologue or epilogue
  anchor,  ///< a kernel of its own, computed by the family `FusionRoles::family` names
  view,    ///< its operand's memory read another way (ViewRule), a copy where it cannot be
};

/// How an op takes part in fusion. An anchor's kernel reads its operands from memory, except
/// its first (`x`) where it takes a prologue: the elementwise nodes computing x fuse into it.
/// Operands from `side_from` on are side operands (a norm's weight and bias, a product's bias):
/// read from memory, in the group's `extras`. With `epilogue`, the elementwise consumers of its
/// result (of its shape and depth) fuse into its kernel after it.
struct FusionRoles {
  FusionKind kind = FusionKind::chain;
  std::string_view family = {};  ///< an anchor's family (engine/families): "rows", "gemm", ...
  bool prologue = false;
  bool epilogue = false;
  std::size_t side_from = std::numeric_limits<std::size_t>::max();
  /// Its kernel can write a slice of its result's last axis as a window of the columns it
  /// computes (a product's: QKV), so that the slice needs no copy
  /// (engine/passes/fusion_windows.cpp).
  bool windows = false;
  /// Its kernel reads operands of any strides in place (a view such as a permute's result);
  /// false: each operand it reads is contiguous memory (a user's template), so a view it reads
  /// is copied first.
  bool strided = true;
  /// Its kernel reads a gather view (ViewRule::axis) in place, at the indices, in any operand
  /// slot but its side operands (kernel_templates/kiln/gather.cuh); false: such a view is
  /// copied before its kernel, or before the elementwise chain fused into it, reads it.
  bool gathers = false;
  /// Its result is its operand 0's memory (slice_update): its kernel writes part of it, no
  /// other memory is planned for it, and the fusion pass refuses a plan where a kernel reads
  /// operand 0's old value after the write.
  bool in_place = false;
  /// Its kernel can also store the value its prologue computes (x) as it computes it, where
  /// something outside the kernel reads x (engine/passes/fusion_hand_on.cpp): the row
  /// template's epilogue reads it after the row's value (a residual h = x + attn stored by
  /// layer_norm(h)'s kernel).
  bool hands_on = false;
  /// Its result is its operands laid side by side along an axis (concat): each operand gets a
  /// kernel of its own that writes it into its window of the result, computed there by its
  /// elementwise producers (engine/passes/fusion_parts.cpp), so that no operand produced in
  /// the plan is written anywhere else first.
  bool parts = false;
  /// Its kernel writes its result through any strides, so where the result's one reader is a
  /// view reordering its dims (a permute), the result is laid out so that the view is row-major
  /// (engine/passes/memory_order.cpp): attention's [B, H, S, D] stored as [B, S, H, D], which
  /// the output projection's reshape then reads in place.
  bool laid_out = false;
  /// Its result is one more output of the kernel of a node of op `joins` with the same operands
  /// and attribute values (engine/passes/fusion_join.cpp): attention_lse is written by the
  /// attention kernel that computes the rows it sums. Without such a node, its own kernel (its
  /// family's) computes it alone.
  std::string_view joins = {};
  /// Its result scales its operands 0 and 1 by its `scale` attribute only through their
  /// product (attention's q and k): a factor on either (a mul or div by a number that nothing
  /// else reads) folds into that scale, its node a step of the kernel, which reads the factor's
  /// operand instead (engine/passes/fusion_scale.cpp).
  bool folds_scale = false;
  /// Its kernel computes operand 0 (attention's q) as it loads it, from the elementwise chain
  /// that would otherwise write it in a kernel of its own and that nothing else reads
  /// (engine/passes/fusion_prologues.cpp): the chain's inputs are read instead, the first in
  /// operand 0's slot, the others after the epilogue's tensors, within `epilogue_tensors` and
  /// `epilogue_scalars` together with them. The value is rounded to operand 0's dtype.
  bool loads_prologue = false;
  /// The most tensors its epilogue reads and writes besides its result's own memory (the
  /// elementwise consumers it absorbs and their other operands), and the most scalars its
  /// body takes: a kernel whose parameter block has that many slots (attention's). A consumer
  /// past either stays a kernel of its own.
  std::size_t epilogue_tensors = std::numeric_limits<std::size_t>::max();
  std::size_t epilogue_scalars = std::numeric_limits<std::size_t>::max();
  /// The highest rank of a result whose epilogue its kernel indexes whatever the operands'
  /// strides (attention's: three batch dims, which then need no merging).
  std::size_t epilogue_rank = std::numeric_limits<std::size_t>::max();
  /// Its epilogue may also take consumers behind views of its result that only reorder and
  /// merge dims (permutes, reshapes merging adjacent dims: attention's [B, H, S, D] seen as
  /// [B, S, H·D]): its family indexes their tensors through the views' inverse
  /// (engine/passes/epilogue_views.cpp).
  bool epilogue_through_views = false;
};

/// One axis of a remap view (ViewRule::remap): the result's coordinate c along `axis` reads
/// x's entry (c - lo) / scale (floor), or the fill where that lies outside x's axis.
struct RemapAxis {
  std::size_t axis = 0;
  std::int64_t lo = 0, scale = 1;
};
struct Remap {
  std::vector<RemapAxis> axes;
  double fill = 0;
};

/// A view op's rule (FusionKind::view): where its result is read in its operand's memory, and
/// as what view of it.
struct ViewRule {
  enum class InPlace {
    never,     ///< a copy (or a window its operand's producer writes: `window`)
    arena,     ///< where its operand is a value the plan writes (contiguous) in its arena
    anywhere,  ///< whatever its operand's strides (permute, transpose)
  };
  InPlace in_place = InPlace::never;
  /// Its result is x's elements in row-major order (reshape): a copy may write the result seen
  /// in x's shape, whatever x's strides.
  bool row_major = false;
  /// The result (of shape `result`) as a view of `x`'s memory: its strides, and its data moved
  /// to its first element; none where x's layout does not allow one (reshape of a strided x:
  /// its copy then reads x as it lies, in row-major order).
  std::optional<TensorView> (*of)(const TensorView& x, const Shape& result,
                                  const Attrs& attrs) = nullptr;
  /// A slice of x's last axis that a kernel writing windows may write
  /// (engine/passes/fusion_windows.cpp): its first column; none for another slice. Null for views
  /// that are no such slice.
  std::optional<std::int64_t> (*window)(const Shape& x, const Attrs& attrs) = nullptr;
  /// A gather view's (gather, index_select, embedding: ops/gather.cpp): its result reads x (`of`
  /// gives x over the result's shape, stepping 0 along the indexed axis) at the indices its
  /// operand 1 holds, along x's axis `axis`; `index_view` is that tensor over the result's
  /// shape. Null for other views. A kernel reads it in place at the indices
  /// (kernel_templates/kiln/gather.cuh), checking each against the axis.
  std::size_t (*axis)(const Shape& x, const Attrs& attrs) = nullptr;
  TensorView (*index_view)(const TensorView& index, const Shape& result,
                           const Attrs& attrs) = nullptr;
  /// A remap view's (pad, upsample_nearest): its result reads x (`of` gives x over the result's
  /// shape, stepping 0 along the remapped axes) at positions computed from the result's
  /// coordinates, axis by axis (RemapAxis), with no index tensor; read in place like a gather
  /// view (kernel_templates/kiln/gather.cuh, Remap). Null for other views.
  Remap (*remap)(const Shape& x, const Attrs& attrs) = nullptr;
  /// Where set, node by node instead of `in_place`: a reshape that only inserts or removes
  /// unit dims is a view of any strides (`anywhere`), another only of contiguous memory.
  InPlace (*in_place_for)(const Shape& x, const Shape& result) = nullptr;
};

/// fp64 reference of a row op on one row of n values: writes n values (1 for a reduction).
/// `w` and `b` are the norms' weight and bias (null when absent); `attrs` the node's.
using RowReference = void (*)(const double* x, std::int64_t n, const double* w, const double* b,
                              const Attrs& attrs, double* out);

/// The extent a dynamic dim takes while a graph under construction infers shapes (a prime no
/// real shape uses; engine/ir/graph.cpp): an op whose result extent is arithmetic on operand
/// extents (concat's sum) must not mistake it for a size.
constexpr std::int64_t kDynamicStandIn = 999999937;

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

struct OpDef;

/// The shape and dtype of an op's result on `args` (data 0, strides empty): ShapeError,
/// DtypeError or ArgumentError naming the op and every operand.
using InferRule = TensorView (*)(const OpDef& op, const std::vector<Operand>& args,
                                 const Attrs& attrs);

struct OpDef {
  std::string_view name;
  std::vector<std::string_view> operands;  ///< names in messages: {"a", "b"}
  std::string_view functor;                ///< "kiln::op::Add"
  Rule rule = Rule::arithmetic;
  Domain domain;
  /// fp64 reference on (up to three) operand values; clamp gets (x, min, max).
  double (*reference)(double a, double b, double c) = nullptr;
  FusionRoles fusion = {};
  /// Its result's shape and dtype; null: the elementwise rule (NumPy broadcasting, `rule`).
  InferRule infer = nullptr;
  ViewRule view = {};  ///< a view op's (FusionKind::view)
  /// The order of its result's dims in memory, outermost first, given its operands' views (a
  /// convolution of channels_last x: {0, 2, 3, 1}); empty or null: row-major. Elementwise ops
  /// after it keep the order (engine/passes/memory_order.cpp).
  std::vector<std::size_t> (*memory_order)(const std::vector<TensorView>& operands) = nullptr;
  RowReference row_reference = nullptr;  ///< row ops
  bool reduces = false;                  ///< writes one value per row
  std::size_t min_operands = 0;          ///< when some operands are optional (norms); 0 = all
  /// Its last operand repeats (concat's xs): it takes min_operands or more, any number.
  bool variadic = false;
  /// A custom op's expression (engine/ir/custom_ops.hpp): codegen renders its functor from it,
  /// references evaluate it; null for kiln's own ops.
  const Expr* expr = nullptr;
  /// A user template's node (an anchor of the "template" family): the template; null otherwise.
  const Template* tmpl = nullptr;
  /// Its attribute schema (kiln/op_schema.hpp): JSON, Python and the eager signature read and
  /// write attributes through it. Operands from `min_operands` on are optional.
  std::vector<AttrSpec> attrs = {};
  std::string_view doc = {};     ///< one paragraph: what it computes
  std::string_view dtypes = {};  ///< its dtype rule; empty: `rule`'s (dtype_rule_doc)
  /// Its gradient rule: an empty slot, for the autodiff work to fill.
  const void* gradient = nullptr;
  /// Takes integer operands: an arithmetic op wrapping, dividing by floor, taking Python's
  /// remainder (kernel_templates/kiln/integer.cuh; its functor has int and long long
  /// overloads); a reduction (sum, max, min) computing exactly in the arg family.
  bool integers = false;
  /// fp64 reference on integer operands where it differs from `reference` (floor division);
  /// the result before wrapping to the dtype.
  double (*int_reference)(double a, double b, double c) = nullptr;
};

/// The dtype two operands of an elementwise op promote to: bool gives way to anything, i32 with
/// i64 is i64, two float dtypes as the arithmetic rule says; none for a float with an integer.
std::optional<DType> promote(DType a, DType b);

/// `op`'s schema: views into `op`.
OpSchema schema_of(const OpDef& op);
/// Dtype rule `rule` in a sentence (docs/ops.md's).
std::string_view dtype_rule_doc(Rule rule);
/// Checks `attrs` against `op`'s schema: ArgumentError (unknown_attr's message, hint included)
/// for an attribute it does not have, ArgumentError naming the op, the attribute and what it
/// takes for a value of another type or outside its range (DtypeError for an unknown dtype
/// name). Attributes a schema requires are the readers' to ask for (infer_result).
void check_attrs(const OpDef& op, const Attrs& attrs);

/// A norm's operands after x (weight, bias: float tensors of shape [channels], `along` saying
/// which dim of x that is) and its eps (> 0): ShapeError, DtypeError or ArgumentError naming
/// the call otherwise.
void check_affine(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs,
                  std::int64_t channels, std::string_view along);

/// The op called `name`; ArgumentError listing the known ops otherwise.
const OpDef& find_op(std::string_view name);
/// Every op, in catalog order.
const std::vector<OpDef>& all_ops();

/// "matmul(a: f32[64,128], b: f32[256,32])": an op call in messages.
std::string describe_args(const OpDef& op, const std::vector<Operand>& args);

/// Operand `i` of `op`'s call, a tensor: ArgumentError naming the call and the operand
/// otherwise (ShapeError for a negative extent or an element count past int64).
const TensorView& tensor_operand(const OpDef& op, const std::vector<Operand>& args, std::size_t i);

/// Operand x of `op`'s call, a float tensor: ArgumentError (not a tensor) or DtypeError (bool)
/// naming the call otherwise.
const TensorView& float_x(const OpDef& op, const std::vector<Operand>& args);

/// The memory_order of an op that keeps x's (operand 0's) memory format, as torch's conv2d and
/// group_norm do: N, the spatial dims, then C where x [N, C, *spatial] is channels_last (C
/// contiguous, C and the spatial extent above 1); empty (row-major) otherwise.
std::vector<std::size_t> keeps_channels_last(const std::vector<TensorView>& operands);

/// The result of a row op (reduction, softmax, norm): ShapeError/DtypeError naming every
/// operand.
TensorView infer_row(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs);

/// The result of a matrix product (matmul, linear): ShapeError/DtypeError naming every operand.
TensorView infer_gemm(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs);

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
/// A row op's integer axis, `fallback` when none is set or it is "all" (or a list).
std::int64_t axis_of(const Attrs& attrs, std::int64_t fallback = -1);
/// A reduction's axes over x of rank `rank`, from 0, ascending: every one for "all", each of a
/// list ("axis": [1, 2]), the one given, or the last when none is. Out-of-range axes are left
/// as given (negative ones resolved once); infer_row refuses them.
std::vector<std::int64_t> reduce_axes(const Attrs& attrs, std::int64_t rank);
/// The scalar a row kernel takes after its prologue's: a norm's eps, var and std's correction.
double row_scalar(const OpDef& op, const Attrs& attrs);

/// The kernel's operand slots: clamp's bounds become scalar operands (an absent bound an
/// infinity); every other op passes its args through.
std::vector<Operand> kernel_operands(const OpDef& op, const std::vector<Operand>& args,
                                     const Attrs& attrs);

}  // namespace kiln::ops
