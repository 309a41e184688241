#include "tests/engine/cases.hpp"

#include <fmt/format.h>

#include "ops/op.hpp"

namespace kiln::test {

Value nchw(Graph& g, const Shape& s, DType t, bool channels_last, const std::string& name) {
  if (!channels_last) return g.input(name, s, t);
  Shape nhwc = {s[0]};
  nhwc.insert(nhwc.end(), s.begin() + 2, s.end());
  nhwc.push_back(s[1]);
  std::vector<std::int64_t> dims = {0, std::int64_t(s.size()) - 1};
  for (std::size_t d = 1; d + 1 < s.size(); ++d) dims.push_back(std::int64_t(d));
  return apply("permute", {g.input(name, nhwc, t)}, Attrs().set("dims", dims));
}

const char* name_of(Layout l) {
  switch (l) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::strided:
      return "strided";
    case Layout::broadcast:
      return "broadcast";
    case Layout::scalar:
      return "scalar";
    case Layout::misaligned:
      return "misaligned";
  }
  return "?";
}

namespace {

OperandSpec tensor(Shape shape, DType t, Shape strides = {}, std::int64_t offset = 0) {
  OperandSpec s;
  s.view.shape = shape;
  s.view.strides = strides;
  s.view.dtype = t;
  s.offset = offset;
  std::int64_t span = 1;
  const Shape st = s.view.resolved_strides();
  for (std::size_t i = 0; i < shape.size(); ++i) span += (shape[i] - 1) * st[i];
  s.alloc = offset + span;
  return s;
}

OperandSpec scalar(double v) {
  OperandSpec s;
  s.scalar = true;
  s.value = v;
  return s;
}

// The operands of `op` (first operand dtype t, others `others`) in layout l.
std::vector<OperandSpec> operands(const ops::OpDef& op, DType t, DType cond, Layout l,
                                  std::int64_t R, std::int64_t C) {
  const std::size_t n = op.operands.size();
  std::vector<OperandSpec> out;
  for (std::size_t i = 0; i < n; ++i) {
    const DType dt = (op.rule == ops::Rule::select && i == 0) ? cond : t;
    switch (l) {
      case Layout::contiguous:
        out.push_back(tensor({R, C}, dt));
        break;
      case Layout::misaligned:
        out.push_back(tensor({R, C}, dt, {}, 1));
        break;
      case Layout::strided:  // the first operand is a transposed (column-major) view
        out.push_back(i == 0 ? tensor({R, C}, dt, {1, R}) : tensor({R, C}, dt));
        break;
      case Layout::broadcast:
        if (n == 1)
          out.push_back(tensor({R, C}, dt, {1, 0}));  // a [R] vector expanded along C
        else if (i == 0)
          out.push_back(tensor({R, 1}, dt));
        else if (i == 1)
          out.push_back(tensor({R, C}, dt));
        else
          out.push_back(tensor({C}, dt));
        break;
      case Layout::scalar:
        out.push_back(i == 1 ? scalar(0.75) : tensor({R, C}, dt));
        break;
    }
  }
  return out;
}

}  // namespace

std::vector<Case> sweep(std::int64_t R, std::int64_t C, bool with_misaligned) {
  std::vector<Case> cases;
  std::vector<Layout> layouts = {Layout::contiguous, Layout::strided, Layout::broadcast,
                                 Layout::scalar};
  if (with_misaligned) layouts.push_back(Layout::misaligned);
  for (const ops::OpDef& op : ops::all_ops()) {
    if (op.fusion.kind != ops::FusionKind::chain) continue;  // row ops have their own sweep
    for (DType t : kFloatDTypes) {
      std::vector<std::optional<DType>> targets = {std::nullopt};
      if (op.rule == ops::Rule::cast)
        targets = {DType::f32, DType::f16, DType::bf16, DType::boolean};
      for (Layout l : layouts) {
        if (l == Layout::scalar && op.operands.size() != 2) continue;
        for (auto to : targets) {
          Case c;
          c.op = op.name;
          c.operands = operands(op, t, DType::boolean, l, R, C);
          c.lo = op.domain.lo;
          c.hi = op.domain.hi;
          if (op.rule == ops::Rule::compare) c.step = 0.5;  // equal values do occur
          if (op.name == "clamp")
            c.attrs =
                l == Layout::strided ? Attrs{{"min", -1.0}} : Attrs{{"min", -1.0}, {"max", 1.5}};
          if (to) c.attrs.set("dtype", *to);
          c.label =
              fmt::format("{} {}{} {} [{}, {}]", op.name, kiln::name_of(t),
                          to ? fmt::format("->{}", kiln::name_of(*to)) : "", name_of(l), R, C);
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

std::vector<Graph> row_graphs(DType t, std::int64_t R, std::int64_t C) {
  std::vector<Graph> out;
  for (const ops::OpDef& op : ops::all_ops()) {
    if (op.fusion.family != "rows" || op.name == "group_norm") continue;  // over [N, C, ...]
    for (int variant = 0; variant < 4; ++variant) {
      if (variant == 3 && op.reduces) continue;
      Graph g;
      auto x = g.input("x", {R, C}, t);
      auto mask = g.input("mask", {C}, DType::f32);
      Value v = variant == 0 ? x : silu(x * 0.5 + mask);
      std::vector<GraphArg> args = {v};
      if (op.operands.size() == 3 && variant == 2) {
        args.push_back(g.input("w", {C}, t));
        args.push_back(g.input("b", {C}, DType::f32));
      }
      auto y = apply(op.name, args, Attrs().set("keepdim", variant == 1));
      if (variant == 3) g.output(y * 2.0 + x);
      g.output(y);
      out.push_back(g);
    }
  }
  return out;
}

std::vector<Graph> axis_graphs(DType t, const Shape& shape) {
  std::vector<Graph> out;
  const std::int64_t rank = std::int64_t(shape.size());
  for (const ops::OpDef& op : ops::all_ops()) {
    if (op.fusion.family != "rows" || op.operands.size() > 1) continue;
    for (std::int64_t axis = op.reduces ? -1 : 0; axis < (op.reduces ? rank : rank - 1); ++axis) {
      Graph g;
      auto x = g.input("x", shape, t);
      auto b = g.input("b", Shape(shape.begin() + 1, shape.end()), DType::f32);
      Attrs a;
      if (axis < 0)
        a.set("axis", "all");
      else
        a.set("axis", axis);
      a.set("keepdim", axis < 0 ? rank == 2 : axis % 2 == 1);
      auto y = apply(op.name, {silu(x * 0.5 + b)}, a);
      if (!op.reduces && op.name == "softmax") g.output(y * 2.0 + x);
      g.output(y);
      out.push_back(g);
    }
  }
  return out;
}

}  // namespace kiln::test
