// The row templates' descriptors and tunables (engine/families/rows/row_templates.hpp).
#include "engine/families/rows/row_templates.hpp"

#include <fmt/format.h>

#include "engine/codegen/codegen.hpp"

namespace kiln {

const codegen::TunableTable<RowTunables>& row_tunable_table() {
  using T = RowTunables;
  // The order of the rows is each template's order in its tuning space, and the order of the
  // names in the message for an unknown one.
  static const codegen::TunableTable<T> table = {
      {"block", &T::block, {32, 64, 128, 256, 512, 1024}, kRowTemplate},
      {"items", &T::items, {0, 1, 2, 4, 8, 16}, kRowTemplate},
      {"block", &T::block, {64, 128, 256, 512}, kColumnTemplate},
      {"cols", &T::cols, {1, 2, 4, 8, 16, 32}, kColumnTemplate},
      {"split", &T::split, {1, 2, 4, 8}, kRowTemplate, kRowClusters},
      {"pack", &T::pack, {1, 2, 4, 8}, kRowTemplate},
      {"grouped", &T::grouped, {0, 1}, kRowGrouped},
  };
  return table;
}

std::string RowTemplate::expression() const {
  if (pack > 1)
    return codegen::render_instance(
        "kiln::rows_packed",
        {"kiln_body", functor, "kiln_epilogue", extras, layout, std::to_string(vec),
         codegen::render_index(index64), std::to_string(items), std::to_string(pack),
         std::to_string(rows) + "LL"});
  std::vector<std::string> args = {"kiln_body",
                                   functor,
                                   "kiln_epilogue",
                                   extras,
                                   layout,
                                   std::to_string(vec),
                                   codegen::render_index(index64),
                                   std::to_string(block),
                                   std::to_string(items)};
  if (split > 1) args.push_back(std::to_string(split));
  return codegen::render_instance(
      fmt::format("kiln::rows{}{}", split > 1 ? "_split" : "", at ? "_at" : ""), args);
}

std::string RowTemplate::name(std::string_view stem, bool all_axes, std::size_t dims,
                              const RowTunables& fallback) const {
  const bool tuned = block != fallback.block || items != fallback.items ||
                     split != fallback.split || pack != fallback.pack;
  return fmt::format(
      "{}__{}{}v{}{}{}{}{}{}", stem,
      at         ? "at"
      : all_axes ? "all"
                 : "r",
      dims, vec, at && items ? fmt::format("i{}", items) : "",
      fallback.split > 1 ? fmt::format("s{}", fallback.split) : "",
      fallback.pack > 1 ? fmt::format("p{}", fallback.pack) : "", index64 ? "_i64" : "",
      tuned ? fmt::format("_b{}i{}{}{}", block, items, split > 1 ? fmt::format("s{}", split) : "",
                          pack > 1 ? fmt::format("p{}", pack) : "")
            : "");
}

std::string ColumnTemplate::expression() const {
  return codegen::render_instance(
      "kiln::columns", {"kiln_body", functor, "kiln_epilogue", layout, std::to_string(vec),
                        codegen::render_index(index64), std::to_string(bx), std::to_string(by),
                        std::to_string(r), std::to_string(ig)});
}

std::string ColumnTemplate::name(std::string_view stem, std::size_t dims, bool tuned) const {
  return fmt::format("{}__col{}v{}{}{}", stem, dims, vec, index64 ? "_i64" : "",
                     tuned ? fmt::format("_b{}c{}", bx * by, bx) : "");
}

}  // namespace kiln
