// Python values read as kiln's: dtypes (kiln's names, torch's names, torch.dtype objects),
// shapes, op attributes, and kernel records written back as dicts. Anything else is an
// ArgumentError or DtypeError saying what kiln takes, in Python's spelling.
#include <fmt/format.h>

#include <array>
#include <string_view>
#include <utility>

#include "module.hpp"

namespace kiln::python {
namespace {

// torch's dtype names, which a torch user types first ("bfloat16", str(torch.bfloat16) without
// its "torch." prefix, numpy's str(dtype)). "float" and "half" are left out: numpy's "float" is
// float64.
constexpr std::array<std::pair<std::string_view, DType>, 4> kTorchNames{{
    {"float32", DType::f32},
    {"float16", DType::f16},
    {"bfloat16", DType::bf16},
    {"bool", DType::boolean},
}};

std::string repr_of(const py::handle& o) { return std::string(py::repr(o)); }

// An integer without losing one: Python ints and anything with __index__ (numpy's), not bools.
bool is_integer(const py::handle& o) {
  return !py::isinstance<py::bool_>(o) && PyIndex_Check(o.ptr());
}

// An integer that is_integer() accepts, through its __index__.
std::int64_t index_of(const py::handle& o) {
  return py::int_(py::reinterpret_borrow<py::object>(o)).cast<std::int64_t>();
}

bool is_number(const py::handle& o) { return is_integer(o) || py::isinstance<py::float_>(o); }

// One attribute of an op call, read as the type kiln needs; an ArgumentError naming the op,
// the attribute and what it takes otherwise.
struct Attr {
  std::string op, key;
  py::handle value;

  [[noreturn]] void fail(std::string_view takes) const {
    throw ArgumentError(fmt::format("{}: attribute {}={} is not {}", printable_name(op),
                                    printable_name(key), repr_of(value), takes));
  }
  double number() const {
    if (!is_number(value)) fail("a number");
    return value.cast<double>();
  }
  std::int64_t integer(std::string_view takes = "an integer") const {
    if (!is_integer(value)) fail(takes);
    return index_of(value);
  }
  bool flag() const {
    if (!py::isinstance<py::bool_>(value)) fail("True or False");
    return value.cast<bool>();
  }
  std::vector<std::int64_t> extents() const {
    std::vector<std::int64_t> out;
    if (py::isinstance<py::str>(value) || !py::isinstance<py::sequence>(value))
      fail("a list of integers");
    for (const py::handle d : value.cast<py::sequence>()) {
      if (!is_integer(d)) fail("a list of integers");
      out.push_back(index_of(d));
    }
    return out;
  }
};

// The names other libraries give kiln's attributes (torch's dim, numpy's keepdims, aten's end),
// so that a misspelt call says which one kiln means.
std::string_view kiln_spelling(std::string_view key) {
  if (key == "dim") return "axis";
  if (key == "keepdims") return "keepdim";
  if (key == "end") return "stop";
  if (key == "allow_tf32") return "tf32";
  if (key == "epsilon") return "eps";
  return "";
}

[[noreturn]] void unknown_attribute(const std::string& op, const std::string& key) {
  const std::string_view spelling = kiln_spelling(key);
  const std::string hint = spelling.empty()
                               ? ""
                               : fmt::format(": kiln calls it {} (kiln.{}(..., {}=...))", spelling,
                                             printable_name(op), spelling);
  throw ArgumentError(fmt::format(
      "{}: unknown attribute '{}'{}; kiln's attributes are min, max, dtype, axis, keepdim, eps, "
      "tf32, shape, start, stop",
      printable_name(op), printable_name(key), hint));
}

}  // namespace

DType dtype_of(const py::handle& o) {
  if (py::isinstance<DType>(o)) return o.cast<DType>();
  const bool text = py::isinstance<py::str>(o);
  // A torch.dtype prints as "torch.bfloat16": read by its name, so torch need not be imported.
  std::string name = std::string(py::str(o));
  if (!text && name.rfind("torch.", 0) == 0) name.erase(0, 6);
  if (text)
    for (DType t : kAllDTypes)
      if (name == name_of(t)) return t;
  for (const auto& [torch_name, t] : kTorchNames)
    if (name == torch_name) return t;
  throw DtypeError(fmt::format(
      "dtype {}: kiln takes f32, f16, bf16 and bool (torch's float32, float16, bfloat16 and "
      "bool), as a name, a kiln.DType or a torch.dtype",
      repr_of(o)));
}

Shape shape_of(const py::handle& dims) {
  const auto refuse = [&](std::string_view why) {
    throw ArgumentError(fmt::format(
        "shape {}: {}; a shape is a list of extents >= 0, with None or \"?\" for a dynamic dim",
        repr_of(dims), why));
  };
  if (py::isinstance<py::str>(dims) || !py::isinstance<py::sequence>(dims)) refuse("not a list");
  Shape shape;
  for (const py::handle d : dims.cast<py::sequence>()) {
    if (d.is_none() || (py::isinstance<py::str>(d) && d.cast<std::string>() == "?")) {
      shape.push_back(-1);  // kiln's Shape spells a dynamic dim -1
    } else if (is_integer(d)) {
      const auto extent = index_of(d);
      // -1 is not taken for "dynamic": in torch and numpy it means "inferred", in a reshape.
      if (extent < 0) refuse(fmt::format("extent {} at dim {}", extent, shape.size()));
      shape.push_back(extent);
    } else {
      refuse(fmt::format("{} at dim {}", repr_of(d), shape.size()));
    }
  }
  return shape;
}

py::list dims_of(const Shape& shape) {
  py::list out;
  for (const std::int64_t d : shape)
    out.append(d < 0 ? py::object(py::none()) : py::object(py::int_(d)));
  return out;
}

Attrs attrs_of(const std::string& op, const py::kwargs& kw) {
  Attrs a;
  for (const auto& [key, value] : kw) {
    if (value.is_none()) continue;  // an attribute left at its default
    const Attr attr{op, key.cast<std::string>(), value};
    const std::string& k = attr.key;
    if (k == "min") {
      a.min = attr.number();
    } else if (k == "max") {
      a.max = attr.number();
    } else if (k == "dtype") {
      a.dtype = dtype_of(value);
    } else if (k == "axis" && py::isinstance<py::str>(value) &&
               value.cast<std::string>() == "all") {
      a.all_axes = true;
    } else if (k == "axis") {
      a.axis = attr.integer("an integer or \"all\"");
    } else if (k == "keepdim") {
      a.keepdim = attr.flag();
    } else if (k == "eps") {
      a.eps = attr.number();
    } else if (k == "tf32") {
      a.tf32 = attr.flag();
    } else if (k == "shape") {
      a.shape = attr.extents();  // a reshape's, where -1 is the extent the count leaves
    } else if (k == "start") {
      a.start = attr.integer();
    } else if (k == "stop") {
      a.stop = attr.integer();
    } else {
      unknown_attribute(op, k);
    }
  }
  return a;
}

py::dict record_of(const KernelRecord& r) {
  py::dict d;
  d["name"] = r.name;
  d["key"] = r.key;
  d["source"] = r.source;
  d["compile_ms"] = r.compile_ms;
  d["registers"] = r.registers;
  d["spill_bytes"] = r.spill_bytes;
  return d;
}

}  // namespace kiln::python
