#include "tests/engine/reference.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion.hpp"
#include "ops/expr.hpp"
#include "ops/op.hpp"
#include "tests/support.hpp"

namespace kiln::test {

std::int64_t broadcast_offset(std::int64_t i, const Shape& shape, const Shape& src) {
  std::int64_t off = 0, stride = 1;
  const std::size_t lead = shape.size() - src.size();
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::int64_t c = i % shape[d];
    i /= shape[d];
    if (d < lead) continue;
    if (src[d - lead] != 1) off += c * stride;
    stride *= src[d - lead];
  }
  return off;
}

namespace {

// A row op's input as [outer, C, inner]: C along the op's axis (every element for all_axes).
struct RowView {
  std::int64_t outer = 1, C = 1, inner = 1;
  std::int64_t at(std::int64_t o, std::int64_t c, std::int64_t i) const {
    return (o * C + c) * inner + i;
  }
};

RowView row_view(const Graph& g, int id) {
  const auto& n = g.node(id);
  const Shape& xs = g.node(std::get<int>(n.args[0])).shape;
  const std::int64_t rank = std::int64_t(xs.size()), numel = numel_of(xs);
  RowView v;
  if (ops::all_axes(n.attrs) || rank == 0) {
    v.C = numel;
    return v;
  }
  // Several axes (adjacent: infer_row refuses others) are one row of their extents' product.
  const std::vector<std::int64_t> axes = op_def(g, n.op).reduces
                                             ? ops::reduce_axes(n.attrs, rank)
                                             : std::vector<std::int64_t>{ops::axis_of(n.attrs)};
  const std::int64_t a = (axes.back() + rank) % rank;
  for (std::int64_t d : axes) v.C *= xs[std::size_t((d + rank) % rank)];
  for (std::int64_t d = a + 1; d < rank; ++d) v.inner *= xs[std::size_t(d)];
  v.outer = v.C * v.inner ? numel / (v.C * v.inner) : 0;
  return v;
}

// v (a whole number) wrapped into integer dtype t's range, two's complement: exact for i32;
// i64 values are left as they are (the tests keep them far below 2^53).
double wrapped(DType t, double v) {
  if (t != DType::i32) return v;
  v = std::fmod(v, 4294967296.0);
  return v >= 2147483648.0 ? v - 4294967296.0 : v < -2147483648.0 ? v + 4294967296.0 : v;
}

std::map<std::string, NodeReference>& node_references() {
  static std::map<std::string, NodeReference> refs;
  return refs;
}

using Values = std::vector<std::vector<double>>;
using Lookup = std::function<const std::vector<double>&(int)>;

// Node `id` computed in fp64 from its arguments' values (`arg`). `mag` (if given) gets, per
// element, the largest magnitude among its operands (for a row op: in its row).
std::vector<double> compute(const Graph& g, int id, const Lookup& arg,
                            std::vector<double>* mag = nullptr) {
  const auto& n = g.node(id);
  std::vector<double> out(std::size_t(numel_of(n.shape)));
  const auto& op = op_def(g, n.op);
  if (const NodeReference whole = node_reference(n.op)) return whole(g, id, arg, mag);
  if (op.fusion.kind == ops::FusionKind::view) {  // a reshape: the same elements in order
    if (mag) *mag = std::vector<double>(out.size(), 0.0);
    return arg(std::get<int>(n.args[0]));
  }
  if (op.row_reference) {  // a row op or a scan, along its axis
    const int x = std::get<int>(n.args[0]);
    const auto& xv = arg(x);
    const RowView rv = row_view(g, id);
    const std::int64_t C = rv.C, inner = rv.inner, outer = rv.outer;
    const double* w = n.args.size() > 1 ? arg(std::get<int>(n.args[1])).data() : nullptr;
    const double* b = n.args.size() > 2 ? arg(std::get<int>(n.args[2])).data() : nullptr;
    if (mag) mag->assign(out.size(), 0);
    std::vector<double> row(static_cast<std::size_t>(C)), res(row.size());
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        double m = 0;  // f32 errors of a row op scale with its row's largest element
        for (std::int64_t c = 0; c < C; ++c) {
          row[std::size_t(c)] = xv[std::size_t(rv.at(o, c, i))];
          m = std::max(m, std::fabs(row[std::size_t(c)]));
        }
        op.row_reference(row.data(), C, w, b, n.attrs, res.data());
        for (std::int64_t c = 0; c < (op.reduces ? 1 : C); ++c) {
          const std::size_t at = std::size_t(op.reduces ? o * inner + i : rv.at(o, c, i));
          out[at] = res[std::size_t(c)];
          if (mag) (*mag)[at] = m;
        }
      }
    return out;
  }
  std::vector<const std::vector<double>*> tensors;
  for (const auto& a : n.args)
    if (std::holds_alternative<int>(a)) tensors.push_back(&arg(std::get<int>(a)));
  // Integer arithmetic (and an integer cast of an integer) wraps; a float cast to an integer
  // saturates where the plan stores it (round_to).
  const bool integer =
      is_integer(n.dtype) && (n.op != "cast" || is_integer(g.node(std::get<int>(n.args[0])).dtype));
  const std::vector<double> attrs = ops::attr_scalars(op, n.attrs);
  for (std::size_t i = 0; i < out.size(); ++i) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // a custom op takes up to 8
    std::size_t k = 0, t = 0;
    for (const auto& x : n.args) {
      if (std::holds_alternative<double>(x))
        a[k++] = std::get<double>(x);
      else
        a[k++] = (*tensors[t++])[std::size_t(
            broadcast_offset(std::int64_t(i), n.shape, g.node(std::get<int>(x)).shape))];
    }
    for (double v : attrs) a[k++] = v;
    out[i] = op.expr                                  ? op.expr->evaluate(a)
             : integer && op.int_reference != nullptr ? op.int_reference(a[0], a[1], a[2])
                                                      : op.reference(a[0], a[1], a[2]);
    if (integer) out[i] = wrapped(n.dtype, out[i]);
    if (mag) {  // an unset clamp bound is infinite: not an operand's magnitude
      double m = 0;
      for (double x : a) m = std::isfinite(x) ? std::max(m, std::fabs(x)) : m;
      mag->push_back(m);
    }
  }
  return out;
}

