#pragma once
// KILN_DUMP_DIR: what NVRTC was given and made for each kernel it compiles, as files, for a
// developer reading a kernel's PTX or its register and spill counts.

#include <nvrtc.h>

#include <string>

#include "stages/kernel.hpp"

namespace kiln::compiler {

/// Where KILN_DUMP_DIR is set (and not empty): `spec` compiled for `arch` by `program` (its
/// compile done, failed or not) into that directory as NAME.ARCH.cu (the spec's source),
/// NAME.ARCH.ptx (NVRTC's PTX, where it made any) and NAME.ARCH.log (the instantiation, the
/// `options`, then NVRTC's `log`: ptxas's registers and spills), NAME the kernel's name with
/// anything but letters, digits, '_', '-' and '.' as '_'. ArgumentError naming the variable
/// where the directory does not exist or a file cannot be written.
void dump_compile(const KernelSpec& spec, const std::string& arch, nvrtcProgram program,
                  const std::string& options, const std::string& log);

}  // namespace kiln::compiler
