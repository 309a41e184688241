// kiln's Python module (_kiln; python/kiln/__init__.py adds a function per catalog op): graphs
// and their values, plans, engines, offline compiles and kiln's error classes, over the C++
// library, and users' templates compiled without a GPU. Tensors (DLPack) and runs on a GPU come
// next (issue 26).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <kiln/kiln.hpp>
#include <memory>

namespace py = pybind11;

namespace {

// A graph value and the graph it belongs to (Python may drop the Graph object first).
struct PyValue {
  std::shared_ptr<kiln::Graph> graph;
  kiln::Value value;
};

kiln::DType dtype_of(const py::handle& o) {
  if (py::isinstance<kiln::DType>(o)) return o.cast<kiln::DType>();
  if (!py::isinstance<py::str>(o))
    throw kiln::DtypeError(
        "a dtype is a kiln.DType or one of \"f32\", \"f16\", \"bf16\", \"bool\"");
  return kiln::parse_dtype(o.cast<std::string>());
}

// Extents; None or "?" is a dynamic dim (-1).
kiln::Shape shape_of(const py::sequence& dims) {
  kiln::Shape shape;
  for (const py::handle d : dims) {
    if (d.is_none() || (py::isinstance<py::str>(d) && d.cast<std::string>() == "?"))
      shape.push_back(-1);
    else if (py::isinstance<py::int_>(d) && !py::isinstance<py::bool_>(d))
      shape.push_back(d.cast<std::int64_t>());
    else
      throw kiln::ArgumentError("a shape holds integers, and None or \"?\" for a dynamic dim");
  }
  return shape;
}

kiln::GraphArg arg_of(const py::handle& h, std::shared_ptr<kiln::Graph>& graph) {
  if (py::isinstance<PyValue>(h)) {
    const PyValue& v = h.cast<const PyValue&>();
    if (graph && graph != v.graph)
      throw kiln::GraphError("an op's operands are values of one graph");
    graph = v.graph;
    return v.value;
  }
  if ((py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) &&
      !py::isinstance<py::bool_>(h))
    return h.cast<double>();
  throw kiln::ArgumentError("an operand is a graph value or a number, not " +
                            std::string(py::str(py::type::of(h))));
}

kiln::Attrs attrs_of(const py::kwargs& kw) {
  kiln::Attrs a;
  for (const auto& [key, value] : kw) {
    const std::string k = key.cast<std::string>();
    if (value.is_none()) continue;
    if (k == "min")
      a.min = value.cast<double>();
    else if (k == "max")
      a.max = value.cast<double>();
    else if (k == "dtype")
      a.dtype = dtype_of(value);
    else if (k == "axis" && py::isinstance<py::str>(value) && value.cast<std::string>() == "all")
      a.all_axes = true;
    else if (k == "axis")
      a.axis = value.cast<std::int64_t>();
    else if (k == "keepdim")
      a.keepdim = value.cast<bool>();
    else if (k == "eps")
      a.eps = value.cast<double>();
    else if (k == "tf32")
      a.tf32 = value.cast<bool>();
    else if (k == "shape")
      a.shape = value.cast<std::vector<std::int64_t>>();
    else
      throw kiln::ArgumentError("unknown attribute '" + k +
                                "' (min, max, dtype, axis, keepdim, eps, tf32, shape)");
  }
  return a;
}

// Op `op` on `args` (graph values and numbers; None, an absent optional operand, is dropped).
PyValue apply(const std::string& op, const py::args& args, const py::kwargs& kw) {
  std::shared_ptr<kiln::Graph> graph;
  std::vector<kiln::GraphArg> operands;
  for (const py::handle h : args)
    if (!h.is_none()) operands.push_back(arg_of(h, graph));
  if (!graph) throw kiln::ArgumentError(op + ": at least one operand is a graph value");
  return {graph, graph->add(op, operands, attrs_of(kw))};
}

PyValue binary(const std::string& op, const py::object& a, const py::object& b) {
  return apply(op, py::make_tuple(a, b), py::kwargs());
}

py::dict record_of(const kiln::KernelRecord& r) {
  py::dict d;
  d["name"] = r.name;
  d["key"] = r.key;
  d["source"] = r.source;
  d["compile_ms"] = r.compile_ms;
  d["registers"] = r.registers;
  d["spill_bytes"] = r.spill_bytes;
  return d;
}

void errors(py::module_& m) {
  static py::exception<kiln::Error> error(m, "Error");
  static py::exception<kiln::CudaError> cuda(m, "CudaError", error.ptr());
  static py::exception<kiln::CompileError> compile(m, "CompileError", error.ptr());
  static py::exception<kiln::CacheError> cache(m, "CacheError", error.ptr());
  static py::exception<kiln::ShapeError> shape(m, "ShapeError", error.ptr());
  static py::exception<kiln::DtypeError> dtype(m, "DtypeError", error.ptr());
  static py::exception<kiln::GraphError> graph(m, "GraphError", error.ptr());
  static py::exception<kiln::ArgumentError> argument(m, "ArgumentError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kiln::CudaError& e) {
      cuda(e.what());
    } catch (const kiln::CompileError& e) {
      compile(e.what());
    } catch (const kiln::CacheError& e) {
      cache(e.what());
    } catch (const kiln::ShapeError& e) {
      shape(e.what());
    } catch (const kiln::DtypeError& e) {
      dtype(e.what());
    } catch (const kiln::GraphError& e) {
      graph(e.what());
    } catch (const kiln::ArgumentError& e) {
      argument(e.what());
    } catch (const kiln::Error& e) {
      error(e.what());
    }
  });
}

