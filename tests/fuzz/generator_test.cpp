// The fuzz generator reaches the templates of row ops off the last axis: the column template
// (another axis) and the row template over all elements.
#include "tests/fuzz/generator.hpp"

#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <set>

#include "ops/op.hpp"

TEST_CASE("fuzz generator: its graphs reach the column template and all-element reductions") {
  int other_axis = 0, all = 0, column_kernels = 0, all_kernels = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    for (const auto& n : g.nodes()) {
      if (kiln::ops::all_axes(n.attrs)) ++all;
      const std::int64_t axis = kiln::ops::axis_of(n.attrs);
      if (axis != -1 && axis + 1 != std::int64_t(g.node(std::get<int>(n.args[0])).shape.size()))
        ++other_axis;
    }
    for (const auto& k : kiln::Plan(g).kernels()) {
      if (k.name.find("__col") != std::string::npos) ++column_kernels;
      if (k.name.find("__all") != std::string::npos) ++all_kernels;
    }
  }
  CHECK(other_axis >= 10);
  CHECK(all >= 3);
  CHECK(column_kernels >= 5);
  CHECK(all_kernels >= 3);
}

TEST_CASE("fuzz generator: its graphs reach var and std, and reductions over two axes at once") {
  int variances = 0, runs = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    for (const auto& n : g.nodes()) {
      variances += n.op == "var" || n.op == "std";
      const kiln::AttrValue* axis = n.attrs.find("axis");
      runs += axis && std::holds_alternative<std::vector<std::int64_t>>(*axis);
    }
    (void)kiln::Plan(g).kernels();  // every graph plans and specializes
  }
  CHECK(variances >= 5);
  CHECK(runs >= 3);
}

TEST_CASE("fuzz generator: its graphs reach cumsum (the scan family) and permuted views") {
  int scans = 0, reversed = 0, views = 0, scan_kernels = 0, in_place = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    int graph_views = 0;
    for (const auto& n : g.nodes()) {
      scans += n.op == "cumsum";
      reversed += n.op == "cumsum" && n.attrs.flag("reverse");
      graph_views += n.op == "permute" || n.op == "transpose";
    }
    views += graph_views;
    std::size_t copies = 0;
    for (const auto& k : kiln::Plan(g).kernels()) {
      scan_kernels += k.name.find("__scan") != std::string::npos;
      copies += k.name.rfind("permute", 0) == 0 || k.name.rfind("transpose", 0) == 0;
    }
    in_place += graph_views > 0 && copies < std::size_t(graph_views);
  }
  CHECK(scans >= 20);
  CHECK(reversed >= 5);
  CHECK(scan_kernels >= 10);
  CHECK(views >= 10);
  CHECK(in_place >= 3);  // graphs where a view is read in place by the kernels after it
}

TEST_CASE("fuzz generator: its graphs reach integer dtypes, their ops and casts both ways") {
  int graphs = 0, i32 = 0, i64 = 0, floor_div = 0, rem = 0, to_int = 0, to_float = 0, typed = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    bool any = false;
    for (const auto& n : g.nodes()) {
      const bool integer = kiln::is_integer(n.dtype);
      any = any || integer;
      i32 += n.dtype == kiln::DType::i32;
      i64 += n.dtype == kiln::DType::i64;
      floor_div += integer && n.op == "div";
      rem += integer && n.op == "remainder";
      if (n.op == "cast") {
        const bool from = kiln::is_integer(g.node(std::get<int>(n.args[0])).dtype);
        to_int += !from && integer;
        to_float += from && !integer;
      }
    }
    graphs += any;
    if (any)
      for (const auto& k : kiln::Plan(g).kernels())
        typed +=
            k.name.find("_i32") != std::string::npos || k.name.find("_i64") != std::string::npos;
  }
  CHECK(graphs >= 40);
  CHECK(i32 >= 20);
  CHECK(i64 >= 20);
  CHECK(floor_div >= 5);
  CHECK(rem >= 5);
  CHECK(to_int >= 20);
  CHECK(to_float >= 10);
  CHECK(typed >= 10);  // kernels that write an integer
}

TEST_CASE("fuzz generator: its graphs reach expand and broadcast_to, read in place and copied") {
  int expands = 0, repeating = 0, copies = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    for (const auto& n : g.nodes())
      if (n.op == "expand" || n.op == "broadcast_to") {
        ++expands;
        repeating +=
            kiln::numel_of(n.shape) > kiln::numel_of(g.node(std::get<int>(n.args[0])).shape);
      }
    for (const auto& k : kiln::Plan(g).kernels())
      copies += k.name.rfind("expand", 0) == 0 || k.name.rfind("broadcast_to", 0) == 0;
  }
  CHECK(expands >= 20);
  CHECK(repeating >= 10);
  CHECK(copies >= 1);  // an expand as an output
}

