#pragma once
// What the module's files share: Python values as kiln's dtypes, shapes and kernel records, and
// each file's bindings.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: one set of type casters

#include <kiln/kiln.hpp>

namespace kiln::python {

namespace py = pybind11;

/// A kiln.DType or its name ("bf16"); DtypeError otherwise.
DType dtype_of(const py::handle& o);
/// Extents; None or "?" is a dynamic dim (-1). ArgumentError for anything else.
Shape shape_of(const py::sequence& dims);
/// A KernelRecord as a dict (name, key, source, compile_ms, registers, spill_bytes).
py::dict record_of(const KernelRecord& r);

/// kiln.Template, kiln.desc and kiln.precompile (templates.cpp).
void bind_templates(py::module_& m);

}  // namespace kiln::python
