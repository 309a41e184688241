#pragma once
// Codegen: the only place kiln writes CUDA text. A fused elementwise body (one op, or a chain
// of them) is rendered as the functor struct the templates take as `Body`; a kernel's source
// is a template header's include and its bodies; its name expression an instance of a template.

#include <cstdint>
#include <kiln/dtype.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/expr.hpp"

namespace kiln::codegen {

/// A value inside a body: an input element x[i], a scalar s[i], step i's result t[i], or (in
/// a row kernel's epilogue) the row op's value, which the template passes after the inputs,
/// and after that the value the row op's prologue computed there (its x).
struct Ref {
  enum class Kind { input, scalar, step, row, prologue } kind = Kind::input;
  int index = 0;
};

/// One op application: t = functor::apply(args...), optionally rounded to a dtype (a cast).
struct Step {
  std::string functor;  ///< "kiln::op::Add"
  std::vector<Ref> args;
  bool round = false;  ///< round the result to `dtype` (cast semantics)
  DType dtype = DType::f32;
  /// A custom op's expression: the source defines `functor` from it (render_functor).
  const ops::Expr* expr = nullptr;
  /// In a typed body: the dtype each argument is converted to before the call (empty: as they
  /// are).
  std::vector<DType> arg_dtypes = {};
};

/// A straight-line body in SSA form. Intermediates stay f32; outputs round on store. A body
/// with an integer value anywhere is typed: each value in its dtype's compute type (float, int,
/// long long), kernel_templates/kiln/integer.cuh.
struct Body {
  std::vector<DType> inputs;
  std::vector<DType> outputs;
  int scalars = 0;
  std::vector<Step> steps;
  std::vector<Ref> results;  ///< one per output
  bool typed() const;
};

/// `body` with kiln's ops taken from kiln::op::fast (kernel_templates/kiln/ops.cuh): exp, log,
/// rsqrt, sigmoid and silu through the hardware's approximations, the rest as they are. For
/// bodies whose outputs round far coarser than those approximations err (16-bit outputs).
Body fast_math(Body body);

/// `body` in fast math where its outputs are all f16 or bf16 (an epilogue's or a prologue's):
/// their rounding, 2^-11 or coarser, is far above the approximations' errors, and in kernels
/// that hold their values in registers (rows, products) the math's instruction count is time.
Body narrow_fast_math(const Body& body);

/// The struct `name` implementing `body` for the templates (kernel_templates/kiln/*.cuh).
std::string render_body(const Body& body, std::string_view name = "kiln_body");

/// An epilogue's body in two: `columns`, the steps that read only its inputs and scalars (where
/// every input is per column: a batch norm's scale gamma * rsqrt(var + eps) and its shift),
/// whose outputs are the values the rest reads; and `element`, the rest, reading those values as
/// its inputs (f32) and the product as before.
struct ColumnSplit {
  Body columns;
  Body element;
};
/// `body` split so, where that takes math out of the element's steps without staging more
/// values than it has inputs; nothing for a typed body or one with no such step.
std::optional<ColumnSplit> split_columns(const Body& body);
/// How many values a block stages per column for `body`: its split's, else its inputs.
int column_operands(const Body& body);
/// render_body with `body`'s split (split_columns), if any: the struct keeps `body`'s Inputs,
/// holds the column math as its nested struct Columns and `staged`, the count of its outputs,
/// and its apply is the element's (x: the staged values, then the product). The same operations
/// in the same order: the results are the unsplit body's, except where the compiler would have
/// contracted a per-column product into an element's add (one FMA); split, that product rounds
/// first, as it does in the unfused plan (a batch norm has no such step).
std::string render_split_body(const Body& body, std::string_view name);

/// A kernel's translation unit: the include of kiln's template header `header`
/// ("rows.cuh"), the functor of each custom op a body applies, then each body as the struct of
/// its name.
/// `split`: each body through render_split_body (an epilogue whose block stages its inputs per
/// column).
std::string render_source(std::string_view header,
                          const std::vector<std::pair<std::string_view, const Body*>>& bodies,
                          bool split = false);

/// `name<args...>`: an instance of a template (a kernel's name expression, a layout type).
std::string render_instance(std::string_view name, const std::vector<std::string>& args);

/// The templates' Index type: 64-bit unsigned when offsets reach 2^31, else 32-bit.
std::string render_index(bool index64);

/// `kiln::Types<...>` of the device types of `dtypes`.
std::string render_types(const std::vector<DType>& dtypes);

/// `kiln::Dim<extent, strides...>`: one dim of an iteration layout
/// (kernel_templates/kiln/layout.cuh).
std::string render_dim(std::int64_t extent, const std::vector<std::int64_t>& strides);

/// A custom op's functor struct `name` (as kernel_templates/kiln/ops.cuh's): `arity` and
/// `apply` on f32 values x0, x1, ... computing `expr` (ops/expr.hpp: parsed, so nothing but
/// the expression grammar reaches the text).
std::string render_functor(std::string_view name, const ops::Expr& expr);

/// A user template's kernel source: the include of its header `name` (a KernelSpec header).
std::string render_include(std::string_view name);

/// The CUDA type a user template sees for `dtype`: the toolkit's (`float`, `__half`,
/// `__nv_bfloat16`, `bool`).
std::string_view render_user_type(DType dtype);

/// `instance` with each `{name}` replaced by `values`' text for it: ArgumentError for a name
/// it does not hold, an unpaired brace, or a result that is not a name expression (letters,
/// digits, `_`, `:`, `<`, `>`, `,`, spaces).
std::string render_user_instance(std::string_view instance,
                                 const std::vector<std::pair<std::string, std::string>>& values);

/// NVRTC options of users' templates: C++17, the full built-in header.
std::vector<std::string> user_options();

/// NVRTC options of kiln's own templates. `--minimal` leaves out of NVRTC's built-in header
/// what they never use (textures, surfaces, device-runtime calls): about 12 ms a compile.
std::vector<std::string> builtin_options();

}  // namespace kiln::codegen
