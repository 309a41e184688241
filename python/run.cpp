// Plans run on tensors from Python: inputs and given outputs read in place (torch tensors through
// their attributes, other producers by DLPack), missing outputs allocated by the caller's
// allocator (torch's, from kiln/__init__.py) or by kiln.
#include "run.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <vector>

#include "dlpack.hpp"

namespace kiln::python {
namespace {

// A view of `value` (a kiln.Tensor, a torch tensor read through `torch` when torch is in use,
// or any object with __dlpack__, its capsule kept in `keep` while the run uses it).
TensorView view_of(const py::handle& value, Engine& engine, const std::string& what,
                   const std::optional<TorchTypes>& torch, std::vector<py::object>& keep) {
  if (py::isinstance<OwnedTensor>(value)) {
    const OwnedTensor& t = value.cast<const OwnedTensor&>();
    if (t.device != engine.device())
      throw ArgumentError(fmt::format("{}: a kiln.Tensor on cuda:{}, the engine runs on cuda:{}",
                                      what, t.device, engine.device()));
    return t.tensor.view();
  }
  if (torch && py::isinstance(value, torch->tensor))
    return torch_view(value, *torch, engine.device(), what);
  Borrowed b = borrow(value, engine, what);
  keep.push_back(std::move(b.capsule));
  return b.view;
}

std::map<std::string, TensorView> views_of(const py::dict& tensors, Engine& engine,
                                           const char* role, const std::optional<TorchTypes>& torch,
                                           std::vector<py::object>& keep) {
  std::map<std::string, TensorView> views;
  for (const auto& [key, value] : tensors) {
    const std::string name = key.cast<std::string>();
    views[name] = view_of(value, engine, fmt::format("{} '{}'", role, name), torch, keep);
  }
  return views;
}

py::dict run_plan(const Plan& plan, const py::object& engine_obj, const py::dict& inputs,
                  const py::dict& outputs, const py::object& alloc, bool replay,
                  const py::object& torch_types) {
  Engine& engine = engine_obj.cast<Engine&>();
  std::optional<TorchTypes> torch;
  if (!torch_types.is_none())
    torch = TorchTypes{torch_types[py::int_(0)], torch_types[py::int_(1)].cast<py::dict>()};
  std::vector<py::object> keep;
  const std::map<std::string, TensorView> in = views_of(inputs, engine, "input", torch, keep);
  std::map<std::string, TensorView> out = views_of(outputs, engine, "output", torch, keep);
  py::dict result;
  for (const auto& [key, value] : outputs) result[key] = value;
  if (!alloc.is_none())
    for (const auto& [name, desc] : plan.outputs(in)) {
      if (out.count(name)) continue;
      py::object made = alloc(desc.shape, desc.dtype, desc.strides);
      out[name] = view_of(made, engine, fmt::format("output '{}'", name), torch, keep);
      result[py::str(name)] = made;
    }
  std::map<std::string, Tensor> made;
  {
    py::gil_scoped_release release;  // a first call compiles; launches may wait on the driver
    made = replay ? plan.replay(engine, in, out) : plan.run(engine, in, out);
  }
  for (auto& [name, t] : made)
    result[py::str(name)] = OwnedTensor{std::move(t), engine.device(), engine_obj};
  return result;
}

}  // namespace

void bind_runs(py::module_& m) {
  m.def("_run", &run_plan, py::arg("plan"), py::arg("engine"), py::arg("inputs"),
        py::arg("outputs"), py::arg("alloc"), py::arg("replay"), py::arg("torch") = py::none());
  m.def(
      "_outputs",
      [](const Plan& plan, const std::map<std::string, TensorView>& inputs) {
        return plan.outputs(inputs);
      },
      py::arg("plan"), py::arg("inputs"));
}

}  // namespace kiln::python
