#pragma once
/// \file
/// Op graphs: build one in C++ (operators on kiln::Value) or load the JSON format of
/// docs/graph-format.md; a kiln::Plan fuses it into kernels.

#include <kiln/error.hpp>
#include <kiln/ops.hpp>
#include <kiln/template.hpp>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln {

class Graph;

/// A value of a graph under construction. Arithmetic on values adds nodes to their graph.
class Value {
 public:
  Value() = default;
  Value(Graph* g, int id) : graph_(g), id_(id) {}
  Graph* graph() const { return graph_; }
  int id() const { return id_; }

 private:
  Graph* graph_ = nullptr;
  int id_ = -1;
};

using GraphArg = std::variant<Value, double>;

namespace ops {
struct OpDef;
}
namespace detail {
struct GraphAccess;
}

/// A custom elementwise op a graph declares (docs/ops.md, "Custom ops"): `expr` is one
/// expression over `operands` (`x * tanhf(log1pf(expf(x)))`), parsed, never pasted as code.
/// Nodes use it by `name`; it fuses like kiln's own elementwise ops.
struct CustomOp {
  std::string name;
  std::vector<std::string> operands;
  std::string expr;
};

class Graph {
 public:
  /// One node: an input (op "input") or an op applied to earlier nodes and scalars.
  struct Node {
    std::string name;
    std::string op;
    std::vector<std::variant<int, double>> args;  ///< node ids or scalars
    Attrs attrs;
    Shape shape;  ///< inferred; -1 for a dynamic dim
    DType dtype = DType::f32;
  };

  /// An input; a dim of -1 is dynamic ("?" in JSON).
  Value input(const std::string& name, const Shape& shape, DType dtype);
  /// Adds op `op` on `args`; infers its shape and dtype (ShapeError/DtypeError naming the
  /// node). An empty name gets "t<N>".
  Value add(std::string_view op, const std::vector<GraphArg>& args, const Attrs& attrs = {},
            std::string name = "");
  /// Declares custom op `op` for this graph's nodes (before the nodes that use it). GraphError
  /// naming it for a name taken (by kiln's ops or an earlier custom op) or not an identifier,
  /// bad operands, or an expression outside the grammar of docs/ops.md.
  void define_op(const CustomOp& op);
  const std::vector<CustomOp>& custom_ops() const { return custom_ops_; }
  /// Declares user template `t` (docs/templates.md; it names its output with
  /// Template::output) as op `name` of this graph: a node of it is a kernel of its own, its
  /// arguments the template's other parameters in order. GraphError for a name taken or not an
  /// identifier, or a template whose output is not one of its tensor parameters.
  void define_template(const std::string& name, const Template& t);
  /// The templates declared, by op name.
  const std::vector<std::pair<std::string, std::shared_ptr<const Template>>>& templates() const {
    return templates_;
  }

  /// Marks `v` as an output; a non-empty `name` renames its node (the name outputs go by in
  /// Plan::run and `kiln run`). GraphError if the name is taken or invalid.
  void output(Value v, const std::string& name = "");

  /// Names are 1 to kMaxNameBytes bytes with no control characters; they label nodes in
  /// messages, tables and maps of inputs and outputs, and never reach kernel source or keys.
  static constexpr std::size_t kMaxNameBytes = 256;

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const Node& node(int id) const { return nodes_.at(std::size_t(id)); }
  int find(std::string_view name) const;  ///< -1 if absent

  /// The JSON format of docs/graph-format.md. Anything malformed is a GraphError naming the node
  /// and field.
  static Graph parse(std::string_view json, const std::string& origin = "graph");
  static Graph load(const std::string& path);
  std::string to_json() const;
  void save(const std::string& path) const;

 private:
  friend struct detail::GraphAccess;
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
  std::vector<CustomOp> custom_ops_;
  std::vector<std::pair<std::string, std::shared_ptr<const Template>>> templates_;
  std::vector<std::shared_ptr<const ops::OpDef>> custom_defs_;  ///< custom_ops_' entries
};


