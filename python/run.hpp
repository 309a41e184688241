#pragma once
// Plans run on tensors from Python (the module functions _run and _outputs; kiln/__init__.py
// makes them Plan.run, Plan.replay and Plan.outputs).
#include <pybind11/pybind11.h>

namespace kiln::python {

void bind_runs(pybind11::module_& m);

}  // namespace kiln::python
