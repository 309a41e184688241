#include "engine/runtime/nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

namespace kiln::runtime {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }

}  // namespace kiln::runtime
