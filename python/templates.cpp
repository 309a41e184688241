// Users' templates from Python (docs/templates.md): kiln.Template, kiln.desc for a tensor
// without data, and kiln.precompile.
#include <pybind11/stl.h>

#include "module.hpp"

namespace kiln::python {
namespace {

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

}  // namespace

void bind_templates(py::module_& m) {
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

}  // namespace kiln::python
