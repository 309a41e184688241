#pragma once
// What a cubin (an ELF image of SASS) says of one of its kernels, read from its `.nv.info`
// attributes rather than from ptxas's log, which is not always there.

#include <string>
#include <string_view>

namespace kiln::compiler {

struct CubinFacts {
  int registers = -1;    ///< per thread (EIATTR_REGCOUNT); -1 when the image does not say
  int stack_bytes = -1;  ///< per thread stack frame: local arrays and spills (EIATTR_FRAME_SIZE)
};

/// The facts of kernel `symbol` (its lowered name) in `image`. Never throws: a PTX image, a
/// malformed one or an absent kernel gives -1s.
CubinFacts read_cubin(std::string_view image, std::string_view symbol);

}  // namespace kiln::compiler
