#pragma once
/// \file
/// Users' own kernel templates (docs/templates.md): a CUDA `__global__` function template in a
/// `.cuh` file or a string, with its own include files, specialized at run time by kiln for the
/// dtypes of the tensors it is called on and the values of its tunables, compiled by NVRTC,
/// kept in kiln's verified cache (keyed by every byte of the source and its headers), recorded
/// by KILN_RECORD for `kiln precompile`, and launched on the engine's stream.

#include <cstdint>
#include <kiln/engine.hpp>
#include <kiln/ops.hpp>
#include <map>
#include <string>
#include <vector>

namespace kiln {

/// One parameter of a template's kernel, in the kernel's order.
struct TemplateParam {
  enum class Kind {
    tensor,  ///< `T*` (or `const T*`): the first element of a contiguous view
    i32,     ///< `int`
    i64,     ///< `long long`
    f32,     ///< `float`
    f64,     ///< `double`
    /// `const __grid_constant__ kiln::TensorMap` (kiln/tma.cuh; a CUtensorMap): a TMA map of
    /// the tensor passed for it (its innermost stride 1, other strides and its address
    /// multiples of 16 bytes), in tiles of `box`. sm_90 and later.
    tensor_map,
  };
  std::string name;  ///< an identifier: `x`, `n`
  Kind kind = Kind::tensor;
  /// tensor_map: the tile each TMA copy moves, one extent (1 to 256) per dim of the tensor,
  /// outermost first; each an expression as Template::launch's, over the tunables and integer
  /// parameters: {"BM", "BK"}.
  std::vector<std::string> box = {};
  /// tensor_map: the shared-memory swizzle, bytes (0, 32, 64, 128); the box's innermost row must
  /// not be longer.
  int swizzle = 0;

  /// Whether a call passes a tensor for it (tensor or tensor_map), or an integer (i32, i64).
  bool takes_tensor() const { return kind == Kind::tensor || kind == Kind::tensor_map; }
  bool is_integer() const { return kind == Kind::i32 || kind == Kind::i64; }
};

class Template {
 public:
  /// A template from `source`, which kernels include as `name` ("gauss.cuh").
  Template(std::string name, std::string source);
  /// The template in the file at `path` (its file name names it); ArgumentError if unreadable.
  static Template from_file(const std::string& path);

  /// A header the template (or another of its headers) includes as `#include "name"`; it is
  /// part of every kernel's key. ArgumentError for a name of kiln's own headers.
  Template& header(std::string name, std::string text);
  /// header() with the bytes of the file at `path`.
  Template& header_file(std::string name, const std::string& path);

  /// The kernel's parameters, in order (a tensor is passed as a pointer, a scalar by value).
  Template& params(std::vector<TemplateParam> params);

  /// The `__global__` instance to compile: `instance` with `{x}` replaced by the device type of
  /// tensor parameter x's dtype (`float`, `__half`, `__nv_bfloat16`, `bool`), `{NAME}` by
  /// tunable NAME's value and `{n}` by integer parameter n's value (each value then compiles a
  /// kernel of its own): `"gauss_fwd<{x}, {BLOCK}>"`, `"step<{x}, {d}, {r}>"`.
  Template& instance(std::string instance);

  /// A tunable integer of the instance: its candidates (`kiln tune` tries each; a candidate is
  /// kept only if its output matches the default's), the first the default.
  Template& tunable(std::string name, std::vector<int> candidates);

  /// The launch rule: each of grid x, y, z and block x, y, z an expression (docs/ops.md's
  /// grammar) over the integer parameters by name, each tensor parameter's `x_numel` and
  /// `x_dim0`, `x_dim1`, ..., and the tunables: {"ceilf(x_numel / BLOCK)"}, {"BLOCK"}. Missing
  /// dims are 1. Evaluated per call; a value that is not a whole number of at least 1 or that the
  /// device cannot launch is an ArgumentError.
  Template& launch(std::vector<std::string> grid, std::vector<std::string> block);
  /// Dynamic shared memory per block, an expression as launch()'s (default "0").
  Template& shared_bytes(std::string bytes);
  /// As a node of a Graph (Graph::define_template): the tensor parameter the node's result is
  /// written through, of the dtype of tensor parameter `like` and its shape, or `shape` when
  /// given: one expression per dim (launch()'s grammar) over the other parameters, integer ones
  /// by name and tensors' `x_dim0`, ..., `x_numel`: {"S", "x_dim0"}. The node's arguments are
  /// the other parameters, in order.
  Template& output(std::string param, std::string like, std::vector<std::string> shape = {});

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }
  const std::map<std::string, std::string>& headers() const { return headers_; }
  const std::vector<TemplateParam>& param_list() const { return params_; }
  const std::string& instance_text() const { return instance_; }
  const std::vector<std::pair<std::string, std::vector<int>>>& tunables() const {
    return tunables_;
  }
  const std::vector<std::string>& grid() const { return grid_; }
  const std::vector<std::string>& block() const { return block_; }
  const std::string& shared() const { return shared_; }
  const std::string& output_param() const { return output_; }
  const std::string& output_like() const { return like_; }
  const std::vector<std::string>& output_shape() const { return shape_; }
  /// Unique in the process to this content: a new number whenever the template changes (a
  /// copy keeps it). launch() keys what it prepared by it.
  std::uint64_t serial() const { return serial_; }

 private:
  std::string name_, source_, instance_, shared_ = "0", output_, like_;
  std::map<std::string, std::string> headers_;
  std::vector<TemplateParam> params_;
  std::vector<std::pair<std::string, std::vector<int>>> tunables_;
  std::vector<std::string> grid_ = {"1"}, block_ = {"1"}, shape_;
  std::uint64_t serial_;
  Template& changed();  ///< a new serial_
};

/// Launches `t` on `args` (a TensorView per tensor parameter, a number per scalar one, in the
/// kernel's order) with `tunables` (a missing one takes its default) on the engine's stream:
/// specialized, fetched from the cache or compiled (a CompileError quotes the numbered source),
/// then launched. Views must be contiguous; ArgumentError names the parameter otherwise.
void launch(Engine& engine, const Template& t, const std::vector<Operand>& args,
            const std::map<std::string, int>& tunables = {});

/// Compiles (or finds cached) the kernel launch() would run on views of these shapes and
/// dtypes (data may be 0), without a GPU; what the cache then holds.
KernelRecord precompile(Engine& engine, const Template& t, const std::vector<Operand>& args,
                        const std::map<std::string, int>& tunables = {});

}  // namespace kiln
