// The row template's tunables (engine/families/rows/rows.hpp): the heuristic defaults, and why a
// choice cannot run a row.
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/families/rows/row_templates.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {

namespace {

constexpr int kMaxItems = 16;  // rows.cuh's limit
// A split row's part kept whole in shared memory, at most this much: three blocks per SM.
constexpr std::int64_t kSplitStashBytes = 64 * 1024;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

RowTunables row_tunables(const Tunables& t, const std::string& stem) {
  return codegen::parse_tunables(row_tunable_table(), t, RowTunables{}, stem, "row templates");
}

RowTunables default_row_tunables(std::int64_t row_groups, int vec) {
  const std::int64_t most = std::min<std::int64_t>(kMaxItems, std::max(1, 32 / vec));
  // About 64 bytes of the row per thread at full width: 16 f32 or 32 bf16/f16 values (`kiln
  // tune` found 32 best for bf16 on an H100: bench/NOTES.md).
  const std::int64_t want = std::min<std::int64_t>(most, vec >= 8 ? 4 : std::max(1, 16 / vec));
  std::int64_t items = std::max<std::int64_t>(1, std::min(want, ceil_div(row_groups, 32)));
  while (items < most && items * 1024 < row_groups) items = std::min(most, items * 2);
  if (items * 1024 < row_groups) return {1024, 0};
  return {int(std::max<std::int64_t>(32, ceil_div(ceil_div(row_groups, items), 32) * 32)),
          int(items)};
}

RowTunables split_row_tunables(std::int64_t row_groups, int vec) {
  if (vec >= 8)  // 2-byte values: in registers, 32 per thread, 256 threads per block
    for (int split : {2, 4, 8})
      if (std::int64_t(split) * 256 * 4 >= row_groups)
        return {int(ceil_div(ceil_div(row_groups, split * 4), 32) * 32), 4, 0, split};
  for (int split : {2, 4, 8})
    if (ceil_div(row_groups, split) * vec * 4 <= kSplitStashBytes) return {512, 0, 0, split};
  return {0, 0, 0, 1};
}

std::string reject_row_tunables(const RowTunables& t, std::int64_t row_groups, int vec,
                                bool clusters) {
  if (t.block < 32 || t.block > 1024 || t.block % 32)
    return fmt::format("{} threads per block: a row block is 32 to 1024 threads, whole warps",
                       t.block);
  if (t.items < 0 || t.items > kMaxItems)
    return fmt::format("{} groups per thread: 0 to {}", t.items, kMaxItems);
  if (t.items * vec > 32)
    return fmt::format("{} values per thread in registers: at most 32", t.items * vec);
  if (t.split != 1 && t.split != 2 && t.split != 4 && t.split != 8)
    return fmt::format("a row split between {} blocks: 1, 2, 4 or 8", t.split);
  if (t.split > 1 && !clusters)
    return fmt::format("a row split between {} blocks needs thread-block clusters (sm_90 or later)",
                       t.split);
  if (t.pack != 1 && t.pack != 2 && t.pack != 4 && t.pack != 8)
    return fmt::format("{} rows per block: 1, 2, 4 or 8", t.pack);
  if (t.pack > 1 && (t.block != 32 || t.items == 0 || t.split != 1))
    return fmt::format("{} rows per block: a warp each (block 32), in registers (items > 0), "
                       "unsplit", t.pack);
  const std::int64_t per_pass = std::int64_t(t.block) * std::max(t.items, 1) * t.split;
  if (t.items > 0 && per_pass < row_groups)
    return fmt::format("{} threads x {} groups x {} blocks do not cover a row of {} groups",
                       t.block, t.items, t.split, row_groups);
  if ((t.block > 32 || t.items > 1 || t.split > 1) && per_pass / 2 >= row_groups)
    return fmt::format("{} threads x {} groups x {} blocks for rows of {} groups: half would idle",
                       t.block, std::max(t.items, 1), t.split, row_groups);
  return "";
}

}  // namespace kiln
