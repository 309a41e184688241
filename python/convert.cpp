// Python values read as kiln's: dtypes (kiln's names, torch's names, torch.dtype objects),
// shapes, op attributes, and kernel records written back as dicts. Anything else is an
// ArgumentError or DtypeError saying what kiln takes, in Python's spelling.
#include <fmt/format.h>

#include <array>
#include <kiln/op_schema.hpp>
#include <string_view>
#include <utility>

#include "module.hpp"

namespace kiln::python {
namespace {

// torch's dtype names, which a torch user types first ("bfloat16", str(torch.bfloat16) without
// its "torch." prefix, numpy's str(dtype)). "float" and "half" are left out: numpy's "float" is
// float64.
constexpr std::array<std::pair<std::string_view, DType>, 6> kTorchNames{{
    {"float32", DType::f32},
    {"float16", DType::f16},
    {"bfloat16", DType::bf16},
    {"bool", DType::boolean},
    {"int32", DType::i32},
    {"int64", DType::i64},
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

// Attribute `key`=`value` of op `op` as a value of `type`; an ArgumentError naming the op, the
// attribute and what it takes otherwise.
AttrValue attr_value(std::string_view op, const std::string& key, const py::handle& value,
                     AttrType type) {
  const auto fail = [&]() {
    throw ArgumentError(fmt::format("{}: attribute {}={} is not {}", printable_name(op),
                                    printable_name(key), repr_of(value), type_text(type, true)));
  };
  switch (type) {
    case AttrType::number:
      if (!is_number(value)) fail();
      return value.cast<double>();
    case AttrType::axis:
      if (py::isinstance<py::str>(value) && value.cast<std::string>() == "all")
        return std::string("all");
      if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
        std::vector<std::int64_t> axes;  // several adjacent axes: (1, 2) as torch's dim takes
        for (const py::handle d : value.cast<py::sequence>()) {
          if (!is_integer(d)) fail();
          axes.push_back(index_of(d));
        }
        return axes;
      }
      [[fallthrough]];
    case AttrType::integer:
      if (!is_integer(value)) fail();
      return index_of(value);
    case AttrType::flag:
      if (!py::isinstance<py::bool_>(value)) fail();
      return value.cast<bool>();
    case AttrType::dtype:
      return std::string(name_of(dtype_of(value)));
    case AttrType::choice:
      if (!py::isinstance<py::str>(value)) fail();
      return value.cast<std::string>();
    case AttrType::extents: {
      std::vector<std::int64_t> out;
      if (is_integer(value)) return std::vector<std::int64_t>{index_of(value)};  // stride=2
      if (py::isinstance<py::str>(value) || !py::isinstance<py::sequence>(value)) fail();
      for (const py::handle d : value.cast<py::sequence>()) {
        if (!is_integer(d)) fail();
        out.push_back(index_of(d));
      }
      return out;
    }
  }
  fail();
  return false;
}

py::object py_value(const AttrValue& v) {
  return std::visit([](const auto& x) { return py::object(py::cast(x)); }, v);
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
      "dtype {}: kiln takes f32, f16, bf16, bool, i32 and i64 (torch's float32, float16, "
      "bfloat16, bool, int32 and int64), as a name, a kiln.DType or a torch.dtype",
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

Attrs attrs_of(const OpSchema& op, const py::kwargs& kw) {
  Attrs a;
  for (const auto& [k, value] : kw) {
    if (value.is_none()) continue;  // an attribute left at its default
    const std::string key = k.cast<std::string>();
    const AttrSpec* spec = find_attr(op, key);
    if (!spec) throw ArgumentError(unknown_attr(op, key));
    try {
      set_attr(a, *spec, attr_value(op.name, key, value, spec->type));
    } catch (const ArgumentError& e) {  // a range: name the op, as Python's other messages do
      throw ArgumentError(fmt::format("{}: {}", printable_name(op.name), e.what()));
    }
  }
  return a;
}

py::dict schema_dict(const OpSchema& op) {
  py::list attrs;
  for (const AttrSpec& a : op.attrs) {
    py::dict d;
    d["name"] = std::string(a.name);
    d["type"] = std::string(type_text(a.type, true));
    d["default"] = a.fallback ? py_value(*a.fallback) : py::object(py::none());
    d["required"] = a.required;
    d["range"] = range_text(a.range);
    d["doc"] = std::string(a.doc);
    attrs.append(d);
  }
  py::dict d;
  d["name"] = std::string(op.name);
  py::list operands;
  for (std::string_view o : op.operands) operands.append(std::string(o));
  d["operands"] = operands;
  d["required_operands"] = op.required_operands;
  d["variadic"] = op.variadic;
  d["attrs"] = attrs;
  d["doc"] = std::string(op.doc);
  d["dtypes"] = std::string(op.dtypes);
  return d;
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
