#pragma once
/// \file
/// Everything an embedding app needs.

#include <kiln/dtype.hpp>
#include <kiln/engine.hpp>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <kiln/template.hpp>
#include <kiln/tensor.hpp>
#include <kiln/tune.hpp>