// Operators and op functions on graph values.
Value operator+(Value a, GraphArg b);
Value operator-(Value a, GraphArg b);
Value operator*(Value a, GraphArg b);
Value operator/(Value a, GraphArg b);
Value operator+(double a, Value b);
Value operator-(double a, Value b);
Value operator*(double a, Value b);
Value operator/(double a, Value b);
Value operator-(Value a);
/// Any op of the catalog on graph values: kiln::apply("silu", {x}).
Value apply(std::string_view op, const std::vector<GraphArg>& args, const Attrs& attrs = {});
#define KILN_GRAPH_UNARY(op) \
  inline Value op(Value x) { return apply(#op, {x}); }
#define KILN_GRAPH_BINARY(op) \
  inline Value op(GraphArg a, GraphArg b) { return apply(#op, {a, b}); }
// clang-format off
KILN_GRAPH_UNARY(exp)
KILN_GRAPH_UNARY(log)
KILN_GRAPH_UNARY(sqrt)
KILN_GRAPH_UNARY(rsqrt)
KILN_GRAPH_UNARY(sin)
KILN_GRAPH_UNARY(cos)
KILN_GRAPH_UNARY(gelu_tanh)
KILN_GRAPH_UNARY(tanh)
KILN_GRAPH_UNARY(sigmoid)
KILN_GRAPH_UNARY(relu)
KILN_GRAPH_UNARY(gelu)
KILN_GRAPH_UNARY(silu)
KILN_GRAPH_UNARY(softplus)
KILN_GRAPH_UNARY(abs)
KILN_GRAPH_UNARY(neg)
KILN_GRAPH_UNARY(softmax)
KILN_GRAPH_UNARY(log_softmax)
KILN_GRAPH_BINARY(pow)
KILN_GRAPH_BINARY(maximum)
KILN_GRAPH_BINARY(minimum)
KILN_GRAPH_BINARY(eq)
KILN_GRAPH_BINARY(ne)
KILN_GRAPH_BINARY(lt)
KILN_GRAPH_BINARY(le)
KILN_GRAPH_BINARY(gt)
KILN_GRAPH_BINARY(ge)
// clang-format on
#undef KILN_GRAPH_UNARY
#undef KILN_GRAPH_BINARY
/// cond ? a : b, elementwise (cond a bool mask, or true where nonzero).
inline Value where(GraphArg cond, GraphArg a, GraphArg b) { return apply("where", {cond, a, b}); }
/// x limited to [min, max]; either bound may be left out.
inline Value clamp(Value x, std::optional<double> min, std::optional<double> max) {
  Attrs a;
  if (min) a.set("min", *min);
  if (max) a.set("max", *max);
  return apply("clamp", {x}, a);
}
/// x converted to `to` (rounded as a store to that dtype rounds).
inline Value cast(Value x, DType to) { return apply("cast", {x}, Attrs().set("dtype", to)); }
/// x's elements, row-major, in `shape` (one extent may be -1): x's memory where the plan
/// allows, else a copy.
inline Value reshape(Value x, std::vector<std::int64_t> shape) {
  return apply("reshape", {x}, Attrs().set("shape", std::move(shape)));
}
/// x[..., start:stop, ...] along `axis` (Python indexes: a negative one counts from the end).
/// A slice of a matrix product's columns (QKV) is written by the product's kernel; any other
/// is a copy.
inline Value slice(Value x, std::int64_t axis, std::int64_t start, std::int64_t stop) {
  return apply("slice", {x}, Attrs().set("axis", axis).set("start", start).set("stop", stop));
}
/// `xs` laid side by side along `axis` (torch.cat): one dtype, every other dim equal; each
/// operand's kernel writes its part (computed there where elementwise ops produce it).
inline Value concat(const std::vector<Value>& xs, std::int64_t axis = 0) {
  return apply("concat", std::vector<GraphArg>(xs.begin(), xs.end()), Attrs().set("axis", axis));
}
/// `xs` (one shape) stacked along a new dim `axis` (torch.stack): each reshaped with a dim of
/// 1 there, then concatenated. ShapeError for an axis outside [-(rank + 1), rank].
Value stack(const std::vector<Value>& xs, std::int64_t axis = 0);
/// a[..., M, K] @ b[..., K, N] (batch dims broadcast; `tf32` for f32 on plain TF32).
inline Value matmul(Value a, Value b, bool tf32 = false) {
  return apply("matmul", {a, b}, Attrs().set("tf32", tf32));
}
/// x[..., K] @ w[N, K]ᵀ (+ bias[N]), as torch.nn.functional.linear.
inline Value linear(Value x, Value w, std::optional<Value> bias = std::nullopt, bool tf32 = false) {
  std::vector<GraphArg> args = {x, w};
  if (bias) args.push_back(*bias);
  return apply("linear", args, Attrs().set("tf32", tf32));
}
/// The rows of a table weight [rows, dim] that `ids` (i32 or i64) picks: ids' shape plus dim,
/// read in place by the kernel that consumes it (torch.nn.functional.embedding).
inline Value embedding(Value weight, Value ids) { return apply("embedding", {weight, ids}); }
/// x's entries picked along `axis` by `index` (torch.gather).
inline Value gather(Value x, std::int64_t axis, Value index) {
  return apply("gather", {x, index}, Attrs().set("axis", axis));
}
/// x's slices along `axis` at the positions a 1-D `index` lists (torch.index_select).
inline Value index_select(Value x, std::int64_t axis, Value index) {
  return apply("index_select", {x, index}, Attrs().set("axis", axis));
}
/// The position (i64) of the largest element along `axis` (torch.argmax): the first of equal
/// ones; a NaN counts as the largest.
inline Value argmax(Value x, std::int64_t axis = -1, bool keepdim = false) {
  return apply("argmax", {x}, Attrs().set("axis", axis).set("keepdim", keepdim));
}
/// The position (i64) of the smallest element along `axis` (torch.argmin).
inline Value argmin(Value x, std::int64_t axis = -1, bool keepdim = false) {
  return apply("argmin", {x}, Attrs().set("axis", axis).set("keepdim", keepdim));
}
/// dst with src written over dst[..., start:start+len, ...] along `axis`, in dst's own memory
/// (the result is dst, updated in place: a KV cache's append); `start` counts from the end if
/// negative.
inline Value slice_update(Value dst, Value src, std::int64_t axis, std::int64_t start) {
  return apply("slice_update", {dst, src}, Attrs().set("axis", axis).set("start", start));
}
/// The same with the start read on the GPU from a one-element i32/i64 tensor: a new start needs
/// no new kernel.
inline Value slice_update(Value dst, Value src, std::int64_t axis, Value start) {
  return apply("slice_update", {dst, src, start}, Attrs().set("axis", axis));
}
/// Reductions "sum", "mean", "max", "min", "var", "std" over `axis` (default: the last).
inline Value reduce(std::string_view op, Value x, bool keepdim = false, std::int64_t axis = -1) {
  Attrs a;
  a.set("keepdim", keepdim);
  if (axis != -1) a.set("axis", axis);
  return apply(op, {x}, a);
}
/// A reduction over several adjacent axes of x at once (`{1, 2}`; negative ones from the end).
inline Value reduce(std::string_view op, Value x, std::vector<std::int64_t> axes,
                    bool keepdim = false) {
  return apply(op, {x}, Attrs().set("keepdim", keepdim).set("axis", std::move(axes)));
}
/// var or std over `axes` with Bessel's `correction` (torch's: 1, the sample variance; 0, the
/// population's).
inline Value variance(std::string_view op, Value x, std::vector<std::int64_t> axes = {-1},
                      double correction = 1, bool keepdim = false) {
  return apply(op, {x},
               Attrs()
                   .set("keepdim", keepdim)
                   .set("axis", std::move(axes))
                   .set("correction", correction));
}
/// A reduction over every element of x: shape [] (all ones with keepdim).
inline Value reduce_all(std::string_view op, Value x, bool keepdim = false) {
  return apply(op, {x}, Attrs().set("keepdim", keepdim).set("axis", "all"));
}
/// layer_norm / rms_norm over the last axis, with optional weight and bias ([C]).
inline Value norm(std::string_view op, Value x, std::vector<GraphArg> affine = {},
                  double eps = 1e-5) {
  std::vector<GraphArg> args = {x};
  for (auto& v : affine) args.push_back(v);
  return apply(op, args, Attrs().set("eps", eps));
}

namespace detail {
class PlanImpl;
struct PlanAccess;
}  // namespace detail

/// A kernel of a plan: its name, the graph nodes it computes, its launch shape.
struct PlanKernel {
  std::string name;  ///< "<stem>__dynamic" where it depends on a dynamic dim other than a batch
  std::vector<std::string> ops;  ///< node names, in order
  unsigned grid = 0;             ///< 0 where a dynamic dim sets it
  unsigned block = 0;            ///< 0 where a dynamic dim sets it
};

/// A graph fused into kernels, ready to run on an engine.
class Plan {
 public:
  explicit Plan(const Graph& graph);  ///< fuses (KILN_DISABLE_FUSION=1: one kernel per op)
  Plan(const Graph& graph, bool fuse);
  ~Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;

  /// The kernels, specialized for contiguous, 256-byte-aligned tensors of the graph's shapes,
  /// for `arch` (sm_90 and later split a long row between blocks).
  std::vector<PlanKernel> kernels(const std::string& arch = "sm_90a") const;
  /// Checks `inputs` against the graph with no GPU: every input given, dtypes, shapes, dynamic
  /// dims that agree (GraphError, DtypeError or ShapeError naming the input). Views may have no
  /// memory (data 0).
  void check(const std::map<std::string, TensorView>& inputs) const;
  /// The outputs a run on `inputs` makes, by name: shapes (dynamic dims bound) and dtypes, no
  /// memory. Checks the inputs as check() does; needs no GPU.
  std::map<std::string, TensorView> outputs(const std::map<std::string, TensorView>& inputs) const;
  /// The graph the plan was made from.
  const Graph& graph() const;
  /// Specializes and compiles every kernel (works on an offline engine).
  std::vector<KernelRecord> compile(Engine& engine) const;
  /// Runs the plan. `inputs` and `outputs` map graph names to views; outputs missing from
  /// `outputs` are allocated and returned.
  std::map<std::string, Tensor> run(Engine& engine, const std::map<std::string, TensorView>& inputs,
                                    const std::map<std::string, TensorView>& outputs = {}) const;
  /// Like run, through a CUDA graph built at the first call and replayed after: when only the
  /// buffers change, the kernels' parameters are updated in the graph; when the kernels change
  /// (new shapes or layouts, another engine), it is rebuilt. Intermediates stay allocated
  /// between calls. One replay at a time per plan (calls are serialized).
  std::map<std::string, Tensor> replay(Engine& engine,
                                       const std::map<std::string, TensorView>& inputs,
                                       const std::map<std::string, TensorView>& outputs = {}) const;

 private:
  friend struct detail::PlanAccess;
  std::unique_ptr<detail::PlanImpl> impl_;
};

}  // namespace kiln