std::vector<double> load(const Graph::Node& n, const HostInputs& inputs) {
  const auto& bytes = inputs.at(n.name);
  std::vector<double> out(bytes.size() / size_of(n.dtype));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = load_element(n.dtype, bytes.data() + i * size_of(n.dtype));
  return out;
}

void round_to(DType t, std::vector<double>& v) {
  unsigned char bytes[8];
  for (double& x : v) store_element(t, x, bytes), x = load_element(t, bytes);
}

// How far (relative to its magnitude and its operands') a node's value in a kernel may sit from
// the fp64 one: f32 evaluation errors, but attention over f16/bf16 rounds its probabilities to
// that dtype before P.V, each by at most the unit roundoff u (2^-11, 2^-8), which moves the
// result by at most u max|v| (the sum it divides by is of the unrounded ones). Over a long row
// those errors partly cancel; over a row of a few keys they need not, so the whole bound. Too
// small a nudge hides a value that may land either side of a rounding or a cast's truncation.
double jitter_of(const Graph& g, int id) {
  const auto& n = g.node(id);
  if (n.op != "attention") return 0x1p-20;
  const DType p = g.node(std::get<int>(n.args[0])).dtype;
  return p == DType::f16 ? 0x1p-11 : p == DType::bf16 ? 0x1p-8 : 0x1p-20;
}

}  // namespace

bool register_node_reference(const char* op, NodeReference ref) {
  return node_references().emplace(op, ref).second;
}

