#pragma once
/// \file
/// Tuning from an app: what `kiln tune` does, as a function.

#include <kiln/engine.hpp>
#include <kiln/graph.hpp>
#include <string>
#include <vector>

namespace kiln {

/// What tuning one kernel found.
struct TunedKernel {
  std::string kernel;   ///< the default kernel's name
  int candidates = 0;   ///< those the GPU can launch, the default among them
  std::string skipped;  ///< why it was not tuned ("" when it was)
  double default_us = 0;
  double tuned_us = 0;
  std::string winner;  ///< the winning parameters ("block=256 unroll=2")
};

/// Times every candidate of each kernel of the plans of `graphs` on `engine`'s GPU and saves
/// each winner as a tuning record of this GPU in the engine's cache directory as soon as it is
/// measured (an interrupted run keeps what it measured). Engines made afterwards apply the
/// records; `engine` keeps the ones it started with. `budget_s` > 0: no kernel starts after
/// that many seconds (the rest keep their defaults). CudaError on an offline engine,
/// GraphError for a dynamic dim.
std::vector<TunedKernel> tune(Engine& engine, const std::vector<Graph>& graphs,
                              double budget_s = 0);

}  // namespace kiln
