// Graphs from Python: kiln.Graph, its values (kiln.Value, with Python's arithmetic operators)
// and the op calls that add nodes (kiln._apply, behind every op function of kiln/__init__.py and
// the functions Graph.define_op and Graph.define_template return).
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "module.hpp"

namespace kiln::python {
namespace {

// A graph value and the graph it belongs to (Python may drop the Graph object first).
struct PyValue {
  std::shared_ptr<Graph> graph;
  Value value;

  const Graph::Node& node() const { return graph->node(value.id()); }
};

GraphArg arg_of(const py::handle& h, std::shared_ptr<Graph>& graph) {
  if (py::isinstance<PyValue>(h)) {
    const PyValue& v = h.cast<const PyValue&>();
    if (graph && graph != v.graph) throw GraphError("an op's operands are values of one graph");
    graph = v.graph;
    return v.value;
  }
  if ((py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) &&
      !py::isinstance<py::bool_>(h))
    return h.cast<double>();
  throw ArgumentError("an operand is a graph value or a number, not " +
                      std::string(py::str(py::type::of(h))));
}

// Op `op` on `args` (graph values and numbers; None, an absent optional operand, is dropped).
PyValue apply(const std::string& op, const py::args& args, const py::kwargs& kw) {
  std::shared_ptr<Graph> graph;
  std::vector<GraphArg> operands;
  bool absent = false;
  for (const py::handle h : args) {
    if (h.is_none()) {
      absent = true;
    } else if (absent) {  // dropping the None would shift this operand into its slot
      throw ArgumentError(fmt::format(
          "{}: an operand follows an absent (None) one; optional operands may only be left out "
          "from the end",
          printable_name(op)));
    } else {
      operands.push_back(arg_of(h, graph));
    }
  }
  if (!graph) throw ArgumentError(printable_name(op) + ": at least one operand is a graph value");
  // Without keywords the op is not looked up here: Graph::add names an unknown one.
  const Attrs attrs = kw.empty() ? Attrs{} : attrs_of(op_schema(op, graph.get()), kw);
  return {graph, graph->add(op, operands, attrs)};
}

PyValue binary(const std::string& op, const py::object& a, const py::object& b) {
  return apply(op, py::make_tuple(a, b), py::kwargs());
}

// "[?, 4096]": a dynamic dim as docs/graph-format.md writes it.
std::string shape_text(const Shape& shape) {
  std::vector<std::string> dims;
  for (const std::int64_t d : shape) dims.push_back(d < 0 ? "?" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string names_text(const Graph& g, const std::vector<int>& ids) {
  std::vector<std::string> names;
  for (const int id : ids) names.push_back(printable_name(g.node(id).name));
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::vector<int> input_ids(const Graph& g) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].op == "input") ids.push_back(int(i));
  return ids;
}

// <kiln.Value y: f32[?, 8] = add(x, 0.5)>: the node as the graph holds it.
std::string value_repr(const PyValue& v) {
  const Graph::Node& n = v.node();
  std::string out = fmt::format("<kiln.Value {}: {}{}", printable_name(n.name), name_of(n.dtype),
                                shape_text(n.shape));
  if (n.op == "input") return out + " (input)>";
  std::vector<std::string> args;
  for (const auto& a : n.args)
    args.push_back(std::holds_alternative<int>(a)
                       ? printable_name(v.graph->node(std::get<int>(a)).name)
                       : fmt::format("{}", std::get<double>(a)));
  return fmt::format("{} = {}({})>", out, printable_name(n.op), fmt::join(args, ", "));
}

void bind_values(py::module_& m) {
  py::class_<PyValue>(m, "Value",
                      "A value of a graph under construction: an input or an op's result. Ops "
                      "and + - * / on values add nodes to their graph.")
      .def_property_readonly(
          "shape", [](const PyValue& v) { return dims_of(v.node().shape); },
          "the extents, None for a dynamic dim")
      .def_property_readonly(
          "dtype", [](const PyValue& v) { return v.node().dtype; }, "a kiln.DType")
      .def_property_readonly(
          "name", [](const PyValue& v) { return v.node().name; },
          "the node's name (an output's is the name given to Graph.output)")
      .def("__repr__", &value_repr)
      .def("__add__", [](py::object a, py::object b) { return binary("add", a, b); })
      .def("__radd__", [](py::object a, py::object b) { return binary("add", b, a); })
      .def("__sub__", [](py::object a, py::object b) { return binary("sub", a, b); })
      .def("__rsub__", [](py::object a, py::object b) { return binary("sub", b, a); })
      .def("__mul__", [](py::object a, py::object b) { return binary("mul", a, b); })
      .def("__rmul__", [](py::object a, py::object b) { return binary("mul", b, a); })
      .def("__truediv__", [](py::object a, py::object b) { return binary("div", a, b); })
      .def("__rtruediv__", [](py::object a, py::object b) { return binary("div", b, a); })
      .def("__mod__", [](py::object a, py::object b) { return binary("remainder", a, b); })
      .def("__rmod__", [](py::object a, py::object b) { return binary("remainder", b, a); })
      .def("__neg__", [](py::object a) { return apply("neg", py::make_tuple(a), py::kwargs()); });
  m.def("_apply", &apply, py::arg("op"));
  m.def("op_names", &op_names, "the names of kiln's ops (docs/ops.md), in catalog order");
  m.def(
      "_op_schema", [](const std::string& op) { return schema_dict(op_schema(op)); },
      py::arg("op"), "catalog op `op`'s operands, attributes and doc, as dicts");
}

// What Graph's constructor, input, output, JSON and repr do; the custom ops' definitions are
// _define_op and _define_template, which kiln/__init__.py wraps to return the op as a function.
void bind_graph_class(py::module_& m) {
  using G = std::shared_ptr<Graph>;
  py::class_<Graph, G>(m, "Graph", "An op graph (docs/graph-format.md)")
      .def(py::init([] { return std::make_shared<Graph>(); }),
           "an empty graph: Graph.input adds inputs, kiln's op functions the rest")
      .def(
          "input",
          [](G g, const std::string& name, const py::object& shape, const py::object& dtype) {
            return PyValue{g, g->input(name, shape_of(shape), dtype_of(dtype))};
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "f32",
          "Adds an input: shape a list of extents (None or \"?\" for a dynamic dim), dtype a "
          "name (\"bf16\", \"bfloat16\"), a kiln.DType or a torch.dtype. Returns its kiln.Value.")
      .def(
          "output",
          [](G g, const PyValue& v, const std::string& name) {
            if (v.graph != g) throw GraphError("output: a value of another graph");
            g->output(v.value, name);
          },
          py::arg("value"), py::arg("name") = "",
          "Marks a value as an output, renamed `name` if given: the name Plan.run returns it by.")
      .def("_define_template", &Graph::define_template, py::arg("name"), py::arg("template"))
      .def(
          "_define_op",
          [](Graph& g, const std::string& name, const std::vector<std::string>& operands,
             const std::string& expr) {
            g.define_op({name, operands, expr});
          },
          py::arg("name"), py::arg("operands"), py::arg("expr"))
      .def("to_json", &Graph::to_json, "the graph in the JSON format of docs/graph-format.md")
      .def("save", &Graph::save, py::arg("path"), "writes to_json() to a file")
      .def_static(
          "load",
          [](const std::string& path) { return std::make_shared<Graph>(Graph::load(path)); },
          py::arg("path"), "reads a graph file (docs/graph-format.md); GraphError naming the field")
      .def_static(
          "parse",
          [](const std::string& json) { return std::make_shared<Graph>(Graph::parse(json)); },
          py::arg("json"), "a graph from JSON text, as Graph.load reads a file")
      .def_property_readonly(
          "inputs",
          [](const Graph& g) {
            std::vector<std::string> names;
            for (const int id : input_ids(g)) names.push_back(g.node(id).name);
            return names;
          },
          "the inputs' names, in order")
      .def_property_readonly(
          "outputs",
          [](const Graph& g) {
            std::vector<std::string> names;
            for (const int id : g.outputs()) names.push_back(g.node(id).name);
            return names;
          },
          "the outputs' names, in order")
      .def("__repr__", [](const Graph& g) {
        return fmt::format("<kiln.Graph: {}; {} nodes>", graph_summary(g), g.nodes().size());
      });
}

}  // namespace

std::string graph_summary(const Graph& g) {
  return fmt::format("inputs {}; outputs {}", names_text(g, input_ids(g)),
                     names_text(g, g.outputs()));
}

void bind_graphs(py::module_& m) {
  bind_values(m);
  bind_graph_class(m);
}

}  // namespace kiln::python