TEST_CASE("fuzz generator: its graphs reach concat, its parts computed and copied") {
  int concats = 0, computed = 0, copied = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    for (const auto& n : g.nodes()) concats += n.op == "concat";
    for (const auto& k : kiln::Plan(g).kernels()) {
      computed += k.name.find("__concat_") != std::string::npos;
      copied += k.name.rfind("concat_", 0) == 0;
    }
  }
  CHECK(concats >= 20);
  CHECK(computed >= 10);  // an elementwise producer computed into its part
  CHECK(copied >= 10);
}

TEST_CASE("fuzz generator: its graphs reach gathers (in place and copied) and argmax/argmin") {
  int gathers = 0, in_place = 0, args = 0, kinds = 0;
  std::set<std::string> seen;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    bool gathered = false;
    for (const auto& n : g.nodes()) {
      if (n.op == "gather" || n.op == "index_select" || n.op == "embedding") {
        ++gathers, gathered = true;
        seen.insert(n.op);
      }
      args += n.op == "argmax" || n.op == "argmin";
    }
    if (!gathered) continue;
    bool copied = false;
    for (const auto& k : kiln::Plan(g).kernels())
      copied = copied || k.name.rfind("gather", 0) == 0 || k.name.rfind("index_select", 0) == 0 ||
               k.name.rfind("embedding", 0) == 0;
    in_place += !copied;
  }
  kinds = int(seen.size());
  CHECK(gathers >= 20);
  CHECK(kinds == 3);
  CHECK(in_place >= 5);  // graphs whose every gather is read in place
  CHECK(args >= 10);
}

TEST_CASE("fuzz generator: its graphs reach pad and upsample_nearest, read in place and copied") {
  int pads = 0, upsamples = 0, copied = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    for (const auto& n : g.nodes()) pads += n.op == "pad", upsamples += n.op == "upsample_nearest";
    for (const auto& k : kiln::Plan(g).kernels())
      copied += k.name.rfind("pad_", 0) == 0 || k.name.rfind("upsample_nearest_", 0) == 0;
  }
  CHECK(pads >= 20);
  CHECK(upsamples >= 5);
  CHECK(copied >= 1);  // as an output, or read by a kernel that cannot read it in place
}

TEST_CASE("fuzz generator: its graphs reach group_norm and batch_norm, a batch norm in a "
          "convolution's epilogue") {
  // batch_norm is a chain of elementwise ops: its rsqrt (no other draw makes one) marks it.
  int group_norms = 0, batch_norms = 0, conv_epilogues = 0;
  for (std::uint64_t seed = 0; seed < 3000; ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    bool batch = false;
    for (const auto& n : g.nodes()) {
      group_norms += n.op == "group_norm";
      batch = batch || n.op == "rsqrt";
    }
    batch_norms += batch;
    if (!batch || conv_epilogues > 0) continue;  // planned until one is found
    for (const auto& k : kiln::Plan(g).kernels("sm_90a"))
      conv_epilogues +=
          k.name.rfind("conv2d_", 0) == 0 && k.name.find("rsqrt") != std::string::npos;
  }
  CHECK(group_norms >= 20);
  CHECK(batch_norms >= 10);
  CHECK(conv_epilogues >= 1);
}

TEST_CASE("fuzz generator: its attention draws reach every path of the attention family") {
  // On sm_90a: the wgmma prefill path, mma.sync (a mask), the decode path (16 query rows or
  // fewer) and the plain kernel (D 20, or f32).
  // Some kernel's epilogue reads the result through its views as [B, S, H·D]; some kernel
  // computes q from an f32 input as its prologue; some wgmma kernel takes per-batch key lengths.
  std::set<std::string> paths;
  int graphs = 0, through_views = 0, cast_prologues = 0, wgmma_lens = 0;
  for (std::uint64_t seed = 0; seed < 3000 && (paths.size() < 4 || through_views == 0 ||
                                                cast_prologues == 0 || wgmma_lens == 0);
       ++seed) {
    const kiln::Graph g = kiln::fuzz::random_graph(seed);
    bool drawn = false;
    for (const auto& n : g.nodes()) drawn = drawn || n.op == "attention";
    if (!drawn) continue;
    ++graphs;
    for (const auto& k : kiln::Plan(g).kernels("sm_90a")) {
      if (k.name.find("attention") == std::string::npos) continue;  // q's producers first
      cast_prologues += k.name.rfind("tanh_cast__attention", 0) == 0;  // from an f32 input
      wgmma_lens += k.name.find("__wg") != std::string::npos &&
                    k.name.find("_lens") != std::string::npos;
      for (const char* p : {"__wg", "__fa", "__dec", "__rows"})
        if (k.name.find(p) != std::string::npos) paths.insert(p);
      for (const std::string& op : k.ops)
        for (const auto& n : g.nodes()) through_views += n.name == op && n.op == "reshape";
    }
  }
  CHECK(graphs >= 10);
  CHECK(paths == std::set<std::string>{"__wg", "__fa", "__dec", "__rows"});
  CHECK(through_views >= 1);
  CHECK(cast_prologues >= 1);
  CHECK(wgmma_lens >= 1);
}
