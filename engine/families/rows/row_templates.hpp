#pragma once
// The row families' two templates as typed descriptors, one struct each whose fields are the
// template's parameters: it renders the instance (the kernel's name expression) and the
// kernel's name. Their tunables are declared once, in row_tunable_table().

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/codegen/tunable_table.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {

/// The bits of row_tunable_table()'s rows: which template takes a tunable, and the condition
/// `clusters` (the target runs thread-block clusters: a row split between blocks).
inline constexpr unsigned kRowTemplate = 1;     ///< rows.cuh
inline constexpr unsigned kColumnTemplate = 2;  ///< columns.cuh
inline constexpr unsigned kRowClusters = 4;
inline constexpr unsigned kRowGrouped = 8;  ///< group_norm's cooperative kernel (group_rows.cuh)

/// Every tunable of the row templates, once: row_tunables() parses by it, each template's
/// launch records its rows and autotune::rows_space() / columns_space() search them.
const codegen::TunableTable<RowTunables>& row_tunable_table();

/// rows.cuh's `rows<Body, Row, Epi, Extra, L, V, Index, Block, Items>`, or with Split > 1
/// `rows_split<..., Split>`; `at` (a bucket's kernel: rows placed at run time) `rows_at` and
/// `rows_split_at`; with pack > 1 `rows_packed<..., V, Index, Items, Pack, Rows>` (Rows: `rows`).
struct RowTemplate {
  static constexpr std::string_view kHeader = "rows.cuh";
  std::string functor;  ///< Row: the row op's functor
  std::string extras;   ///< Extra: kiln::Types<...> of the weight and bias
  std::string layout;   ///< L
  int vec = 1;
  bool index64 = false;
  int block = 0, items = 0, split = 1, pack = 1;
  std::int64_t rows = 0;  ///< rows in all (rows_packed's bound)
  bool at = false;

  std::string expression() const;
  /// "<stem>__r2v4", "<stem>__all1v4s8", "<stem>__at2v8i4", "<stem>__r2v8p4": the layout's
  /// `dims`, `all_axes` a reduction over every element; the `fallback` (default) tunables'
  /// split and pack, and this kernel's tunables where they are not the default's.
  std::string name(std::string_view stem, bool all_axes, std::size_t dims,
                   const RowTunables& fallback) const;
};

/// columns.cuh's `columns<Body, Row, Epi, L, V, Index, BX, BY, R, IG>`: BX column groups and BY
/// threads along the axis per block, R the axis's extent, IG the groups after it.
struct ColumnTemplate {
  static constexpr std::string_view kHeader = "columns.cuh";
  std::string functor;
  std::string layout;
  int vec = 1;
  bool index64 = false;
  int bx = 1, by = 1;
  std::int64_t r = 1, ig = 1;

  std::string expression() const;
  /// "<stem>__col3v4", with "_b<block>c<cols>" where `tuned` (not the default).
  std::string name(std::string_view stem, std::size_t dims, bool tuned) const;
};

}  // namespace kiln
