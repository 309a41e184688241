#include "engine/families/rows/row_buckets.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/codegen/codegen.hpp"

namespace kiln {
namespace {

constexpr std::int64_t kStashBytes = 64 * 1024;  // a stash block's most, as split rows keep
constexpr int kMostSplit = 8;                    // blocks a cluster splits a row between

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int most_items(int vec) { return std::min(16, std::max(1, 32 / vec)); }

// Groups a thread keeps in registers: as many as it may (16, and at most 32 values), or at most
// 4 of packs of 8 values or more (default_row_tunables' first choice). 1024 threads then hold rows
// of 16384 values in packs of 1 and of 32768 in packs of 2 to 8, as the kernels for one length
// do, rather than streaming rows that those hold in registers.
int bucket_items(int vec) { return vec >= 8 ? std::min(most_items(vec), 4) : most_items(vec); }

// The buckets of `vec`, shortest first: each one's longest row in groups (the last: none).
struct Bucket {
  RowTunables t;
  std::int64_t longest;  ///< groups; 0: any length
};

// Where clusters run, longer rows that an op writes are split between the blocks of a cluster,
// as many as the launch gives (as default_row_tunables and split_row_tunables choose for one
// length): packs of 8 values in registers, 256 threads a block; others stashed. Keeping every
// row in registers instead, split between blocks of at most 512 threads, ran at 0.4-0.6 x the
// per-length kernels for odd lengths over 16384 (bench/NOTES.md).
std::vector<Bucket> buckets(int vec, bool clusters, bool writes_row) {
  std::vector<Bucket> out;
  const int items = bucket_items(vec);
  out.push_back({{1024, items, 0, 1}, 1024 * std::int64_t(items)});
  if (clusters && writes_row) {
    if (vec >= 8)
      out.push_back({{256, items, 0, kMostSplit}, kMostSplit * 256 * std::int64_t(items)});
    const std::int64_t stashed = kMostSplit * (kStashBytes / (std::int64_t(vec) * 4));
    if (stashed > out.back().longest) out.push_back({{512, 0, 0, kMostSplit}, stashed});
  }
  out.push_back({{1024, 0, 0, 1}, 0});
  return out;
}

}  // namespace

RowTunables bucket_row_tunables(std::int64_t row_groups, int vec, bool clusters, bool writes_row) {
  for (const Bucket& b : buckets(vec, clusters, writes_row))
    if (b.longest == 0 || row_groups <= b.longest) return b.t;
  return {1024, 0, 0, 1};
}

BucketLaunch bucket_launch(const RowTunables& t, std::int64_t row_groups, int vec) {
  int split = 1;  // the fewest blocks that hold the row: in registers, or stashed
  while (split < t.split && (t.items > 0 ? std::int64_t(split) * t.block * t.items < row_groups
                                         : ceil_div(row_groups, split) * vec * 4 > kStashBytes))
    split *= 2;
  if (t.items == 0) return {t.block, split};
  const std::int64_t per_block = ceil_div(row_groups, std::int64_t(t.items) * split);
  return {int(std::clamp<std::int64_t>(ceil_div(per_block, 32) * 32, 32, t.block)), split};
}

std::vector<std::int64_t> row_bucket_probes() {
  std::set<std::int64_t> lengths = {1};
  for (int vec : {1, 2, 4, 8, 16})
    for (bool clusters : {false, true})
      for (bool writes_row : {false, true}) {
        std::int64_t shortest = 1;
        for (const Bucket& b : buckets(vec, clusters, writes_row)) {
          // Odd group counts: a length of exactly this vector width.
          const std::int64_t longest = b.longest ? b.longest : 2 * shortest;
          for (std::int64_t g : {shortest | 1, (shortest + 2) | 1, longest - 1 + (longest & 1)})
            if (g >= shortest && g <= longest) lengths.insert(g * vec);
          shortest = longest + 1;
        }
      }
  return {lengths.begin(), lengths.end()};
}

std::string rows_at_type(const LayoutPlan& lp, const std::vector<std::int64_t>& inner) {
  return codegen::render_instance("kiln::RowsAt",
                                  {codegen::render_dim(0, inner),
                                   std::to_string(std::max<std::size_t>(1, lp.dims.size() - 1))});
}

std::vector<unsigned char> rows_at_geometry(const LayoutPlan& lp) {
  const std::size_t K = lp.dims.back().stride.size();
  std::vector<LayoutPlan::Dim> outer(lp.dims.begin(), lp.dims.end() - 1);
  if (outer.empty()) outer.push_back({1, std::vector<std::int64_t>(K, 0)});
  std::vector<long long> values;
  for (const auto& d : outer) values.push_back(d.extent);
  for (const auto& d : outer) values.insert(values.end(), d.stride.begin(), d.stride.end());
  std::vector<unsigned char> bytes(values.size() * sizeof(long long));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace kiln
