// Users' templates from Python (docs/templates.md): kiln.Template, kiln.desc for a tensor
// without data, and kiln.precompile.
#include <fmt/format.h>
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

// kiln.desc([1000], 'bf16'): the call that makes it.
std::string desc_repr(const kiln::TensorView& v) {
  const std::string strides =
      v.strides.empty() ? "" : fmt::format(", strides={}", kiln::to_string(v.strides));
  return fmt::format("kiln.desc({}, '{}'{})", std::string(py::repr(dims_of(v.shape))),
                     kiln::name_of(v.dtype), strides);
}

std::vector<std::string> param_names(const kiln::Template& t) {
  std::vector<std::string> names;
  for (const kiln::TemplateParam& p : t.param_list()) names.push_back(p.name);
  return names;
}

void bind_template_class(py::module_& m) {
  using K = kiln::TemplateParam::Kind;
  constexpr auto self = py::return_value_policy::reference_internal;  // setters chain
  py::class_<kiln::Template>(m, "Template", "A user's kernel template (docs/templates.md)")
      .def(py::init<std::string, std::string>(), py::arg("name"), py::arg("source"),
           "a template from source text, which kernels include as `name` (\"gauss.cuh\")")
      .def_static("from_file", &kiln::Template::from_file, py::arg("path"),
                  "the template in a file, named by its file name")
      .def("header", &kiln::Template::header, py::arg("name"), py::arg("text"), self,
           "a header the template includes as #include \"name\"; part of every kernel's key")
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
          py::arg("params"), self,
          "the kernel's parameters in order: (name, kiln.ParamKind), or (name, "
          "ParamKind.tensor_map, box, swizzle)")
      .def("instance", &kiln::Template::instance, py::arg("instance"), self,
           "the __global__ instance to compile: \"gauss<{x}, {BLOCK}>\", {x} a tensor's device "
           "type, {BLOCK} a tunable's value, {n} an integer parameter's")
      .def("tunable", &kiln::Template::tunable, py::arg("name"), py::arg("candidates"), self,
           "a tunable integer of the instance and its candidates, the first the default")
      .def("launch", &kiln::Template::launch, py::arg("grid"), py::arg("block"), self,
           "the grid and block dims, expressions over the parameters and tunables "
           "([\"ceilf(x_numel / BLOCK)\"], [\"BLOCK\"])")
      .def("shared_bytes", &kiln::Template::shared_bytes, py::arg("bytes"), self,
           "dynamic shared memory per block, an expression as launch's (default \"0\")")
      .def("output", &kiln::Template::output, py::arg("param"), py::arg("like"),
           py::arg("shape") = std::vector<std::string>{}, self,
           "as a graph node (Graph.define_template): the tensor parameter its result is written "
           "through, of the dtype and shape of parameter `like` (or `shape`, expressions)")
      .def_property_readonly("name", &kiln::Template::name, "the name kernels include it as")
      .def_property_readonly("param_names", &param_names, "the parameters' names, in order")
      .def_property_readonly("output_param", &kiln::Template::output_param,
                             "the parameter a graph node's result is written through, or \"\"")
      .def("__repr__", [](const kiln::Template& t) {
        return fmt::format("<kiln.Template {}: params {}; instance {}>", t.name(),
                           fmt::join(param_names(t), ", "), t.instance_text());
      });
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
      .def_property_readonly(
          "shape", [](const kiln::TensorView& v) { return dims_of(v.shape); },
          "the extents, None for a dynamic dim")
      .def_readonly("dtype", &kiln::TensorView::dtype, "a kiln.DType")
      .def_readonly("strides", &kiln::TensorView::strides, "in elements; [] for contiguous")
      .def("__repr__", &desc_repr);
  m.def(
      "desc",
      [](const py::object& shape, const py::object& dtype, const py::object& strides) {
        kiln::TensorView v;
        v.shape = shape_of(shape);
        v.dtype = dtype_of(dtype);
        if (!strides.is_none()) v.strides = strides.cast<kiln::Shape>();
        return v;
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("strides") = py::none(),
      "A tensor's description without data, for compiling (kiln.precompile) and shapes "
      "(Plan.output_descs): shape as Graph.input takes it, dtype a name, kiln.DType or "
      "torch.dtype, strides in elements (default contiguous).");
  bind_template_class(m);
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
      py::arg("tunables") = std::map<std::string, int>{},
      "Compiles (or finds cached) the kernel of `template` for `args` (kiln.desc for "
      "tensors, numbers for scalars) and `tunables` ({\"BLOCK\": 128}; default the first "
      "candidates), no GPU needed. Returns its record, as Plan.compile does.");
}

}  // namespace kiln::python
