#include "engine/runtime/module.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/runtime/driver.hpp"

namespace kiln::runtime {

void ModuleDeleter::operator()(CUmodule m) const {
  if (CUresult r = driver().cuModuleUnload(m); r != CUDA_SUCCESS)
    spdlog::warn("kiln: cuModuleUnload failed: {}", result_name(r));
}

Module::Module(const std::string& image, const std::string& lowered_name, const std::string& kernel)
    : kernel_(kernel) {
  CUmodule m = nullptr;
  KILN_CU_CHECK(driver().cuModuleLoadData(&m, image.data()), "module of kernel " + kernel);
  module_.reset(m);
  KILN_CU_CHECK(driver().cuModuleGetFunction(&function_, m, lowered_name.c_str()),
                "kernel " + kernel + " (" + lowered_name + ")");
}

int Module::registers() const {
  int n = 0;
  KILN_CU_CHECK(driver().cuFuncGetAttribute(&n, CU_FUNC_ATTRIBUTE_NUM_REGS, function_),
                "kernel " + kernel_);
  return n;
}

unsigned Module::allow_dynamic_shared(int optin) {
  int fixed = 0;
  KILN_CU_CHECK(driver().cuFuncGetAttribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function_),
                "kernel " + kernel_);
  const int dynamic = std::max(0, optin - fixed);
  KILN_CU_CHECK(driver().cuFuncSetAttribute(
                    function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic),
                "kernel " + kernel_);
  return unsigned(dynamic);
}

void Module::launch(const LaunchConfig& c, CUstream stream, void** args) const {
  CUlaunchAttribute attrs[3]{};
  unsigned n = 0;
  if (c.clustered()) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = c.cluster[0];
    attrs[n].value.clusterDim.y = c.cluster[1];
    attrs[n++].value.clusterDim.z = c.cluster[2];
  }
  if (c.programmatic || c.beside) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (c.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n++].value.cooperative = 1;
  }
  CUlaunchConfig config{};
  config.gridDimX = c.grid[0];
  config.gridDimY = c.grid[1];
  config.gridDimZ = c.grid[2];
  config.blockDimX = c.block[0];
  config.blockDimY = c.block[1];
  config.blockDimZ = c.block[2];
  config.sharedMemBytes = c.shared;
  config.hStream = stream;
  config.attrs = n ? attrs : nullptr;
  config.numAttrs = n;
  KILN_CU_CHECK(driver().cuLaunchKernelEx(&config, function_, args, nullptr), "kernel " + kernel_);
}

}  // namespace kiln::runtime