void graphs(py::module_& m) {
  py::class_<PyValue>(m, "Value", "A value of a graph under construction")
      .def_property_readonly("shape",
                             [](const PyValue& v) { return v.graph->node(v.value.id()).shape; })
      .def_property_readonly("dtype",
                             [](const PyValue& v) { return v.graph->node(v.value.id()).dtype; })
      .def_property_readonly("name",
                             [](const PyValue& v) { return v.graph->node(v.value.id()).name; })
      .def("__add__", [](py::object a, py::object b) { return binary("add", a, b); })
      .def("__radd__", [](py::object a, py::object b) { return binary("add", b, a); })
      .def("__sub__", [](py::object a, py::object b) { return binary("sub", a, b); })
      .def("__rsub__", [](py::object a, py::object b) { return binary("sub", b, a); })
      .def("__mul__", [](py::object a, py::object b) { return binary("mul", a, b); })
      .def("__rmul__", [](py::object a, py::object b) { return binary("mul", b, a); })
      .def("__truediv__", [](py::object a, py::object b) { return binary("div", a, b); })
      .def("__rtruediv__", [](py::object a, py::object b) { return binary("div", b, a); })
      .def("__neg__", [](py::object a) { return apply("neg", py::make_tuple(a), py::kwargs()); });

  py::class_<kiln::Graph, std::shared_ptr<kiln::Graph>>(m, "Graph",
                                                        "An op graph (docs/graph-format.md)")
      .def(py::init([] { return std::make_shared<kiln::Graph>(); }))
      .def(
          "input",
          [](std::shared_ptr<kiln::Graph> g, const std::string& name, const py::sequence& shape,
             const py::object& dtype) {
            return PyValue{g, g->input(name, shape_of(shape), dtype_of(dtype))};
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "f32")
      .def(
          "output",
          [](std::shared_ptr<kiln::Graph> g, const PyValue& v, const std::string& name) {
            if (v.graph != g) throw kiln::GraphError("output: a value of another graph");
            g->output(v.value, name);
          },
          py::arg("value"), py::arg("name") = "")
      .def("define_template", &kiln::Graph::define_template, py::arg("name"), py::arg("template"))
      .def(
          "define_op",
          [](kiln::Graph& g, const std::string& name, const std::vector<std::string>& operands,
             const std::string& expr) {
            g.define_op({name, operands, expr});
          },
          py::arg("name"), py::arg("operands"), py::arg("expr"))
      .def("to_json", &kiln::Graph::to_json)
      .def("save", &kiln::Graph::save, py::arg("path"))
      .def_static(
          "load",
          [](const std::string& path) {
            return std::make_shared<kiln::Graph>(kiln::Graph::load(path));
          },
          py::arg("path"))
      .def_static(
          "parse",
          [](const std::string& json) {
            return std::make_shared<kiln::Graph>(kiln::Graph::parse(json));
          },
          py::arg("json"))
      .def_property_readonly("outputs", [](const kiln::Graph& g) {
        std::vector<std::string> names;
        for (int id : g.outputs()) names.push_back(g.node(id).name);
        return names;
      });
  m.def("_apply", &apply, py::arg("op"));
  m.def("op_names", &kiln::op_names);
}

void engines(py::module_& m) {
  py::enum_<kiln::DType>(m, "DType")
      .value("f32", kiln::DType::f32)
      .value("f16", kiln::DType::f16)
      .value("bf16", kiln::DType::bf16)
      .value("bool", kiln::DType::boolean);
  py::class_<kiln::Engine>(m, "Engine", "A CUDA context, stream and kernel cache")
      .def(py::init([](const std::string& arch, bool offline, const py::object& cache_dir) {
             kiln::EngineOptions o;
             o.arch = arch;
             o.offline = offline;
             if (!cache_dir.is_none()) o.cache_dir = cache_dir.cast<std::string>();
             py::gil_scoped_release release;  // a device engine creates its context
             return std::make_unique<kiln::Engine>(o);
           }),
           py::arg("arch") = "", py::arg("offline") = false, py::arg("cache_dir") = py::none())
      .def_property_readonly("arch", &kiln::Engine::arch)
      .def_property_readonly("has_device", &kiln::Engine::has_device)
      .def_property_readonly("device_name", &kiln::Engine::device_name)
      .def_property_readonly("cache_dir", &kiln::Engine::cache_dir)
      .def("counters",
           [](const kiln::Engine& e) {
             const kiln::CacheCounters c = e.counters();
             py::dict d;
             d["compiles"] = c.compiles;
             d["memory_hits"] = c.memory_hits;
             d["bundle_hits"] = c.bundle_hits;
             d["disk_hits"] = c.disk_hits;
             d["bad_entries"] = c.bad_entries;
             d["compile_ms"] = c.compile_ms;
             return d;
           })
      .def("kernels", [](const kiln::Engine& e) {
        py::list out;
        for (const kiln::KernelRecord& r : e.kernels()) out.append(record_of(r));
        return out;
      });
  py::class_<kiln::Plan>(m, "Plan", "A graph's kernels, fused, for engines to compile and run")
      .def(py::init([](const kiln::Graph& g, bool fuse) {
             return std::make_unique<kiln::Plan>(g, fuse);
           }),
           py::arg("graph"), py::arg("fuse") = true)
      .def(
          "kernels",
          [](const kiln::Plan& p, const std::string& arch) {
            py::list out;
            for (const kiln::PlanKernel& k : p.kernels(arch)) {
              py::dict d;
              d["name"] = k.name;
              d["ops"] = k.ops;
              d["grid"] = k.grid;
              d["block"] = k.block;
              out.append(d);
            }
            return out;
          },
          py::arg("arch") = "sm_90a")
      .def(
          "compile",
          [](const kiln::Plan& p, kiln::Engine& e) {
            std::vector<kiln::KernelRecord> records;
            {
              py::gil_scoped_release release;  // NVRTC, side by side
              records = p.compile(e);
            }
            py::list out;
            for (const kiln::KernelRecord& r : records) out.append(record_of(r));
            return out;
          },
          py::arg("engine"));
  m.def("gpu_available", [] { return kiln::gpu_available(); });
}

// A template's call arguments: TensorViews (kiln.desc, for compiling without data) and numbers.
std::vector<kiln::Operand> operands_of(const py::sequence& args) {
  std::vector<kiln::Operand> out;
  for (const py::handle h : args) {
    if (py::isinstance<kiln::TensorView>(h))
      out.emplace_back(h.cast<kiln::TensorView>());
    else if ((py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) &&
             !py::isinstance<py::bool_>(h))
      out.emplace_back(h.cast<double>());
    else
      throw kiln::ArgumentError("a template's argument is a kiln.desc(...) or a number");
  }
  return out;
}

void templates(py::module_& m) {
  using K = kiln::TemplateParam::Kind;
  py::enum_<K>(m, "ParamKind")
      .value("tensor", K::tensor)
      .value("i32", K::i32)
      .value("i64", K::i64)
      .value("f32", K::f32)
      .value("f64", K::f64)
      .value("tensor_map", K::tensor_map);
  py::class_<kiln::TensorView>(m, "TensorDesc", "A tensor's shape, dtype and strides, no data")
      .def_readonly("shape", &kiln::TensorView::shape)
      .def_readonly("dtype", &kiln::TensorView::dtype);
  m.def(
      "desc",
      [](const py::sequence& shape, const py::object& dtype, const py::object& strides) {
        kiln::TensorView v;
        v.shape = shape_of(shape);
        v.dtype = dtype_of(dtype);
        if (!strides.is_none()) v.strides = strides.cast<kiln::Shape>();
        return v;
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("strides") = py::none());
  py::class_<kiln::Template>(m, "Template", "A user's kernel template (docs/templates.md)")
      .def(py::init<std::string, std::string>(), py::arg("name"), py::arg("source"))
      .def_static("from_file", &kiln::Template::from_file, py::arg("path"))
      .def("header", &kiln::Template::header, py::arg("name"), py::arg("text"),
           py::return_value_policy::reference_internal)
      .def(
          "params",
          [](kiln::Template& t, const std::vector<py::tuple>& params) -> kiln::Template& {
            std::vector<kiln::TemplateParam> out;
            for (const py::tuple& p : params) {  // (name, kind[, box[, swizzle]])
              kiln::TemplateParam q{p[0].cast<std::string>(), p[1].cast<K>()};
              if (p.size() > 2) q.box = p[2].cast<std::vector<std::string>>();
              if (p.size() > 3) q.swizzle = p[3].cast<int>();
              out.push_back(std::move(q));
            }
            return t.params(std::move(out));
          },
          py::arg("params"), py::return_value_policy::reference_internal)
      .def("instance", &kiln::Template::instance, py::arg("instance"),
           py::return_value_policy::reference_internal)
      .def("tunable", &kiln::Template::tunable, py::arg("name"), py::arg("candidates"),
           py::return_value_policy::reference_internal)
      .def("launch", &kiln::Template::launch, py::arg("grid"), py::arg("block"),
           py::return_value_policy::reference_internal)
      .def("shared_bytes", &kiln::Template::shared_bytes, py::arg("bytes"),
           py::return_value_policy::reference_internal)
      .def("output", &kiln::Template::output, py::arg("param"), py::arg("like"),
           py::arg("shape") = std::vector<std::string>{},
           py::return_value_policy::reference_internal)
      .def_property_readonly("name", &kiln::Template::name);
  m.def(
      "precompile",
      [](kiln::Engine& e, const kiln::Template& t, const py::sequence& args,
         const std::map<std::string, int>& tunables) {
        const std::vector<kiln::Operand> operands = operands_of(args);
        kiln::KernelRecord r;
        {
          py::gil_scoped_release release;
          r = kiln::precompile(e, t, operands, tunables);
        }
        return record_of(r);
      },
      py::arg("engine"), py::arg("template"), py::arg("args"),
      py::arg("tunables") = std::map<std::string, int>{});
}

}  // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln, a JIT kernel engine for NVIDIA GPUs: graphs, plans and engines";
  errors(m);
  engines(m);
  graphs(m);
  templates(m);
}
