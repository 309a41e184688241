// kiln's Python module (_kiln; python/kiln/__init__.py adds a function per catalog op and the
// torch glue): graphs and their values, plans, engines, kiln's error classes, users' templates,
// and runs on tensors by DLPack (dlpack.cpp, run.cpp), over the C++ library.
#include "module.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <kiln/kiln.hpp>
#include <memory>

#include "dlpack.hpp"
#include "run.hpp"

namespace py = pybind11;

namespace kiln::python {

kiln::DType dtype_of(const py::handle& o) {
  if (py::isinstance<kiln::DType>(o)) return o.cast<kiln::DType>();
  if (!py::isinstance<py::str>(o))
    throw kiln::DtypeError(
        "a dtype is a kiln.DType or one of \"f32\", \"f16\", \"bf16\", \"bool\"");
  return kiln::parse_dtype(o.cast<std::string>());
}

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

}  // namespace kiln::python

using kiln::python::dtype_of;
using kiln::python::record_of;
using kiln::python::shape_of;

namespace {

// A graph value and the graph it belongs to (Python may drop the Graph object first).
struct PyValue {
  std::shared_ptr<kiln::Graph> graph;
  kiln::Value value;
};

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
    else if (k == "start")
      a.start = value.cast<std::int64_t>();
    else if (k == "stop")
      a.stop = value.cast<std::int64_t>();
    else
      throw kiln::ArgumentError("unknown attribute '" + k +
                                "' (min, max, dtype, axis, keepdim, eps, tf32, shape, start, stop)");
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

// kiln's error classes as Python exceptions under kiln.Error. The module holds the classes;
// the translator raises them through the C API (pybind11's exception call is deprecated).
void errors(py::module_& m) {
  static PyObject* error = py::exception<kiln::Error>(m, "Error").ptr();
  static PyObject* cuda = py::exception<kiln::CudaError>(m, "CudaError", error).ptr();
  static PyObject* compile = py::exception<kiln::CompileError>(m, "CompileError", error).ptr();
  static PyObject* cache = py::exception<kiln::CacheError>(m, "CacheError", error).ptr();
  static PyObject* shape = py::exception<kiln::ShapeError>(m, "ShapeError", error).ptr();
  static PyObject* dtype = py::exception<kiln::DtypeError>(m, "DtypeError", error).ptr();
  static PyObject* graph = py::exception<kiln::GraphError>(m, "GraphError", error).ptr();
  static PyObject* argument = py::exception<kiln::ArgumentError>(m, "ArgumentError", error).ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kiln::CudaError& e) {
      PyErr_SetString(cuda, e.what());
    } catch (const kiln::CompileError& e) {
      PyErr_SetString(compile, e.what());
    } catch (const kiln::CacheError& e) {
      PyErr_SetString(cache, e.what());
    } catch (const kiln::ShapeError& e) {
      PyErr_SetString(shape, e.what());
    } catch (const kiln::DtypeError& e) {
      PyErr_SetString(dtype, e.what());
    } catch (const kiln::GraphError& e) {
      PyErr_SetString(graph, e.what());
    } catch (const kiln::ArgumentError& e) {
      PyErr_SetString(argument, e.what());
    } catch (const kiln::Error& e) {
      PyErr_SetString(error, e.what());
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
      .def(py::init(
               [](int device, const std::string& arch, bool offline, const py::object& cache_dir) {
                 kiln::EngineOptions o;
                 o.device = device;
                 o.arch = arch;
                 o.offline = offline;
                 if (!cache_dir.is_none()) o.cache_dir = cache_dir.cast<std::string>();
                 py::gil_scoped_release release;  // a device engine creates its context
                 return std::make_unique<kiln::Engine>(o);
               }),
           py::arg("device") = 0, py::arg("arch") = "", py::arg("offline") = false,
           py::arg("cache_dir") = py::none())
      .def_property_readonly("arch", &kiln::Engine::arch)
      .def_property_readonly("device", &kiln::Engine::device)
      .def_property_readonly(
          "stream",
          [](const kiln::Engine& e) { return reinterpret_cast<std::intptr_t>(e.stream()); },
          "the CUstream launches go to, as an integer")
      .def(
          "set_stream",
          [](kiln::Engine& e, std::intptr_t s) { e.set_stream(reinterpret_cast<void*>(s)); },
          py::arg("stream"), "launch on this CUstream (an integer handle) from now on")
      .def("use_own_stream", &kiln::Engine::use_own_stream)
      .def("synchronize", &kiln::Engine::synchronize, py::call_guard<py::gil_scoped_release>())
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
          py::arg("engine"))
      .def_property_readonly("inputs",
                             [](const kiln::Plan& p) {
                               std::vector<std::string> names;
                               for (const auto& n : p.graph().nodes())
                                 if (n.op == "input") names.push_back(n.name);
                               return names;
                             })
      .def_property_readonly("outputs", [](const kiln::Plan& p) {
        std::vector<std::string> names;
        for (int id : p.graph().outputs()) names.push_back(p.graph().node(id).name);
        return names;
      });
  m.def("gpu_available", [] { return kiln::gpu_available(); });
  m.def(
      "tune",
      [](kiln::Engine& e, const py::object& graphs, double budget_s) {
        std::vector<kiln::Graph> gs;
        if (py::isinstance<kiln::Graph>(graphs))
          gs.push_back(graphs.cast<const kiln::Graph&>());
        else
          for (const py::handle g : graphs) gs.push_back(g.cast<const kiln::Graph&>());
        std::vector<kiln::TunedKernel> tuned;
        {
          py::gil_scoped_release release;  // compiles and times every candidate
          tuned = kiln::tune(e, gs, budget_s);
        }
        py::list out;
        for (const kiln::TunedKernel& k : tuned) {
          py::dict d;
          d["kernel"] = k.kernel;
          d["candidates"] = k.candidates;
          d["skipped"] = k.skipped;
          d["default_us"] = k.default_us;
          d["tuned_us"] = k.tuned_us;
          d["winner"] = k.winner;
          out.append(d);
        }
        return out;
      },
      py::arg("engine"), py::arg("graphs"), py::arg("budget_s") = 0.0,
      "kiln tune from Python: each kernel's candidates timed on the engine's GPU, the winners "
      "saved as this GPU's records in its cache directory (engines made afterwards apply them)");
}

}  // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln, a JIT kernel engine for NVIDIA GPUs: graphs, plans and engines";
  errors(m);
  engines(m);
  graphs(m);
  kiln::python::bind_templates(m);
  kiln::python::bind_tensors(m);
  kiln::python::bind_runs(m);
}
