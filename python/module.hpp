#pragma once
// What the module's files share: Python values as kiln's dtypes, shapes, attributes and kernel
// records (convert.cpp), and each file's bindings.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: one set of type casters

#include <kiln/kiln.hpp>
#include <kiln/op_schema.hpp>
#include <string>

namespace kiln::python {

namespace py = pybind11;

/// A kiln.DType, its name ("bf16"), torch's name ("bfloat16") or a torch.dtype (read by its
/// name: torch need not be imported); DtypeError otherwise.
DType dtype_of(const py::handle& o);
/// Extents >= 0; None or "?" is a dynamic dim (-1). ArgumentError for anything else, -1
/// included: it is no spelling of "dynamic" in Python.
Shape shape_of(const py::handle& dims);
/// A shape as Python reads it: a dynamic dim is None.
py::list dims_of(const Shape& shape);
/// Op `op`'s keyword attributes, read through its schema; ArgumentError naming the op and the
/// attribute for an unknown one (with a hint: kiln's name where torch's differs, dim is axis; the
/// attribute a typo is near), a value of the wrong type or outside its range.
Attrs attrs_of(const OpSchema& op, const py::kwargs& kw);
/// `op`'s schema for Python: name, operands, required_operands, attrs (dicts of name, type,
/// default, required, range, doc), doc and dtypes: what kiln/__init__.py writes docstrings from.
py::dict schema_dict(const OpSchema& op);
/// A KernelRecord as a dict (name, key, source, compile_ms, registers, spill_bytes).
py::dict record_of(const KernelRecord& r);

/// kiln.Error and its subclasses, raised for kiln's C++ exceptions with the C++ API their
/// messages name spelled as Python calls it (errors.cpp).
void bind_errors(py::module_& m);
/// kiln.Graph, kiln.Value, kiln._apply and kiln.op_names (graphs.cpp).
void bind_graphs(py::module_& m);
/// "inputs x, mask; outputs y", for reprs (graphs.cpp).
std::string graph_summary(const Graph& g);
/// kiln.Template, kiln.desc and kiln.precompile (templates.cpp).
void bind_templates(py::module_& m);

}  // namespace kiln::python
