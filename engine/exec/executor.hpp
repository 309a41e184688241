#pragma once
// The executor's entry points beside Plan::run and Plan::replay (engine/exec/executor.cpp).

#include <cstdint>
#include <kiln/graph.hpp>
#include <kiln/tensor.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/exec/engine_impl.hpp"
#include "engine/exec/plan_impl.hpp"
#include "engine/exec/prepared_call.hpp"

namespace kiln::detail {

/// The engine's view of a plan's insides.
struct PlanAccess {
  static const PlanImpl& impl(const Plan& p) { return *p.impl_; }
};

/// Writes the data of a call whose signature matched `call` into its parameter blocks, after
/// checking the views (null, misaligned, too short); allocates the outputs not given (returned)
/// and takes the plan's arena. Caller holds call.mutex.
std::map<std::string, Tensor> bind_data(PreparedCall& call, const PlanImpl& plan, Engine& engine,
                                        const std::map<std::string, TensorView>& inputs,
                                        const std::map<std::string, TensorView>& outputs);

}  // namespace kiln::detail
