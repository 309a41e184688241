// Graph IR: building with inference, operators on values, JSON load/save.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <kiln/graph.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "cache/atomic_file.hpp"
#include "engine/error_context.hpp"
#include "engine/ir/graph_ops.hpp"
#include "ops/op.hpp"

namespace kiln {
namespace {

constexpr std::size_t kMaxGraphBytes = std::size_t(256) << 20;

// Dynamic dims take part in inference as this stand-in extent (ops/op.hpp).
constexpr std::int64_t kDynamic = ops::kDynamicStandIn;

Shape to_inference(const Shape& s) {
  Shape out = s;
  for (auto& e : out) e = e < 0 ? kDynamic : e;
  return out;
}
Shape from_inference(const Shape& s) {
  Shape out = s;
  for (auto& e : out) e = e == kDynamic ? -1 : e;
  return out;
}

std::string shape_json(const Shape& s) {
  std::vector<std::string> parts;
  for (auto e : s) parts.push_back(e < 0 ? "\"?\"" : std::to_string(e));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// GraphError naming `what` ("input", "node", "output") unless `name` is a valid name.
void check_name(const std::string& name, const char* what) {
  std::string why;
  if (name.empty())
    why = "a name cannot be empty";
  else if (name.size() > Graph::kMaxNameBytes)
    why =
        fmt::format("{} bytes is too long a name (at most {})", name.size(), Graph::kMaxNameBytes);
  else if (std::any_of(name.begin(), name.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    why = "a name cannot hold control characters (newlines, tabs, escapes)";
  if (!why.empty()) throw GraphError(fmt::format("{} '{}': {}", what, printable_name(name), why));
}

}  // namespace

std::string printable_name(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (out.size() >= 80) return out + "...";
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\\' || c == '\'' || c == '"')
      out += fmt::format("\\{}", char(c));
    else if (c < 0x20 || c >= 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += char(c);
  }
  return out;
}

int Graph::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return int(i);
  return -1;
}

Value Graph::input(const std::string& name, const Shape& shape, DType dtype) {
  check_name(name, "input");
  if (find(name) >= 0) throw GraphError(fmt::format("input '{}': the name is already used", name));
  for (auto e : shape)
    if (e < -1)
      throw GraphError(fmt::format("input '{}': field shape: extent {} is negative", name, e));
  numel_of(to_inference(shape));  // overflow check
  nodes_.push_back({name, "input", {}, {}, shape, dtype});
  return Value(this, int(nodes_.size()) - 1);
}

Value Graph::add(std::string_view op_name, const std::vector<GraphArg>& args, const Attrs& attrs,
                 std::string name) {
  if (name.empty()) {
    name = fmt::format("t{}", nodes_.size());
    for (int n = 1; find(name) >= 0; ++n) name = fmt::format("t{}_{}", nodes_.size(), n);
  }
  check_name(name, "node");
  if (find(name) >= 0) throw GraphError(fmt::format("node '{}': the name is already used", name));
  const ops::OpDef* op = nullptr;
  try {
    op = &kiln::op_def(*this, op_name);
  } catch (const Error& e) {
    throw GraphError(fmt::format("node '{}': field op: {}", name, e.what()));
  }
  try {
    ops::check_attrs(*op, attrs);
  } catch (const ArgumentError& e) {
    throw GraphError(fmt::format("node '{}': {}", name, e.what()));
  } catch (const DtypeError& e) {
    throw DtypeError(fmt::format("node '{}': {}", name, e.what()));
  }
  Node n{name, std::string(op_name), {}, attrs, {}, DType::f32};
  std::vector<Operand> descs;
  for (const GraphArg& a : args) {
    if (auto* v = std::get_if<Value>(&a)) {
      if (v->graph() != this || v->id() < 0 || v->id() >= int(nodes_.size()))
        throw GraphError(fmt::format("node '{}': an argument belongs to another graph", name));
      const Shape& shape = nodes_[std::size_t(v->id())].shape;
      if (op->fusion.kind == ops::FusionKind::view &&
          std::any_of(shape.begin(), shape.end(), [](std::int64_t e) { return e < 0; }))
        throw ShapeError(
            fmt::format("node '{}': {} of a value with a dynamic dim ({}); views take "
                        "static shapes",
                        name, op_name, nodes_[std::size_t(v->id())].name));
      TensorView d;
      d.shape = to_inference(shape);
      d.dtype = nodes_[std::size_t(v->id())].dtype;
      descs.emplace_back(d);
      n.args.emplace_back(v->id());
    } else {
      descs.emplace_back(std::get<double>(a));
      n.args.emplace_back(std::get<double>(a));
    }
  }
  try {
    const TensorView r = ops::infer_result(*op, descs, attrs);
    n.shape = from_inference(r.shape);
    n.dtype = r.dtype;
  } catch (const ShapeError& e) {
    throw ShapeError(fmt::format("node '{}': {}", name, e.what()));
  } catch (const DtypeError& e) {
    throw DtypeError(fmt::format("node '{}': {}", name, e.what()));
  } catch (const ArgumentError& e) {
    throw GraphError(fmt::format("node '{}': {}", name, e.what()));
  }
  nodes_.push_back(std::move(n));
  return Value(this, int(nodes_.size()) - 1);
}

void Graph::output(Value v, const std::string& name) {
  if (v.graph() != this || v.id() < 0 || v.id() >= int(nodes_.size()))
    throw GraphError("an output must be a value of this graph");
  if (!name.empty() && name != node(v.id()).name) {
    check_name(name, "output");
    if (find(name) >= 0)
      throw GraphError(fmt::format("output '{}': the name is already used", name));
    if (node(v.id()).op != "input") nodes_[std::size_t(v.id())].name = name;
  }
  if (node(v.id()).op == "input")
    throw GraphError(
        fmt::format("output '{}' is an input of the graph: outputs are computed values "
                    "(to pass a copy through, output cast('{}') instead)",
                    node(v.id()).name, node(v.id()).name));
  if (std::find(outputs_.begin(), outputs_.end(), v.id()) == outputs_.end())
    outputs_.push_back(v.id());
}

namespace {

// Field `key` of JSON object `obj`; GraphError naming `origin` and `where` if it is missing.
const nlohmann::json& field(const nlohmann::json& obj, const char* key, const std::string& where,
                            const std::string& origin) {
  if (!obj.is_object() || !obj.contains(key))
    throw GraphError(fmt::format("{}: {}: missing field '{}'", origin, where, key));
  return obj.at(key);
}

// A string field that must hold a valid name (of an input or a node).
std::string name_field(const nlohmann::json& obj, const std::string& where, const char* what,
                       const std::string& origin) {
  const auto& nm = field(obj, "name", where, origin);
  if (!nm.is_string())
    throw GraphError(fmt::format("{}: {}: field name must be a string", origin, where));
  const std::string name = nm.get<std::string>();
  try {
    check_name(name, what);
  } catch (const GraphError& e) {
    throw GraphError(fmt::format("{}: {}: {}", origin, where, e.what()));
  }
  return name;
}

nlohmann::json parse_top_level(std::string_view text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw GraphError(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!j.is_object())
    throw GraphError(
        fmt::format("{}: the top level must be an object with inputs, nodes, outputs", origin));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "inputs" && it.key() != "nodes" && it.key() != "outputs" && it.key() != "ops" &&
        it.key() != "templates")
      throw GraphError(
          fmt::format("{}: unknown top-level field '{}'", origin, printable_name(it.key())));
  return j;
}

void parse_input(const nlohmann::json& in, std::size_t i, Graph& g, const std::string& origin) {
  const std::string name = name_field(in, fmt::format("input {}", i), "input", origin);
  const auto& sh = field(in, "shape", "input '" + name + "'", origin);
  if (!sh.is_array())
    throw GraphError(fmt::format("{}: input '{}': field shape must be an array", origin, name));
  Shape shape;
  for (const auto& e : sh) {
    if (e.is_string() && e.get<std::string>() == "?")
      shape.push_back(-1);
    else if (e.is_number_integer() && e.get<std::int64_t>() >= 0)
      shape.push_back(e.get<std::int64_t>());
    else
      throw GraphError(fmt::format(
          "{}: input '{}': field shape: {} is not an extent (an integer >= 0, or \"?\")", origin,
          name, e.dump()));
  }
  const auto& dt = field(in, "dtype", "input '" + name + "'", origin);
  if (!dt.is_string())
    throw GraphError(fmt::format("{}: input '{}': field dtype must be a string", origin, name));
  try {
    g.input(name, shape, parse_dtype(dt.get<std::string>()));
  } catch (const Error& e) {
    throw GraphError(fmt::format("{}: input '{}': {}", origin, name, e.what()));
  }
}

std::vector<GraphArg> node_args(const nlohmann::json& args, Graph& g, const std::string& where) {
  if (!args.is_array()) throw GraphError(fmt::format("{}: field args must be an array", where));
  std::vector<GraphArg> out;
  for (std::size_t a = 0; a < args.size(); ++a) {
    if (args[a].is_number()) {
      out.emplace_back(args[a].get<double>());
    } else if (args[a].is_string()) {
      const int id = g.find(args[a].get<std::string>());
      if (id < 0)
        throw GraphError(fmt::format(
            "{}: field args[{}]: '{}' is not an input or an earlier node (a typo, a forward "
            "reference or a cycle)",
            where, a, printable_name(args[a].get<std::string>())));
      out.emplace_back(Value(&g, id));
    } else {
      throw GraphError(fmt::format("{}: field args[{}] must be a name or a number", where, a));
    }
  }
  return out;
}

void parse_node(const nlohmann::json& nd, std::size_t i, Graph& g, const std::string& origin) {
  const std::string name = name_field(nd, fmt::format("node {}", i), "node", origin);
  const std::string where = "node '" + name + "'";
  const auto& op = field(nd, "op", where, origin);
  if (!op.is_string())
    throw GraphError(fmt::format("{}: {}: field op must be a string", origin, where));
  const std::vector<GraphArg> args =
      node_args(field(nd, "args", where, origin), g, origin + ": " + where);
  Attrs attrs;
  if (nd.contains("attrs")) {
    const auto& at = nd.at("attrs");
    if (!at.is_object())
      throw GraphError(fmt::format("{}: {}: field attrs must be an object", origin, where));
    const ops::OpDef* def = nullptr;
    try {
      def = &op_def(g, op.get<std::string>());
    } catch (const Error&) {  // Graph::add names the unknown op, as without attrs
    }
    if (def) attrs = attrs_from_json(at, *def, origin + ": " + where);
  }
  // The same error type, with the file named as every error here.
  with_origin(origin, [&] { g.add(op.get<std::string>(), args, attrs, name); });
}

}  // namespace

Graph Graph::parse(std::string_view text, const std::string& origin) {
  const nlohmann::json j = parse_top_level(text, origin);
  Graph g;
  if (j.contains("ops")) parse_custom_ops(j.at("ops"), g, origin);
  if (j.contains("templates"))
    parse_templates(j.at("templates"), g, std::filesystem::path(origin).parent_path().string(),
                    origin);
  const auto& inputs = field(j, "inputs", "graph", origin);
  if (!inputs.is_array())
    throw GraphError(fmt::format("{}: field inputs must be an array", origin));
  for (std::size_t i = 0; i < inputs.size(); ++i) parse_input(inputs[i], i, g, origin);
  const auto& nodes = field(j, "nodes", "graph", origin);
  if (!nodes.is_array()) throw GraphError(fmt::format("{}: field nodes must be an array", origin));
  for (std::size_t i = 0; i < nodes.size(); ++i) parse_node(nodes[i], i, g, origin);
  const auto& outs = field(j, "outputs", "graph", origin);
  if (!outs.is_array() || outs.empty())
    throw GraphError(fmt::format("{}: field outputs must be a non-empty array", origin));
  for (const auto& o : outs) {
    const int id = o.is_string() ? g.find(o.get<std::string>()) : -1;
    if (id < 0)
      throw GraphError(fmt::format("{}: field outputs: {} is not an input or a node", origin,
                                   printable_name(o.dump(-1, ' ', true))));
    try {
      g.output(Value(&g, id));
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("{}: field outputs: {}", origin, e.what()));
    }
  }
  return g;
}

