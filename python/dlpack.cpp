#include "dlpack.hpp"

#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace kiln::python {
namespace {

constexpr std::uint8_t kDLBoolCode = 6;  // DLPack 0.8's kDLBool; Debian ships 0.6's header

DType dtype_of(const DLDataType& t, const std::string& what) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::f32;
    if (t.code == kDLFloat && t.bits == 16) return DType::f16;
    if (t.code == kDLBfloat && t.bits == 16) return DType::bf16;
    if (t.code == kDLBoolCode && t.bits == 8) return DType::boolean;
    if (t.code == kDLInt && t.bits == 32) return DType::i32;
    if (t.code == kDLInt && t.bits == 64) return DType::i64;
  }
  throw DtypeError(
      fmt::format("{}: a tensor of DLPack type (code {}, {} bits, {} lanes); kiln "
                  "takes f32, f16, bf16, bool, i32 and i64",
                  what, t.code, t.bits, t.lanes));
}

DLDataType dl_type_of(DType d) {
  switch (d) {
    case DType::f32:
      return {kDLFloat, 32, 1};
    case DType::f16:
      return {kDLFloat, 16, 1};
    case DType::bf16:
      return {kDLBfloat, 16, 1};
    case DType::boolean:
      return {kDLBoolCode, 8, 1};
    case DType::i32:
      return {kDLInt, 32, 1};
    case DType::i64:
      return {kDLInt, 64, 1};
  }
  return {kDLFloat, 32, 1};
}

// Refuses memory kiln cannot read in place (the host's, another GPU's), given its DLPack device.
void check_device(int type, int id, int device, const std::string& what) {
  if ((type == kDLCUDA || type == kDLCUDAManaged) && id == device) return;
  const std::string where = type == kDLCPU ? "host memory (cpu)"
                            : type == kDLCUDA || type == kDLCUDAManaged
                                ? fmt::format("cuda:{}", id)
                                : fmt::format("DLPack device type {}", type);
  throw ArgumentError(
      fmt::format("{}: a tensor in {}, but the engine runs on cuda:{}; kiln reads "
                  "tensors in place and never copies them: move it there first",
                  what, where, device));
}

// Bytes from the first element to one past the last one reached (0 for an empty tensor, or
// unknown with a negative stride: kiln's checks refuse those).
std::uint64_t extent_bytes(const TensorView& v) {
  std::int64_t last = 0;
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] == 0) return 0;
    if (v.strides[d] < 0) return 0;
    last += (v.shape[d] - 1) * v.strides[d];
  }
  return std::uint64_t(last + 1) * size_of(v.dtype);
}

// The consumer's stream for DLPack: the engine's, where 0 (the legacy default stream) is
// spelled 1, as DLPack asks.
std::intptr_t dlpack_stream(Engine& engine) {
  const auto s = reinterpret_cast<std::intptr_t>(engine.stream());
  return s == 0 ? 1 : s;
}

struct Exported {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<std::int64_t> shape, strides;
};

void release_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;  // consumed: "used_dltensor"
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

}  // namespace

Borrowed borrow(const py::handle& obj, Engine& engine, const std::string& what) {
  if (!py::hasattr(obj, "__dlpack__") || !py::hasattr(obj, "__dlpack_device__"))
    throw ArgumentError(fmt::format(
        "{}: a {} is not a tensor kiln can read (no __dlpack__); pass a torch, CuPy or JAX array "
        "on the GPU, or a kiln.Tensor",
        what, std::string(py::str(py::type::of(obj).attr("__name__")))));
  const auto [type, id] = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
  check_device(type, id, engine.device(), what);
  Borrowed b;
  b.capsule = obj.attr("__dlpack__")(py::arg("stream") = dlpack_stream(engine));
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(b.capsule.ptr(), "dltensor"));
  if (!m) {
    PyErr_Clear();
    throw ArgumentError(what + ": its __dlpack__ gave no \"dltensor\" capsule");
  }
  const DLTensor& t = m->dl_tensor;
  b.view.dtype = dtype_of(t.dtype, what);
  b.view.shape.assign(t.shape, t.shape + t.ndim);
  if (t.strides) b.view.strides.assign(t.strides, t.strides + t.ndim);
  b.view.strides = b.view.resolved_strides();
  b.view.data = reinterpret_cast<std::uint64_t>(t.data) + t.byte_offset;
  b.view.capacity = extent_bytes(b.view);
  return b;
}

TensorView torch_view(const py::handle& t, const TorchTypes& torch, int device,
                      const std::string& what) {
  const int index = t.attr("get_device")().cast<int>();  // -1: the host
  check_device(index < 0 ? kDLCPU : kDLCUDA, index, device, what);
  const py::object dtype = t.attr("dtype");
  if (!torch.dtypes.contains(dtype))
    throw DtypeError(fmt::format("{}: a tensor of {}; kiln takes f32, f16, bf16, bool, i32 and i64",
                                 what, std::string(py::str(dtype))));
  TensorView v;
  v.dtype = torch.dtypes[dtype].cast<DType>();
  v.shape = t.attr("shape").cast<Shape>();
  v.strides = t.attr("stride")().cast<Shape>();
  v.data = t.attr("data_ptr")().cast<std::uint64_t>();
  v.capacity = extent_bytes(v);
  return v;
}

py::capsule OwnedTensor::dlpack(const py::object& stream) const {
  const std::intptr_t s = stream.is_none() ? 1 : stream.cast<std::intptr_t>();
  if (s != -1) engine.cast<Engine&>().join(reinterpret_cast<void*>(s));
  auto* e = new Exported;
  e->tensor = tensor;
  e->shape = tensor.shape();
  e->strides = tensor.view().resolved_strides();
  DLTensor& t = e->managed.dl_tensor;
  t.data = reinterpret_cast<void*>(tensor.view().data);
  t.device = {kDLCUDA, device};
  t.ndim = int(e->shape.size());
  t.dtype = dl_type_of(tensor.dtype());
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); };
  return py::capsule(&e->managed, "dltensor", &release_capsule);
}

void bind_tensors(py::module_& m) {
  py::class_<OwnedTensor>(m, "Tensor",
                          "Device memory kiln allocated (a run's outputs without torch); read it "
                          "with torch.from_dlpack or cupy.from_dlpack, no copy")
      .def_property_readonly(
          "shape", [](const OwnedTensor& t) { return t.tensor.shape(); }, "the extents")
      .def_property_readonly(
          "dtype", [](const OwnedTensor& t) { return t.tensor.dtype(); }, "a kiln.DType")
      .def_property_readonly(
          "data_ptr", [](const OwnedTensor& t) { return t.tensor.view().data; },
          "the device address of its first element")
      .def(
          "__dlpack__",
          [](const OwnedTensor& t, const py::object& stream, const py::kwargs& kw) {
            if (kw.contains("copy") && py::bool_(kw["copy"]))
              throw py::buffer_error("a kiln.Tensor is exported without a copy (copy=True)");
            return t.dlpack(stream);
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const OwnedTensor& t) { return py::make_tuple(int(kDLCUDA), t.device); })
      .def("__repr__", [](const OwnedTensor& t) {
        return fmt::format("kiln.Tensor({} on cuda:{})", t.tensor.view().describe(), t.device);
      });
}

}  // namespace kiln::python
