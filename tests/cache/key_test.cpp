#include "cache/key.hpp"

#include <algorithm>
#include <string>

#include "engine/compiler/headers.hpp"
#include "tests/support.hpp"

using kiln::cache::CacheKey;
using kiln::cache::KeyInputs;

namespace {

struct Fixture {
  std::string source = "#include <kiln/elementwise.cuh>\n";
  std::string expression = "kiln::elementwise<kiln::op::Add, float>";
  std::string header = kiln::compiler::HeaderTable::embedded().source("kiln/elementwise.cuh");
  KeyInputs inputs() const {
    return {source,         expression, {{"kiln/elementwise.cuh", header}},
            {"-std=c++17"}, "sm_90a",   "13.0"};
  }
};

}  // namespace

TEST_CASE("cache key: the same inputs give the same key") {
  Fixture f;
  CHECK(kiln::cache::compute_key(f.inputs()) == kiln::cache::compute_key(f.inputs()));
}

TEST_CASE("cache key: one changed byte of any input changes the key") {
  Fixture f;
  const CacheKey base = kiln::cache::compute_key(f.inputs());
  SUBCASE("a byte of the template") {
    for (std::size_t at : {std::size_t(0), f.header.size() / 2, f.header.size() - 1}) {
      Fixture g;
      g.header[at] ^= 1;
      CHECK(kiln::cache::compute_key(g.inputs()) != base);
    }
  }
  SUBCASE("the source") {
    f.source += " ";
    CHECK(kiln::cache::compute_key(f.inputs()) != base);
  }
  SUBCASE("the instantiation") {
    f.expression.back() = ',';
    CHECK(kiln::cache::compute_key(f.inputs()) != base);
  }
  SUBCASE("an option") {
    KeyInputs in = f.inputs();
    in.options[0] = "-std=c++20";
    CHECK(kiln::cache::compute_key(in) != base);
    in.options = {"-std=c++17", "-lineinfo"};
    CHECK(kiln::cache::compute_key(in) != base);
  }
  SUBCASE("the arch") {
    KeyInputs in = f.inputs();
    in.arch = "sm_80";
    CHECK(kiln::cache::compute_key(in) != base);
  }
  SUBCASE("the NVRTC version") {
    KeyInputs in = f.inputs();
    in.nvrtc_version = "13.1";
    CHECK(kiln::cache::compute_key(in) != base);
  }
  SUBCASE("a header's name") {
    KeyInputs in = f.inputs();
    in.headers[0].first = "kiln/elementwise2.cuh";
    CHECK(kiln::cache::compute_key(in) != base);
  }
  SUBCASE("field boundaries: moving a byte from source to expression") {
    KeyInputs in = f.inputs();
    std::string s = f.source + "k", e = f.expression.substr(1);
    std::string s0 = f.source, e0 = "k" + f.expression.substr(1);
    in.source = s;
    in.expression = e;
    KeyInputs in2 = f.inputs();
    in2.source = s0;
    in2.expression = e0;
    CHECK(kiln::cache::compute_key(in) != kiln::cache::compute_key(in2));
  }
}

TEST_CASE("cache key: hex round trip and bad hex") {
  const CacheKey k{0x0123456789abcdefull, 0xfedcba9876543210ull};
  CHECK(k.hex() == "0123456789abcdeffedcba9876543210");
  REQUIRE(CacheKey::parse(k.hex()));
  CHECK(*CacheKey::parse(k.hex()) == k);
  CHECK_FALSE(CacheKey::parse("0123"));
  CHECK_FALSE(CacheKey::parse("0123456789abcdeffedcba987654321G"));
}

TEST_CASE("header closure follows includes through the table") {
  const auto& t = kiln::compiler::HeaderTable::embedded();
  const auto c = t.closure("#include <kiln/elementwise.cuh>\n");
  for (const char* h : {"kiln/elementwise.cuh", "kiln/dtype.cuh", "kiln/ops.cuh", "kiln/vec.cuh",
                        "kiln/layout.cuh"}) {
    CAPTURE(h);
    CHECK(std::find(c.begin(), c.end(), h) != c.end());
  }
  CHECK(std::find(c.begin(), c.end(), "cuda_bf16.h") == c.end());
  const auto user = t.closure("#include <cuda_bf16.h>\n");  // the toolkit's, for users' templates
  CHECK(std::find(user.begin(), user.end(), "cuda_bf16.hpp") != user.end());
  CHECK(t.closure("int x;").empty());
}
