#pragma once
// Errors that say where they come from: a graph file, a node. One helper for the graph loader
// and the CLI, so the same error class reaches the caller with its origin in front.

#include <kiln/error.hpp>
#include <string>

namespace kiln {

/// fn()'s result; a GraphError, ShapeError or DtypeError it throws is thrown again as the same
/// type with "`origin`: " first (unless the message starts with it already).
template <class F>
auto with_origin(const std::string& origin, const F& fn) -> decltype(fn()) {
  const auto named = [&](const std::string& what) {
    return what.compare(0, origin.size() + 2, origin + ": ") == 0 ? what : origin + ": " + what;
  };
  try {
    return fn();
  } catch (const GraphError& e) {
    throw GraphError(named(e.what()));
  } catch (const ShapeError& e) {
    throw ShapeError(named(e.what()));
  } catch (const DtypeError& e) {
    throw DtypeError(named(e.what()));
  }
}

}  // namespace kiln
