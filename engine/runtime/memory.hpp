#pragma once
// Device memory owned by kiln. Each allocation keeps its context alive.

#include <cuda.h>

#include <cstddef>
#include <kiln/tensor.hpp>
#include <memory>

#include "engine/runtime/context.hpp"

namespace kiln::detail {

class Allocation {
 public:
  Allocation(std::shared_ptr<runtime::Context> ctx, std::size_t bytes);
  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  const runtime::Context& context() const { return *ctx_; }

 private:
  std::shared_ptr<runtime::Context> ctx_;
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace kiln::detail