Graph Graph::load(const std::string& path) {
  std::string text, why;
  if (!cache::read_file(path, text, why, kMaxGraphBytes))
    throw GraphError(fmt::format("cannot read graph file {}: {}", path, why));
  return parse(text, path);
}

std::string Graph::to_json() const {
  std::vector<std::string> inputs, nodes, outputs;
  for (const Node& n : nodes_) {
    if (n.op == "input") {
      inputs.push_back(fmt::format(R"(    {{"name": {}, "shape": {}, "dtype": "{}"}})",
                                   nlohmann::json(n.name).dump(), shape_json(n.shape),
                                   name_of(n.dtype)));
      continue;
    }
    std::vector<std::string> args;
    for (const auto& a : n.args)
      args.push_back(std::holds_alternative<int>(a)
                         ? nlohmann::json(nodes_[std::size_t(std::get<int>(a))].name).dump()
                         : nlohmann::json(std::get<double>(a)).dump());
    const nlohmann::json attrs = attrs_json(n.attrs);
    nodes.push_back(fmt::format(R"(    {{"name": {}, "op": "{}", "args": [{}]{}}})",
                                nlohmann::json(n.name).dump(), n.op, fmt::join(args, ", "),
                                attrs.empty() ? "" : ", \"attrs\": " + attrs.dump()));
  }
  for (int o : outputs_) outputs.push_back(nlohmann::json(nodes_[std::size_t(o)].name).dump());
  return fmt::format(
      "{{\n{}  \"inputs\": [\n{}\n  ],\n  \"nodes\": [\n{}\n  ],\n  \"outputs\": [{}]\n}}\n",
      custom_ops_json(*this) + templates_json(*this), fmt::join(inputs, ",\n"),
      fmt::join(nodes, ",\n"), fmt::join(outputs, ", "));
}

