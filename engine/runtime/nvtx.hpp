#pragma once
// NVTX ranges, so that a profiler (Nsight Systems) shows what kiln did: plan runs, replays,
// compiles, and each launch named after the ops its kernel fuses. The toolkit's header-only
// nvtx3: with no profiler attached a range costs a call through a no-op function pointer.

namespace kiln::runtime {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace kiln::runtime
