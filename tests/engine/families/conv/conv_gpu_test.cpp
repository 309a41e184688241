// conv2d on the GPU against fp64 (tests/engine/reference_conv.cpp): every case of conv_cases()
// in f16, bf16 and f32, fused and unfused, outputs poisoned first (a batch norm's variance drawn
// positive).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/engine/families/conv/conv_cases.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

TEST_CASE("gpu: conv2d matches the fp64 reference, fused and unfused" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(361);
  int graphs = 0;
  for (kiln::DType t : {kiln::DType::f16, kiln::DType::bf16, kiln::DType::f32})
    for (const auto& c : kiln::test::conv_cases()) {
      const kiln::Graph g = kiln::test::conv_graph(c, t);
      CAPTURE(g.to_json());
      kiln::test::HostInputs host = kiln::test::random_inputs(g, rng);
      if (g.find("var") >= 0)  // a variance: positive
        host["var"] = kiln::test::random_bytes(kiln::DType::f32, std::size_t(c.k), 0.05, 3, rng);
      for (const auto& f : kiln::test::check_inputs_on_gpu(e, g, host, true)) FAIL_CHECK(f);
      ++graphs;
    }
  MESSAGE(fmt::format("{} convolutions", graphs));
}
