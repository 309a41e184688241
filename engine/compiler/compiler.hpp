#pragma once
// NVRTC: KernelSpec + arch -> CompiledKernel. Touches no disk and no GPU.

#include <string>
#include <vector>

#include "cache/key.hpp"
#include "engine/compiler/headers.hpp"
#include "stages/kernel.hpp"

namespace kiln::compiler {

/// "13.0".
std::string nvrtc_version();

/// 90 for "sm_90a"; ArgumentError for a malformed arch.
int arch_number(const std::string& arch);

/// The NVRTC options that target `arch` ("sm_90a", "sm_80"): a cubin when NVRTC can emit one
/// for it, else PTX for the newest virtual arch below it. Throws ArgumentError for a malformed
/// arch or one older than NVRTC supports.
std::vector<std::string> target_options(const std::string& arch);

/// What a spec's source sees: the header table with the spec's own headers over it, and the
/// names of the headers it includes (directly or not), found once for its key and its compile.
class SourceUnit {
 public:
  explicit SourceUnit(const KernelSpec& spec, const HeaderTable& base = HeaderTable::embedded());
  const HeaderTable& headers() const { return headers_; }
  const std::vector<std::string>& closure() const { return closure_; }

 private:
  HeaderTable headers_;
  std::vector<std::string> closure_;
};

/// The cache key of `spec` for `arch`, from its unit.
cache::CacheKey key_of(const KernelSpec& spec, const std::string& arch, const SourceUnit& unit);
/// Compiles `spec` for `arch` against its unit (as compile() below).
CompiledKernel compile(const KernelSpec& spec, const std::string& arch, const SourceUnit& unit);

/// The cache key of spec compiled for arch by this NVRTC with these headers (and the spec's own,
/// KernelSpec::headers, over them).
cache::CacheKey key_of(const KernelSpec& spec, const std::string& arch,
                       const HeaderTable& headers = HeaderTable::embedded());
/// Arch-free identity of a spec (source, expression, options, its own headers), hex.
std::string spec_id(const KernelSpec& spec);
/// Identity of the header bytes spec includes, hex.
std::string headers_id(const KernelSpec& spec,
                       const HeaderTable& headers = HeaderTable::embedded());

/// Compiles spec for arch. Throws CompileError with the NVRTC log and the numbered source
/// around each error line.
CompiledKernel compile(const KernelSpec& spec, const std::string& arch,
                       const HeaderTable& headers = HeaderTable::embedded());

}  // namespace kiln::compiler
