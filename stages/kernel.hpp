#pragma once
// The plain values that cross the stages of the pipeline (stages/: the types every stage and
// cache/ share, depending on nothing of engine/):
//   KernelSpec (source + instantiation) -> CompiledKernel (image + metadata) -> loaded module.

#include <map>
#include <string>
#include <vector>

namespace kiln {

/// A template's tunable parameters by name ("block", "items", "unroll"); a missing one takes
/// the template's heuristic default.
using Tunables = std::map<std::string, int>;

/// What to compile: a main source (which includes templates from the header table), the
/// template instantiation to emit, and arch-free NVRTC options.
struct KernelSpec {
  std::string name;        ///< readable and stable: "silu_bf16__r1v8", "softmax_f32__r2v4_i64"
  std::string source;      ///< main translation unit
  std::string expression;  ///< NVRTC name expression of the __global__ instantiation
  std::vector<std::string> options;
  /// Headers of the spec's own (a user template's and its include files), by the name the
  /// source includes them as; kiln's own templates have none. Keyed by their bytes like the
  /// source.
  std::map<std::string, std::string> headers;
};

/// What NVRTC produced for one spec and one arch.
struct CompiledKernel {
  std::string name;
  std::string lowered_name;  ///< mangled name to look the function up in the module
  std::string arch;          ///< "sm_90a"
  bool is_ptx = false;       ///< PTX fallback (the driver JIT-compiles it at load)
  std::string image;         ///< cubin bytes, or PTX text
  int registers = -1;        ///< per thread, from the cubin's attributes (-1 for PTX)
  int spill_bytes = -1;  ///< spill stores, from ptxas's log (0 when the cubin has no stack frame)
  std::string log;       ///< NVRTC's log of this compile (not kept in the cache)
  double compile_ms = 0;
  // Provenance, so `kiln cache explain` can say why a lookup missed.
  std::string spec_id;        ///< hash of source, expression and options (no arch, no headers)
  std::string headers_id;     ///< hash of the included headers' names and bytes
  std::string nvrtc_version;  ///< "13.0"
};

}  // namespace kiln
