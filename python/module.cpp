// kiln's Python module (_kiln; python/kiln/__init__.py adds a function per catalog op, Plan.run
// and the torch glue): engines, plans and tuning here; kiln's error classes (errors.cpp),
// graphs and their values (graphs.cpp), users' templates (templates.cpp), and runs on tensors
// by DLPack (dlpack.cpp, run.cpp), over the C++ library.
#include "module.hpp"

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <kiln/kiln.hpp>
#include <memory>

#include "dlpack.hpp"
#include "run.hpp"

namespace kiln::python {
namespace {

py::list records_of(const std::vector<KernelRecord>& records) {
  py::list out;
  for (const KernelRecord& r : records) out.append(record_of(r));
  return out;
}

std::string engine_repr(const Engine& e) {
  const std::string where =
      e.has_device() ? fmt::format("on cuda:{} ({})", e.device(), e.device_name()) : "offline";
  return fmt::format("<kiln.Engine {} {}, cache {}>", e.arch(), where, e.cache_dir());
}

py::dict counters_of(const Engine& e) {
  const CacheCounters c = e.counters();
  py::dict d;
  d["compiles"] = c.compiles;
  d["memory_hits"] = c.memory_hits;
  d["bundle_hits"] = c.bundle_hits;
  d["disk_hits"] = c.disk_hits;
  d["bad_entries"] = c.bad_entries;
  d["remote_hits"] = c.remote_hits;
  d["remote_misses"] = c.remote_misses;
  d["remote_refused"] = c.remote_refused;
  d["remote_errors"] = c.remote_errors;
  d["remote_waits"] = c.remote_waits;
  d["compile_ms"] = c.compile_ms;
  return d;
}

void bind_engine(py::module_& m) {
  py::class_<Engine>(m, "Engine", "A CUDA context, stream and kernel cache")
      .def(py::init(
               [](int device, const std::string& arch, bool offline, const py::object& cache_dir) {
                 EngineOptions o;
                 o.device = device;
                 o.arch = arch;
                 o.offline = offline;
                 if (!cache_dir.is_none()) o.cache_dir = cache_dir.cast<std::string>();
                 py::gil_scoped_release release;  // a device engine creates its context
                 return std::make_unique<Engine>(o);
               }),
           py::arg("device") = 0, py::arg("arch") = "", py::arg("offline") = false,
           py::arg("cache_dir") = py::none(),
           "An engine on GPU `device`, compiling for its arch unless `arch` (\"sm_90a\") is "
           "given. offline=True touches no GPU: kernels for `arch` are compiled and cached, never "
           "launched. cache_dir: the disk cache (default $KILN_CACHE_DIR, else ~/.cache/kiln).")
      .def_property_readonly("arch", &Engine::arch, "the arch kernels are compiled for")
      .def_property_readonly("device", &Engine::device, "the CUDA device ordinal")
      .def_property_readonly(
          "stream", [](const Engine& e) { return reinterpret_cast<std::intptr_t>(e.stream()); },
          "the CUstream launches go to, as an integer")
      .def(
          "set_stream",
          [](Engine& e, std::intptr_t s) { e.set_stream(reinterpret_cast<void*>(s)); },
          py::arg("stream"), "launch on this CUstream (an integer handle) from now on")
      .def("use_own_stream", &Engine::use_own_stream,
           "launch on the engine's own stream again, after the work queued so far")
      .def("synchronize", &Engine::synchronize, py::call_guard<py::gil_scoped_release>(),
           "waits until the engine's stream is idle")
      .def_property_readonly("has_device", &Engine::has_device, "False for an offline engine")
      .def_property_readonly("device_name", &Engine::device_name,
                             "the GPU's name, or \"(offline)\"")
      .def_property_readonly("cache_dir", &Engine::cache_dir,
                             "the kernel cache's directory (or why there is none)")
      .def("counters", &counters_of,
           "the kernel cache's counters: compiles, memory_hits, bundle_hits, disk_hits, "
           "bad_entries, remote_hits, remote_misses, remote_refused, remote_errors, remote_waits, "
           "compile_ms")
      .def(
          "kernels", [](const Engine& e) { return records_of(e.kernels()); },
          "every kernel prepared so far, in order: dicts of name, key, source, compile_ms, "
          "registers, spill_bytes")
      .def("__repr__", &engine_repr);
}

py::list plan_kernels(const Plan& p, const std::string& arch) {
  py::list out;
  for (const PlanKernel& k : p.kernels(arch)) {
    py::dict d;
    d["name"] = k.name;
    d["ops"] = k.ops;
    d["grid"] = k.grid;
    d["block"] = k.block;
    out.append(d);
  }
  return out;
}

std::vector<std::string> names_of(const Graph& g, const std::vector<int>& ids) {
  std::vector<std::string> names;
  for (const int id : ids) names.push_back(g.node(id).name);
  return names;
}

void bind_plan(py::module_& m) {
  py::class_<Plan>(m, "Plan", "A graph's kernels, fused, for engines to compile and run")
      .def(py::init([](const Graph& g, bool fuse) { return std::make_unique<Plan>(g, fuse); }),
           py::arg("graph"), py::arg("fuse") = true,
           "Fuses `graph` into kernels (fuse=False: one kernel per op). The plan keeps a copy: "
           "later changes to the graph do not reach it.")
      .def("kernels", &plan_kernels, py::arg("arch") = "sm_90a",
           "the kernels for `arch`, no GPU needed: dicts of name, ops (the nodes each computes), "
           "grid and block (0 where a dynamic dim sets them)")
      .def(
          "compile",
          [](const Plan& p, Engine& e) {
            std::vector<KernelRecord> records;
            {
              py::gil_scoped_release release;  // NVRTC, side by side
              records = p.compile(e);
            }
            return records_of(records);
          },
          py::arg("engine"),
          "Compiles every kernel for the engine's arch into its cache, or finds it there; an "
          "offline engine needs no GPU. Returns a dict per kernel: name, key, source "
          "(\"compiled\", \"bundle\", \"disk\" or \"memory\"), compile_ms, registers, "
          "spill_bytes.")
      .def_property_readonly(
          "inputs",
          [](const Plan& p) {
            std::vector<std::string> names;
            for (const auto& n : p.graph().nodes())
              if (n.op == "input") names.push_back(n.name);
            return names;
          },
          "the graph's inputs' names, in order: what Plan.run takes")
      .def_property_readonly(
          "outputs", [](const Plan& p) { return names_of(p.graph(), p.graph().outputs()); },
          "the graph's outputs' names, in order: what Plan.run returns")
      .def("__repr__",
           [](const Plan& p) { return fmt::format("<kiln.Plan: {}>", graph_summary(p.graph())); });
}

py::list tune(Engine& e, const py::object& graphs, double budget_s) {
  std::vector<Graph> gs;
  if (py::isinstance<Graph>(graphs))
    gs.push_back(graphs.cast<const Graph&>());
  else
    for (const py::handle g : graphs) gs.push_back(g.cast<const Graph&>());
  std::vector<TunedKernel> tuned;
  {
    py::gil_scoped_release release;  // compiles and times every candidate
    tuned = kiln::tune(e, gs, budget_s);
  }
  py::list out;
  for (const TunedKernel& k : tuned) {
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
}

void bind_engines(py::module_& m) {
  py::enum_<DType> dtype(m, "DType",
                         "kiln's element types (torch's float32, float16, bfloat16, bool, "
                         "int32, int64)");
  dtype.value("f32", DType::f32)
      .value("f16", DType::f16)
      .value("bf16", DType::bf16)
      .value("bool", DType::boolean)
      .value("i32", DType::i32)
      .value("i64", DType::i64);
  // Replaces pybind11's <DType.bf16: 2> (a .def would only add an overload behind it).
  dtype.attr("__repr__") =
      py::cpp_function([](DType d) { return fmt::format("kiln.DType.{}", name_of(d)); },
                       py::name("__repr__"), py::is_method(dtype));
  bind_engine(m);
  bind_plan(m);
  m.def(
      "gpu_available", [] { return kiln::gpu_available(); },
      "whether a CUDA driver loads and reports a GPU");
  m.def("tune", &tune, py::arg("engine"), py::arg("graphs"), py::arg("budget_s") = 0.0,
        "kiln tune from Python: each kernel's candidates timed on the engine's GPU, the winners "
        "saved as this GPU's records in its cache directory (engines made afterwards apply "
        "them)");
}

}  // namespace
}  // namespace kiln::python

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln, a JIT kernel engine for NVIDIA GPUs: graphs, plans and engines";
  m.attr("__version__") = KILN_VERSION;  // the project's version, from CMakeLists.txt
  kiln::python::bind_errors(m);
  kiln::python::bind_engines(m);
  kiln::python::bind_graphs(m);
  kiln::python::bind_templates(m);
  kiln::python::bind_tensors(m);
  kiln::python::bind_runs(m);
}
