#pragma once
// Tensors between kiln and Python by DLPack, without a copy: any object with __dlpack__ (torch,
// CuPy, JAX) read in place as a TensorView, and kiln's own tensors handed out as capsules.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: one set of type casters

#include <kiln/kiln.hpp>
#include <string>

namespace kiln::python {

namespace py = pybind11;

/// A view of an object with __dlpack__ on `engine`'s device, and the capsule that keeps its
/// memory (the producer's) alive while the view is in use.
struct Borrowed {
  TensorView view;
  py::object capsule;
};

/// Reads `obj` (named `what` in errors) in place. Its producer orders its pending work before
/// the engine's stream (the DLPack `stream` argument). ArgumentError for memory on another
/// device or the host, DtypeError for an element type kiln lacks; strides as they are (kiln
/// refuses negative ones when it launches).
Borrowed borrow(const py::handle& obj, Engine& engine, const std::string& what);

/// torch tensors read through their own attributes (data_ptr, shape, stride, dtype), which costs
/// a fraction of __dlpack__: what kiln needs of torch to read them.
struct TorchTypes {
  py::object tensor;  ///< torch.Tensor
  py::dict dtypes;    ///< torch.float32 -> kiln.DType.f32, ...
};

/// A view of torch tensor `t` in place; the same errors as borrow(). kiln runs on torch's
/// current stream then, so no synchronization is asked for.
TensorView torch_view(const py::handle& t, const TorchTypes& torch, int device,
                      const std::string& what);

/// A tensor kiln allocated, handed to Python: DLPack's producer side.
struct OwnedTensor {
  Tensor tensor;
  int device = 0;
  py::object engine;  ///< the kiln.Engine whose stream wrote it (kept alive)

  /// A "dltensor" capsule sharing the memory; `stream` (a consumer's CUstream, DLPack's
  /// convention: 1 the legacy default stream, -1 none) waits for the engine's work first.
  py::capsule dlpack(const py::object& stream) const;
};

/// Registers kiln.Tensor (OwnedTensor) with __dlpack__ and __dlpack_device__.
void bind_tensors(py::module_& m);

}  // namespace kiln::python