NodeReference node_reference(const std::string& op) {
  const auto it = node_references().find(op);
  return it == node_references().end() ? nullptr : it->second;
}

std::vector<std::vector<double>> evaluate(const Graph& g, const HostInputs& inputs) {
  Values vals(g.nodes().size());
  const Lookup arg = [&](int id) -> const std::vector<double>& { return vals[std::size_t(id)]; };
  for (std::size_t id = 0; id < g.nodes().size(); ++id) {
    const auto& n = g.nodes()[id];
    vals[id] = n.op == "input" ? load(n, inputs) : compute(g, int(id), arg);
  }
  return vals;
}

namespace {

// eq and ne of a value and a number (or a value of its shape) within 2^-14 of their magnitude of
// each other: equal in a jittered model, so that the comparison is in doubt where the plan's f32
// may find them equal and fp64 does not (a tanh saturating to exactly 1 where fp64 gives 1 -
// 4e-9). With `casts`, a float cast to an integer of a value as near a whole number (and within
// 2^-10 of it) is that number in about half the patterns, element by element (seeded by
// `jitter`): two snapped together can cancel downstream where the GPU snapped one (seed 551845).
void knife_edges(const Graph& g, int id, const Lookup& arg, std::vector<double>& v, int jitter,
                 bool casts) {
  const Graph::Node& n = g.node(id);
  const bool cast = n.op == "cast" && is_integer(n.dtype) &&
                    is_float(g.node(std::get<int>(n.args[0])).dtype);
  if (!cast && n.op != "eq" && n.op != "ne") return;
  const std::vector<double>& a = arg(std::get<int>(n.args[0]));
  if (cast) {
    std::mt19937_64 rng{std::uint64_t(jitter) * 977 + std::uint64_t(id)};
    for (std::size_t i = 0; casts && i < v.size() && a.size() == v.size(); ++i) {
      const double w = std::round(a[i]);
      const double band = std::min(0x1p-14 * (std::fabs(a[i]) + std::fabs(w)), 0x1p-10);
      if ((rng() & 1) && std::fabs(a[i] - w) <= band) v[i] = w;
    }
    return;
  }
  const double* number = std::get_if<double>(&n.args[1]);
  const std::vector<double>* b = number ? nullptr : &arg(std::get<int>(n.args[1]));
  if (a.size() != v.size() || (b && b->size() != v.size())) return;  // broadcast: left as is
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double y = b ? (*b)[i] : *number;
    if (std::fabs(a[i] - y) <= 0x1p-14 * (std::fabs(a[i]) + std::fabs(y)))
      v[i] = n.op == "eq" ? 1.0 : 0.0;
  }
}

}  // namespace

