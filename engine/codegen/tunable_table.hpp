#pragma once
// A template's tunables declared once, as a table: each row a name, the field of the template's
// tunables struct it sets, the values `kiln tune` tries, and which of the template's paths (and
// under which conditions) take it. Parsing a Tunables map, the tunables a launch records and a
// tuning space's tunables are all read off the table, so they cannot disagree.

#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/codegen/autotune.hpp"

namespace kiln::codegen {

/// One row of a tunable table over the tunables struct `T`. `paths` and `needs` are bits of the
/// template's own choosing: a row belongs to a path of `paths` where every bit of `needs` holds
/// (a condition such as "the target runs clusters"). A name may have a row per path (its values
/// differ there); every row of one name sets the same field.
template <class T>
struct TunableRow {
  std::string_view name;
  int T::*field = nullptr;
  std::vector<int> values;  ///< what the tuning space tries
  unsigned paths = ~0u;
  unsigned needs = 0;

  bool in(unsigned where) const { return (paths & where) && (needs & where) == needs; }
};

template <class T>
using TunableTable = std::vector<TunableRow<T>>;

/// The table's names, each once, in the order of their first rows: "bm, bn, ...".
template <class T>
std::string tunable_names(const TunableTable<T>& table) {
  std::vector<std::string_view> names;
  for (const TunableRow<T>& r : table)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

/// `t` by name over `into`; ArgumentError "<stem>: '<name>' is not a tunable of the <what>
/// (<names>)" for a name the table does not hold.
template <class T>
T parse_tunables(const TunableTable<T>& table, const Tunables& t, T into, std::string_view stem,
                 std::string_view what) {
  for (const auto& [name, value] : t) {
    auto row = std::find_if(table.begin(), table.end(),
                            [&, &n = name](const TunableRow<T>& r) { return r.name == n; });
    if (row == table.end())
      throw ArgumentError(fmt::format("{}: '{}' is not a tunable of the {} ({})", stem, name, what,
                                      tunable_names(table)));
    into.*(row->field) = value;
  }
  return into;
}

/// What a launch of path `where` records: each of its rows' name and value in `v`.
template <class T>
Tunables launch_tunables(const TunableTable<T>& table, const T& v, unsigned where) {
  Tunables out;
  for (const TunableRow<T>& r : table)
    if (r.in(where)) out[std::string(r.name)] = v.*(r.field);
  return out;
}

/// The tuning space's tunables of path `where`, in the table's order.
template <class T>
std::vector<autotune::Tunable> space_tunables(const TunableTable<T>& table, unsigned where) {
  std::vector<autotune::Tunable> out;
  for (const TunableRow<T>& r : table)
    if (r.in(where)) out.push_back({std::string(r.name), r.values});
  return out;
}

}  // namespace kiln::codegen