void Graph::save(const std::string& path) const {
  std::ofstream out(path);
  out << to_json();
  if (!out) throw GraphError(fmt::format("cannot write graph file {}", path));
}

Value apply(std::string_view op, const std::vector<GraphArg>& args, const Attrs& attrs) {
  Graph* g = nullptr;
  for (const GraphArg& a : args)
    if (auto* v = std::get_if<Value>(&a)) g = g ? g : v->graph();
  if (!g) throw GraphError(fmt::format("{}: needs at least one graph value", op));
  return g->add(op, args, attrs);
}

Value operator+(Value a, GraphArg b) { return apply("add", {a, b}); }
Value operator-(Value a, GraphArg b) { return apply("sub", {a, b}); }
Value operator*(Value a, GraphArg b) { return apply("mul", {a, b}); }
Value operator/(Value a, GraphArg b) { return apply("div", {a, b}); }
Value operator+(double a, Value b) { return apply("add", {a, b}); }
Value operator-(double a, Value b) { return apply("sub", {a, b}); }
Value operator*(double a, Value b) { return apply("mul", {a, b}); }
Value operator/(double a, Value b) { return apply("div", {a, b}); }
Value operator-(Value a) { return apply("neg", {a}); }

Value stack(const std::vector<Value>& xs, std::int64_t axis) {
  if (xs.empty() || !xs[0].graph()) throw GraphError("stack: needs at least one graph value");
  const Shape& s = xs[0].graph()->node(xs[0].id()).shape;
  const std::int64_t rank = std::int64_t(s.size()) + 1;
  if (axis < -rank || axis >= rank)
    throw ShapeError(fmt::format("stack: axis {} is out of range for the result's rank {}", axis,
                                 rank));
  const std::size_t at = std::size_t(axis < 0 ? axis + rank : axis);
  std::vector<Value> parts;
  for (const Value& x : xs) {
    Shape r = x.graph()->node(x.id()).shape;
    r.insert(r.begin() + std::ptrdiff_t(std::min(at, r.size())), 1);
    parts.push_back(reshape(x, r));
  }
  return concat(parts, std::int64_t(at));
}

}  // namespace kiln
