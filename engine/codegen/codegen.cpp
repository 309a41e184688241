#include "engine/codegen/codegen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <kiln/error.hpp>
#include <set>

namespace kiln::codegen {
namespace {

// `r` in the body's text: an input as x[i], or in a typed body (kiln::ValuesOf) x.get<i>().
std::string ref(const Ref& r, const Body& b, std::size_t step, bool typed = false) {
  switch (r.kind) {
    case Ref::Kind::input:
      if (r.index < 0 || r.index >= int(b.inputs.size())) break;
      return fmt::format(typed ? "x.get<{}>()" : "x[{}]", r.index);
    case Ref::Kind::scalar:
      if (r.index < 0 || r.index >= b.scalars) break;
      return fmt::format("s[{}]", r.index);
    case Ref::Kind::step:
      if (r.index < 0 || std::size_t(r.index) >= step) break;
      return fmt::format("t{}", r.index);
    case Ref::Kind::row:
      return fmt::format("x[{}]", b.inputs.size());
    case Ref::Kind::prologue:
      return fmt::format("x[{}]", b.inputs.size() + 1);
  }
  throw ArgumentError(fmt::format("codegen: a reference of step {} points outside the body", step));
}

// The C++ type a typed body holds a value of `t` in.
std::string_view compute_type(DType t) { return is_integer(t) ? device_type_of(t) : "float"; }

DType ref_dtype(const Ref& r, const Body& b) {
  switch (r.kind) {
    case Ref::Kind::input:
      return b.inputs[std::size_t(r.index)];
    case Ref::Kind::step:
      return b.steps[std::size_t(r.index)].dtype;
    case Ref::Kind::scalar:
    case Ref::Kind::row:
    case Ref::Kind::prologue:
      break;
  }
  return DType::f32;
}

// A typed body: apply on kiln::ValuesOf<...> (elementwise.cuh), each step's arguments converted
// to the dtypes it takes, casts through kiln::convert.
std::string render_typed(const Body& b) {
  std::string out =
      "  static constexpr bool typed = true;\n"
      "  __device__ __forceinline__ static void apply(const kiln::ValuesOf<Inputs>& x, "
      "const float* s, kiln::ValuesOf<Outputs>& y) {\n"
      "    (void)x;\n    (void)s;\n";
  for (std::size_t i = 0; i < b.steps.size(); ++i) {
    const Step& st = b.steps[i];
    std::vector<std::string> args;
    for (std::size_t k = 0; k < st.args.size(); ++k) {
      std::string a = ref(st.args[k], b, i, true);
      const std::string_view want =
          k < st.arg_dtypes.size() ? compute_type(st.arg_dtypes[k]) : std::string_view();
      if (!want.empty() && want != compute_type(ref_dtype(st.args[k], b)))
        a = fmt::format("static_cast<{}>({})", want, a);
      args.push_back(a);
    }
    std::string call = fmt::format("{}::apply({})", st.functor, fmt::join(args, ", "));
    if (st.round) call = fmt::format("kiln::convert<{}>({})", device_type_of(st.dtype), call);
    out += fmt::format("    const {} t{} = {};\n", compute_type(st.dtype), i, call);
  }
  for (std::size_t j = 0; j < b.results.size(); ++j)
    out += fmt::format("    y.get<{}>() = {};\n", j, ref(b.results[j], b, b.steps.size(), true));
  return out + "  }\n};\n";
}

}  // namespace

bool Body::typed() const {
  const auto integer = [](DType t) { return is_integer(t); };
  return std::any_of(inputs.begin(), inputs.end(), integer) ||
         std::any_of(outputs.begin(), outputs.end(), integer) ||
         std::any_of(steps.begin(), steps.end(), [](const Step& s) { return is_integer(s.dtype); });
}

std::string render_types(const std::vector<DType>& dtypes) {
  std::vector<std::string_view> names;
  for (DType t : dtypes) names.push_back(device_type_of(t));
  return fmt::format("kiln::Types<{}>", fmt::join(names, ", "));
}

std::string render_index(bool index64) { return index64 ? "unsigned long long" : "unsigned int"; }

std::string render_instance(std::string_view name, const std::vector<std::string>& args) {
  return fmt::format("{}<{}>", name, fmt::join(args, ", "));
}

std::string render_dim(std::int64_t extent, const std::vector<std::int64_t>& strides) {
  return fmt::format("kiln::Dim<{}, {}>", extent, fmt::join(strides, ", "));
}

std::string render_source(std::string_view header,
                          const std::vector<std::pair<std::string_view, const Body*>>& bodies,
                          bool split) {
  std::vector<std::string> structs;
  std::set<std::string_view> functors;  // custom ops', each defined once
  for (const auto& [name, body] : bodies)
    for (const Step& st : body->steps)
      if (st.expr && functors.insert(st.functor).second)
        structs.push_back(render_functor(st.functor, *st.expr));
  for (const auto& [name, body] : bodies)
    structs.push_back(split ? render_split_body(*body, name) : render_body(*body, name));
  return fmt::format("#include <kiln/{}>\n\n{}", header, fmt::join(structs, "\n"));
}

Body fast_math(Body body) {
  constexpr std::string_view kOps = "kiln::op::";
  for (Step& st : body.steps)
    if (!st.expr && st.functor.rfind(kOps, 0) == 0 && st.functor.rfind("kiln::op::fast::", 0) != 0)
      st.functor = "kiln::op::fast::" + st.functor.substr(kOps.size());
  return body;
}

Body narrow_fast_math(const Body& body) {
  bool narrow = !body.outputs.empty();
  for (DType t : body.outputs) narrow = narrow && (t == DType::f16 || t == DType::bf16);
  return narrow ? fast_math(body) : body;
}

namespace {

std::string render_header(const Body& b, std::string_view name) {
  if (b.results.size() != b.outputs.size())
    throw ArgumentError(
        fmt::format("codegen: {} results for {} outputs", b.results.size(), b.outputs.size()));
  std::string out = fmt::format("struct {} {{\n", name);
  out += fmt::format("  using Inputs = {};\n", render_types(b.inputs));
  out += fmt::format("  using Outputs = {};\n", render_types(b.outputs));
  out += fmt::format("  static constexpr int scalars = {};\n", b.scalars);
  return out;
}

// apply on f32 values and the struct's end.
std::string render_apply(const Body& b) {
  std::string out =
      "  __device__ __forceinline__ static void apply(const float* x, const float* s, float* y) "
      "{\n";
  out += "    (void)x;\n    (void)s;\n";
  for (std::size_t i = 0; i < b.steps.size(); ++i) {
    const Step& st = b.steps[i];
    std::vector<std::string> args;
    for (const Ref& r : st.args) args.push_back(ref(r, b, i));
    std::string call = fmt::format("{}::apply({})", st.functor, fmt::join(args, ", "));
    if (st.round) call = fmt::format("kiln::round_to<{}>({})", device_type_of(st.dtype), call);
    out += fmt::format("    const float t{} = {};\n", i, call);
  }
  for (std::size_t j = 0; j < b.results.size(); ++j)
    out += fmt::format("    y[{}] = {};\n", j, ref(b.results[j], b, b.steps.size()));
  return out + "  }\n};\n";
}

// Whether every reference of `b` points inside it (render_body says which does not).
bool well_formed(const Body& b) {
  const auto inside = [&b](const Ref& r, std::size_t step) {
    switch (r.kind) {
      case Ref::Kind::input: return r.index >= 0 && r.index < int(b.inputs.size());
      case Ref::Kind::scalar: return r.index >= 0 && r.index < b.scalars;
      case Ref::Kind::step: return r.index >= 0 && std::size_t(r.index) < step;
      default: return true;
    }
  };
  for (std::size_t k = 0; k < b.steps.size(); ++k)
    for (const Ref& r : b.steps[k].args)
      if (!inside(r, k)) return false;
  for (const Ref& r : b.results)
    if (!inside(r, b.steps.size())) return false;
  return b.results.size() == b.outputs.size();
}

// Whether `st` reads only inputs, scalars and steps that do (`column`, so far).
bool reads_columns(const Step& st, const std::vector<bool>& column) {
  for (const Ref& r : st.args) {
    const bool ok = r.kind == Ref::Kind::input || r.kind == Ref::Kind::scalar ||
                    (r.kind == Ref::Kind::step && column[std::size_t(r.index)]);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string render_body(const Body& b, std::string_view name) {
  std::string out = render_header(b, name);
  if (b.typed()) return out + render_typed(b);
  return out + render_apply(b);
}

std::optional<ColumnSplit> split_columns(const Body& b) {
  if (b.typed() || b.inputs.empty() || !well_formed(b)) return std::nullopt;
  std::vector<bool> column(b.steps.size());
  bool any = false;
  for (std::size_t k = 0; k < b.steps.size(); ++k) {
    column[k] = reads_columns(b.steps[k], column);
    any = any || column[k];
  }
  if (!any) return std::nullopt;
  // The staged values: each input or column step the rest reads, in order of first use.
  std::vector<std::pair<Ref::Kind, int>> staged;
  const auto stage = [&](const Ref& r) -> Ref {
    const bool col =
        r.kind == Ref::Kind::input || (r.kind == Ref::Kind::step && column[std::size_t(r.index)]);
    if (!col) return r;
    const std::pair<Ref::Kind, int> key{r.kind, r.index};
    auto it = std::find(staged.begin(), staged.end(), key);
    if (it == staged.end()) it = staged.insert(staged.end(), key);
    return {Ref::Kind::input, int(it - staged.begin())};
  };
  ColumnSplit out;
  std::vector<int> index(b.steps.size());  // a step's index in its part
  for (std::size_t k = 0; k < b.steps.size(); ++k) {
    Step st = b.steps[k];
    Body& part = column[k] ? out.columns : out.element;
    for (Ref& r : st.args) {
      if (r.kind == Ref::Kind::step && column[std::size_t(r.index)] == column[k])
        r.index = index[std::size_t(r.index)];
      else if (!column[k])
        r = stage(r);
    }
    index[k] = int(part.steps.size());
    part.steps.push_back(std::move(st));
  }
  for (const Ref& r : b.results) {
    Ref e = stage(r);
    if (e.kind == Ref::Kind::step) e.index = index[std::size_t(e.index)];
    out.element.results.push_back(e);
  }
  if (staged.empty() || staged.size() > b.inputs.size()) return std::nullopt;
  out.columns.inputs = b.inputs, out.columns.scalars = b.scalars;
  for (const auto& [kind, i] : staged) {
    out.columns.outputs.push_back(DType::f32);
    out.columns.results.push_back({kind, kind == Ref::Kind::step ? index[std::size_t(i)] : i});
  }
  out.element.inputs.assign(staged.size(), DType::f32);
  out.element.outputs = b.outputs, out.element.scalars = b.scalars;
  return out;
}

int column_operands(const Body& body) {
  const std::optional<ColumnSplit> split = split_columns(body);
  return split ? int(split->columns.outputs.size()) : int(body.inputs.size());
}

std::string render_split_body(const Body& body, std::string_view name) {
  const std::optional<ColumnSplit> split = split_columns(body);
  if (!split) return render_body(body, name);
  std::string columns = render_body(split->columns, "Columns"), nested;
  for (std::size_t at = 0; at < columns.size();) {  // indented inside the outer struct
    const std::size_t end = columns.find('\n', at);
    nested += "  " + columns.substr(at, end - at + 1);
    at = end + 1;
  }
  return render_header(body, name) + nested +
         fmt::format("  static constexpr int staged = {};\n", split->columns.outputs.size()) +
         render_apply(split->element);
}

namespace {

// An f32 literal for `v`: C++ text that reads back as the same float.
std::string float_literal(double v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string render_node(const ops::ExprNode& n) {
  using Kind = ops::ExprNode::Kind;
  const auto arg = [&](std::size_t i) { return render_node(*n.args.at(i)); };
  switch (n.kind) {
    case Kind::literal:
      return float_literal(n.value);
    case Kind::operand:
      return fmt::format("x{}", n.operand);
    case Kind::negate:
      return fmt::format("(-{})", arg(0));
    case Kind::logical_not:
      return fmt::format("({} == 0.0f ? 1.0f : 0.0f)", arg(0));
    case Kind::conditional:
      return fmt::format("({} != 0.0f ? {} : {})", arg(0), arg(1), arg(2));
    case Kind::call: {
      std::vector<std::string> args;
      for (std::size_t i = 0; i < n.args.size(); ++i) args.push_back(arg(i));
      return fmt::format("{}({})", n.symbol, fmt::join(args, ", "));
    }
    case Kind::binary:
      if (n.symbol == "&&" || n.symbol == "||")
        return fmt::format("(({} != 0.0f) {} ({} != 0.0f) ? 1.0f : 0.0f)", arg(0), n.symbol,
                           arg(1));
      if (n.symbol == "+" || n.symbol == "-" || n.symbol == "*" || n.symbol == "/")
        return fmt::format("({} {} {})", arg(0), n.symbol, arg(1));
      return fmt::format("({} {} {} ? 1.0f : 0.0f)", arg(0), n.symbol, arg(1));
  }
  throw ArgumentError("codegen: an expression node outside the grammar");
}

}  // namespace

std::string render_functor(std::string_view name, const ops::Expr& expr) {
  std::vector<std::string> params;
  for (std::size_t i = 0; i < expr.operands(); ++i) params.push_back(fmt::format("float x{}", i));
  return fmt::format(
      "struct {} {{\n  static constexpr int arity = {};\n"
      "  __device__ __forceinline__ static float apply({}) {{ return {}; }}\n}};\n",
      name, expr.operands(), fmt::join(params, ", "), render_node(expr.root()));
}

std::vector<std::string> builtin_options() { return {"-std=c++17", "--minimal"}; }

std::string render_include(std::string_view name) { return fmt::format("#include \"{}\"\n", name); }

std::string_view render_user_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "float";
    case DType::f16:
      return "__half";
    case DType::bf16:
      return "__nv_bfloat16";
    case DType::boolean:
      return "bool";
    case DType::i32:
      return "int";
    case DType::i64:
      return "long long";
  }
  return "float";
}

std::string render_user_instance(std::string_view instance,
                                 const std::vector<std::pair<std::string, std::string>>& values) {
  std::string out;
  for (std::size_t i = 0; i < instance.size(); ++i) {
    if (instance[i] == '{') {
      const std::size_t close = instance.find('}', i);
      if (close == std::string_view::npos)
        throw ArgumentError(fmt::format("instance '{}': a '{{' without its '}}'", instance));
      const std::string_view name = instance.substr(i + 1, close - i - 1);
      const auto it = std::find_if(values.begin(), values.end(),
                                   [&](const auto& v) { return v.first == name; });
      if (it == values.end())
        throw ArgumentError(fmt::format(
            "instance '{}': {{{}}} is neither a tensor parameter nor a tunable", instance, name));
      out += it->second;
      i = close;
      continue;
    }
    const char c = instance[i];
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) ||
                    std::string_view("_:<>, ").find(c) != std::string_view::npos;
    if (!ok)
      throw ArgumentError(fmt::format(
          "instance '{}': '{}' has no place in a name expression (letters, digits, _ : < > , "
          "and spaces)",
          instance, c));
    out += c;
  }
  if (out.empty()) throw ArgumentError("a template's instance is empty");
  return out;
}

std::vector<std::string> user_options() { return {"-std=c++17"}; }

}  // namespace kiln::codegen