std::vector<std::vector<double>> evaluate_plan(const Graph& g, const HostInputs& inputs, bool fused,
                                               int jitter, int only) {
  // Each value read or computed moves by +-2^-20 of its magnitude plus of its largest operand's
  // (f32 evaluation errors are about that: a few ulps, more where the op cancels, as 1 + tanh
  // does in gelu). Directions: alternating along the row (jitter 1: what moves x - mean in a norm
  // most; 9 the other way round, for a row of two where only one of the two moves a norm's
  // output toward a rounding midpoint), all up (2), all down (3), up at even node ids only (4)
  // or odd ones only (5: a flip in one node and the opposite one downstream), random (6 to 8),
  // or (10) the values whose error is coarser than f32's (attention's over f16/bf16) toward 0,
  // stopping there, and nothing else: such a value whose nudge spans 0 may be 0 on the GPU,
  // where cos, abs or a square reach an extreme no nudge up or down reaches (cos(0) = 1).
  std::mt19937_64 rng{std::uint64_t(jitter)};
  auto perturb = [&](int id, std::vector<double>& v, const std::vector<double>& mag,
                     double by = 0x1p-20) {
    if (jitter == 0 || !is_float(g.node(id).dtype) || (only >= 0 && id != only)) return;
    if (jitter == kTowardZero && by <= 0x1p-20) return;
    const bool even_node = id % 2 == 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double step = by * (std::fabs(v[i]) + (i < mag.size() ? mag[i] : 0.0));
      if (jitter == kTowardZero) {
        v[i] = std::fabs(v[i]) <= step ? 0.0 : v[i] - std::copysign(step, v[i]);
        continue;
      }
      const bool up = jitter == 1   ? i % 2 == 0
                      : jitter == 9 ? i % 2 == 1
                      : jitter == 2 ? true
                      : jitter == 3 ? false
                      : jitter == 4 ? even_node
                      : jitter == 5 ? !even_node
                                    : (rng() & 1) != 0;
      v[i] += up ? step : -step;
    }
  };
  Values stored(g.nodes().size());  // what the plan's kernels write, rounded to its dtype
  for (std::size_t id = 0; id < g.nodes().size(); ++id)
    if (g.nodes()[id].op == "input") {
      stored[id] = load(g.nodes()[id], inputs);
      perturb(int(id), stored[id], {});
    }
  const std::vector<FusedGroup> groups = fuse(g, fused);
  const auto aliases = view_aliases(g, groups);
  // A view sharing memory reads what is stored there, reordered as the view reads it.
  const Lookup in_memory = [&](int id) -> const std::vector<double>& {
    return stored[std::size_t(id)];
  };
  std::map<int, std::size_t> parts_left;  // a concat's result is whole once its last part is in
  const auto read_views = [&] {
    for (const auto& [view, src] : aliases) {
      bool ready = stored[std::size_t(view)].empty();  // a gather view reads its indices too
      for (const auto& a : g.node(view).args)
        if (const int* id = std::get_if<int>(&a))
          ready = ready && !stored[std::size_t(*id)].empty() && !parts_left[*id];
      if (ready) stored[std::size_t(view)] = compute(g, view, in_memory);
    }
  };
  for (const FusedGroup& grp : groups) {
    read_views();
    std::map<int, std::vector<double>> local;  // values inside the kernel: f32, not rounded
    const Lookup arg = [&](int id) -> const std::vector<double>& {
      auto it = local.find(id);
      return it != local.end() ? it->second : stored[std::size_t(id)];
    };
    auto step = [&](int id) {
      std::vector<double> mag;
      std::vector<double> v;
      const auto& op = op_def(g, g.node(id).op);
      if (op.row_reference && jitter != 0) {
        // A row op's own f32 arithmetic (its sum, mean, max) errs by a few ulps of the row's
        // largest element; x - mean amplifies that by 1/std when a row is nearly constant.
        // Model it as the row's elements read 2^-22 * (|x| + row max) off, even if stored exactly.
        const int x = std::get<int>(g.node(id).args[0]);
        std::vector<double> xv = arg(x), row_max(xv.size());
        const RowView rv = row_view(g, id);
        for (std::int64_t o = 0; o < rv.outer; ++o)
          for (std::int64_t i = 0; i < rv.inner; ++i) {
            double m = 0;
            for (std::int64_t c = 0; c < rv.C; ++c)
              m = std::max(m, std::fabs(xv[std::size_t(rv.at(o, c, i))]));
            for (std::int64_t c = 0; c < rv.C; ++c) row_max[std::size_t(rv.at(o, c, i))] = m;
          }
        perturb(id, xv, row_max, 0x1p-22);
        v = compute(
            g, id, [&](int a) -> const std::vector<double>& { return a == x ? xv : arg(a); }, &mag);
      } else {
        v = compute(g, id, arg, &mag);
      }
      perturb(id, v, mag, jitter_of(g, id));
      if (jitter != 0) knife_edges(g, id, arg, v, jitter, only < 0 && jitter != kTowardZero);
      if (g.node(id).op == "cast")
        round_to(g.node(id).dtype, v);  // a cast rounds even inside a kernel
      local[id] = std::move(v);
    };
    for (int id : grp.steps) {
      step(id);
      // A prologue an anchor loads (attention's q) lands in its tile at the value's dtype.
      if (id == grp.x && grp.anchor && grp.anchor->fusion.loads_prologue)
        round_to(g.node(id).dtype, local[id]);
    }
    if (grp.part >= 0) {  // a concat's kernel writes its operands into their windows
      const int c = grp.anchor_node;
      if (!parts_left.count(c)) parts_left[c] = g.node(c).args.size();
      for (int i = grp.part; i < grp.part + grp.parts; ++i) {
        --parts_left[c];
        std::vector<double> v = arg(std::get<int>(g.node(c).args.at(std::size_t(i))));
        round_to(g.node(c).dtype, v);
        place_concat_part(g, g.node(c), std::size_t(i), v, stored[std::size_t(c)]);
      }
      continue;
    }
    if (grp.anchor) step(grp.anchor_node);
    for (int v : grp.epilogue_views) local[v] = compute(g, v, arg);  // the kernel's index math
    for (int id : grp.epilogue_steps) step(id);
    // Outputs beside the anchor: a slice of a product's columns its kernel writes, a result
    // joining it (attention_lse).
    for (int id : grp.outputs)
      if (!local.count(id)) step(id);
    for (int id : grp.outputs) {
      stored[std::size_t(id)] = arg(id);
      round_to(g.node(id).dtype, stored[std::size_t(id)]);
    }
  }
  read_views();
  return stored;
}

