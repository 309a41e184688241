#pragma once
// Codegen: the only place kiln writes CUDA text. A fused elementwise body (one op, or a chain
// of them) is rendered as the functor struct the elementwise template takes as `Body`.

#include <kiln/dtype.hpp>
#include <string>
#include <vector>

namespace kiln::codegen {

/// A value inside a body: an input element x[i], a scalar s[i], step i's result t[i], or (in
/// a row kernel's epilogue) the row op's value, which the template passes after the inputs.
struct Ref {
  enum class Kind { input, scalar, step, row } kind = Kind::input;
  int index = 0;
};

/// One op application: t = functor::apply(args...), optionally rounded to a dtype (a cast).
struct Step {
  std::string functor;  ///< "kiln::op::Add"
  std::vector<Ref> args;
  bool round = false;  ///< round the result to `dtype` (cast semantics)
  DType dtype = DType::f32;
};

/// A straight-line body in SSA form. Intermediates stay f32; outputs round on store.
struct Body {
  std::vector<DType> inputs;
  std::vector<DType> outputs;
  int scalars = 0;
  std::vector<Step> steps;
  std::vector<Ref> results;  ///< one per output
};

/// The struct `kiln_body` implementing `body` for kernel_templates/kiln/elementwise.cuh.
std::string render_body(const Body& body);

/// NVRTC options of kiln's own templates. `--minimal` leaves out of NVRTC's built-in header
/// what they never use (textures, surfaces, device-runtime calls): about 12 ms a compile.
std::vector<std::string> builtin_options();

}  // namespace kiln::codegen
