// kiln's error classes as Python exceptions under kiln.Error, their messages in Python's terms:
// where the C++ library names its own API ("EngineOptions::offline"), a Python caller reads the
// call that does the same (kiln.Engine(..., offline=True)).
#include <array>
#include <string_view>
#include <utility>

#include "module.hpp"

namespace kiln::python {
namespace {

// C++ spellings in the library's messages and their Python ones (the options kiln.Engine takes),
// the longer phrases first so that a whole piece of advice is rewritten before its words are.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kPythonTerms{{
    {"create the engine with EngineOptions::offline and an arch such as sm_90a",
     "create the engine as kiln.Engine(arch=\"sm_90a\", offline=True)"},
    {"needs EngineOptions::arch (for example sm_90a)",
     "needs an arch: kiln.Engine(arch=\"sm_90a\", offline=True)"},
    {"set EngineOptions::arch to this device's",
     "create the engine without an arch (kiln.Engine() takes this device's)"},
    {"EngineOptions::offline", "kiln.Engine(offline=True)"},
    {"EngineOptions::arch", "kiln.Engine(arch=...)"},
    {"EngineOptions::device", "kiln.Engine(device=...)"},
    {"EngineOptions::cache_dir", "kiln.Engine(cache_dir=...)"},
    {"Template::", "Template."},
}};

std::string in_python_terms(std::string message) {
  for (const auto& [cpp, python] : kPythonTerms)
    for (std::size_t at = message.find(cpp); at != std::string::npos;
         at = message.find(cpp, at + python.size()))
      message.replace(at, cpp.size(), python);
  return message;
}

}  // namespace

// The module holds the classes; the translator raises them through the C API (pybind11's
// exception call is deprecated).
void bind_errors(py::module_& m) {
  static PyObject* error = py::exception<Error>(m, "Error").ptr();
  static PyObject* cuda = py::exception<CudaError>(m, "CudaError", error).ptr();
  static PyObject* compile = py::exception<CompileError>(m, "CompileError", error).ptr();
  static PyObject* cache = py::exception<CacheError>(m, "CacheError", error).ptr();
  static PyObject* shape = py::exception<ShapeError>(m, "ShapeError", error).ptr();
  static PyObject* dtype = py::exception<DtypeError>(m, "DtypeError", error).ptr();
  static PyObject* graph = py::exception<GraphError>(m, "GraphError", error).ptr();
  static PyObject* argument = py::exception<ArgumentError>(m, "ArgumentError", error).ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    const auto raise = [](PyObject* type, const Error& e) {
      PyErr_SetString(type, in_python_terms(e.what()).c_str());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CudaError& e) {
      raise(cuda, e);
    } catch (const CompileError& e) {
      PyErr_SetString(compile, e.what());  // as NVRTC and the source say it: C++ is its subject
    } catch (const CacheError& e) {
      raise(cache, e);
    } catch (const ShapeError& e) {
      raise(shape, e);
    } catch (const DtypeError& e) {
      raise(dtype, e);
    } catch (const GraphError& e) {
      raise(graph, e);
    } catch (const ArgumentError& e) {
      raise(argument, e);
    } catch (const Error& e) {
      raise(error, e);
    }
  });
}

}  // namespace kiln::python
