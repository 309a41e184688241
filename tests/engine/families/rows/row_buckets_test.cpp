// The buckets of a dynamic row length (engine/families/rows/row_buckets.hpp): they cover every length
// within the template's limits, hold in registers what the kernels of one length hold, and their
// launches take the shared memory they need and no more than the kernel of the length.
#include "engine/families/rows/row_buckets.hpp"

#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <string>

#include "tests/engine/dynamic_graphs.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::test::bound;
using kiln::test::dynamic_row_graph;
using kiln::test::launch_at;

TEST_CASE("row buckets cover every length with whole warps, within the template's limits") {
  for (int vec : {1, 2, 4, 8, 16})
    for (bool clusters : {false, true})
      for (bool writes : {false, true})
        for (std::int64_t g = 1; g <= 300000; g += 1 + g / 64) {
          CAPTURE(vec);
          CAPTURE(g);
          const kiln::RowTunables t = kiln::bucket_row_tunables(g, vec, clusters, writes);
          const auto [block, split] = kiln::bucket_launch(t, g, vec);
          REQUIRE(block % 32 == 0);
          REQUIRE(block >= 32);
          REQUIRE(block <= t.block);
          REQUIRE(t.items * vec <= 32);
          REQUIRE((split == 1 || split == 2 || split == 4 || split == 8));
          REQUIRE(split <= t.split);
          if (t.split > 1) REQUIRE(clusters);
          if (t.items > 0) REQUIRE(std::int64_t(block) * t.items * split >= g);
          if (t.items == 0 && t.split > 1) REQUIRE((g + split - 1) / split * vec * 4 <= 65536);
          if (split > 1 && t.items > 0) REQUIRE(std::int64_t(t.block) * t.items * split / 2 < g);
          // A split bucket in registers stages a norm's weight and bias through the cluster's
          // mbarrier: every row it holds runs in clusters of its most blocks.
          if (t.split > 1 && t.items > 0) REQUIRE(split == t.split);
        }
}

TEST_CASE("row buckets hold in one block's registers the rows that kernels for one length do") {
  // As default_row_tunables: 16 values a thread in packs of 1, 32 in packs of 2 to 8, 1024
  // threads. A bucket that streams rows its length's kernel holds in registers is slower.
  for (int vec : {1, 2, 4, 8})
    for (bool clusters : {false, true})
      for (bool writes : {false, true}) {
        const std::int64_t most = (vec == 1 ? 16384 : 32768) / vec;
        for (std::int64_t g : {std::int64_t(1), most / 2 + 1, most - 1, most}) {
          CAPTURE(vec);
          CAPTURE(clusters);
          CAPTURE(g);
          const kiln::RowTunables t = kiln::bucket_row_tunables(g, vec, clusters, writes);
          CHECK(t.items * vec == (vec == 1 ? 16 : 32));
          CHECK(kiln::bucket_launch(t, g, vec).split == 1);
        }
        CAPTURE(vec);
        const kiln::RowTunables past = kiln::bucket_row_tunables(most + 1, vec, clusters, writes);
        CHECK((past.items == 0 || kiln::bucket_launch(past, most + 1, vec).split > 1));
      }
}

TEST_CASE(
    "a bucket's rows split in registers launch with the shared memory that their block's staged "
    "weight and bias take") {
  // rows_split_at stages a norm's weight and bias in the launch's dynamic shared memory, as
  // much as its block needs (it traps with less): each of 2 operands, Items groups of 16 bytes
  // for each thread, and 128 bytes to align them. A shorter row runs a shorter block and takes
  // less, so that more blocks fit.
  for (const char* op : {"layer_norm", "softmax"}) {
    const Graph g = dynamic_row_graph(op, 3, DType::bf16);
    for (std::int64_t length : {32776, 35144, 40720, 49384, 65536}) {
      const kiln::KernelLaunch L = launch_at(g, length);
      CAPTURE(op);
      CAPTURE(length);
      CHECK(L.spec.name.find("i4s8") != std::string::npos);  // the split bucket in registers
      const std::int64_t groups = length / 8, block = L.config.block[0];
      CHECK(L.config.cluster[0] == 8);
      CHECK(block % 32 == 0);
      CHECK(8 * block * 4 >= groups);        // 8 blocks of `block` threads x 4 groups hold it
      CHECK(8 * (block - 32) * 4 < groups);  // and one warp fewer would not
      CHECK(L.config.shared == (std::string(op) == "layer_norm" ? block * 4 * 16 * 2 + 128 : 0));
    }
  }
}

TEST_CASE(
    "a bucket's streaming kernel takes no more shared memory a block than the kernel for its "
    "length") {
  // The bucket's kernel holds the cluster's statistics (row_reduce.cuh, ClusterParts, at most
  // 16 bytes each) of every warp of its most blocks, 8; the kernel for one length those of its
  // own split. Its stash (the dynamic shared memory) leaves that difference, so that the two
  // take the same shared memory a block at most, and as many blocks fit a multiprocessor.
  int streamed = 0;
  for (const char* op : {"softmax", "layer_norm"})
    for (std::int64_t length : {16385, 20001, 28477, 40001, 65535, 100001, 131071}) {
      const Graph g = dynamic_row_graph(op, 3, DType::bf16);
      const kiln::KernelLaunch at = launch_at(g, length), one = launch_at(bound(g, length), length);
      CAPTURE(op);
      CAPTURE(length);
      REQUIRE(at.tunables.at("items") == 0);  // both stream (odd lengths: packs of 1)
      REQUIRE(one.tunables.at("items") == 0);
      const std::int64_t warps = at.config.block[0] / 32, split = one.tunables.at("split");
      CHECK(at.config.block[0] == one.config.block[0]);
      CHECK(at.config.cluster[0] == split);
      CHECK(at.config.shared + 8 * warps * 16 <= one.config.shared + split * warps * 16);
      CHECK(at.config.shared + 8 * warps * 16 + 16 * 16 > one.config.shared + split * warps * 16);
      streamed += split < 8;
    }
  CHECK(streamed >= 6);  // a split of fewer than 8 blocks, where the two differ
}