namespace {

// Where the plan rounds to f16/bf16: the narrow values its kernels store, and casts to them.
std::vector<int> rounding_points(const Graph& g, bool fused) {
  std::vector<int> out;
  auto narrow = [&](int i) { return g.node(i).dtype != DType::f32 && is_float(g.node(i).dtype); };
  for (const FusedGroup& grp : fuse(g, fused)) {
    for (const std::vector<int>* ids : {&grp.steps, &grp.epilogue_steps})
      for (int id : *ids)
        if (g.node(id).op == "cast" && narrow(id)) out.push_back(id);
    if (grp.x >= 0 && grp.anchor && grp.anchor->fusion.loads_prologue && narrow(grp.x) &&
        g.node(grp.x).op != "cast")
      out.push_back(grp.x);  // operand 0 rounded as its tile lands
    for (int id : grp.outputs)
      if (narrow(id) && g.node(id).op != "cast") out.push_back(id);
  }
  return out;
}

}  // namespace

PlanModel model_plan(const Graph& g, const HostInputs& inputs, bool fused) {
  PlanModel out;
  out.model = evaluate_plan(g, inputs, fused);
  for (int jitter : {1, 2, 3, 4, 5, 6, 7, 8, 9, kTowardZero})
    out.jittered.push_back(evaluate_plan(g, inputs, fused, jitter));
  const std::size_t patterns = out.jittered.size();
  // A rounding that goes the other way in one place, everything else exact: the patterns
  // above can cancel it (a nudge down downstream of the flip up, through abs or a subtraction).
  // Only where some pattern rounded the value differently is the rounding in doubt.
  for (int id : rounding_points(g, fused)) {
    const auto& m = out.model[std::size_t(id)];
    bool doubt = m.empty();  // a cast inside a kernel: not stored, so not seen; assume doubt
    for (std::size_t j = 0; j < patterns && !doubt; ++j)
      doubt = out.jittered[j][std::size_t(id)] != m;
    if (!doubt) continue;
    for (int jitter : {2, 3}) out.jittered.push_back(evaluate_plan(g, inputs, fused, jitter, id));
  }
  return out;
}

double PlanModel::sensitivity(int o, std::size_t i) const {
  double s = 0;
  for (const auto& j : jittered)
    s = std::max(s, std::fabs(j[std::size_t(o)][i] - model[std::size_t(o)][i]));
  return s;
}

}  // namespace kiln::test
