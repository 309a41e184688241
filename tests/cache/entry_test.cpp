#include "cache/entry.hpp"

#include "tests/support.hpp"

using namespace kiln::cache;

namespace {

kiln::CompiledKernel sample_kernel() {
  kiln::CompiledKernel k;
  k.name = "add_f32__r1v4";
  k.lowered_name = "_Z3addv";
  k.arch = "sm_90a";
  k.image = std::string(
                "\x7f"
                "ELF",
                4) +
            std::string(200, '\x5a');
  k.registers = 16;
  k.spill_bytes = 0;
  k.compile_ms = 41.5;
  return k;
}

const CacheKey kKey{0x1111222233334444ull, 0x5555666677778888ull};

}  // namespace

TEST_CASE("cache entry: round trip keeps every field") {
  const auto k = sample_kernel();
  const Decoded d = decode_entry(encode_entry(kKey, k), kKey);
  REQUIRE(d.kernel);
  CHECK(d.kernel->name == k.name);
  CHECK(d.kernel->lowered_name == k.lowered_name);
  CHECK(d.kernel->arch == k.arch);
  CHECK(d.kernel->image == k.image);
  CHECK(d.kernel->registers == 16);
  CHECK(d.kernel->compile_ms == doctest::Approx(41.5));
  CHECK_FALSE(d.kernel->is_ptx);
}

TEST_CASE("cache entry: truncation at every byte offset is detected") {
  const std::string bytes = encode_entry(kKey, sample_kernel());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    const Decoded d = decode_entry(std::string_view(bytes).substr(0, n), kKey);
    CHECK_FALSE(d.kernel);
    CHECK_FALSE(d.problem.empty());
  }
}

TEST_CASE("cache entry: every single bit flip is detected") {
  const std::string bytes = encode_entry(kKey, sample_kernel());
  int detected = 0;
  for (std::size_t i = 0; i < bytes.size() * 8; ++i) {
    std::string bad = bytes;
    bad[i / 8] = char(bad[i / 8] ^ (1 << (i % 8)));
    detected += decode_entry(bad, kKey).kernel ? 0 : 1;
  }
  CHECK(detected == int(bytes.size() * 8));
}

TEST_CASE("cache entry: wrong key, wrong version, zero length, appended bytes") {
  const std::string bytes = encode_entry(kKey, sample_kernel());
  CHECK(decode_entry(bytes, CacheKey{1, 2}).problem.find("expected") != std::string::npos);
  std::string v = bytes;
  v[8] = char(kFormatVersion + 1);
  CHECK(decode_entry(v, kKey).problem.find("format version") != std::string::npos);
  CHECK(decode_entry("", kKey).problem.find("truncated") != std::string::npos);
  CHECK_FALSE(decode_entry(bytes + "x", kKey).kernel);
}
