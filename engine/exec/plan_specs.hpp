#pragma once
// The kernel specs a plan of a graph compiles, without a GPU: what `kiln precompile` and
// `kiln explain` list, and what a run of a graph with dynamic dims needs (engine/exec/plan.cpp).

#include <kiln/graph.hpp>
#include <map>
#include <string>
#include <vector>

#include "engine/target.hpp"
#include "stages/kernel.hpp"

namespace kiln {
namespace cache {
class TuningDb;
}

/// The kernel specs of a graph's plan for its static shapes (what `kiln precompile G.json`
/// compiles): inputs are contiguous and aligned unless `inputs` gives views (strides, a data
/// address for the alignment) for some of them; outputs in the memory order the plan makes
/// them in (Plan::outputs) unless `inputs` gives views of some of them too, as a run given
/// those outputs writes them; kernels as `records` tuned them, if given;
/// for `arch` (a long row splits between blocks on sm_90 and later). Dynamic dims: the kernels
/// that serve every extent of 2 or more (a batch: the launch's, not the kernel's), those of an
/// extent of 1, and a kernel its family chooses by a bucket of extents (rows of a dynamic
/// length: engine/families/rows/row_buckets.hpp; a product's dynamic M, N or K:
/// engine/families/gemm/gemm_buckets.hpp) compiles for every bucket; GraphError naming the kernel,
/// the arch and the dynamic dims if one depends on any other dynamic dim (a reduced batch).
std::vector<KernelSpec> plan_specs(const Graph& graph, bool fuse = true,
                                   const std::map<std::string, TensorView>& inputs = {},
                                   const cache::TuningDb* records = nullptr,
                                   const std::string& arch = "sm_90a");
/// The same for `target`, an arch with the limits of the GPU it is for (an engine's).
std::vector<KernelSpec> plan_specs(const Graph& graph, bool fuse,
                                   const std::map<std::string, TensorView>& inputs,
                                   const cache::TuningDb* records, const Target& target);

/// The kernel specs a run of `graph` (with dynamic dims) uses with every dynamic dim at
/// `extent` and contiguous, aligned inputs, for `arch`: what a run compiles if nothing is
/// cached.
std::vector<KernelSpec> run_specs(const Graph& graph, std::int64_t extent, bool fuse = true,
                                  const std::string& arch = "sm_90a");

/// Specs from a file: a graph (*.json, for `arch`, tuned as `records` say, if given) or a
/// manifest (anything else; its specs are already what ran).
std::vector<KernelSpec> load_specs(const std::string& path,
                                   const cache::TuningDb* records = nullptr,
                                   const std::string& arch = "sm_90a");
/// The same for `target` (an arch with the limits of a GPU: a device's, as its engine has them).
std::vector<KernelSpec> load_specs(const std::string& path, const cache::TuningDb* records,
                                   const Target& target);

}  // namespace kiln
