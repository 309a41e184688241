#include "cache/bundle.hpp"

#include "cache/kernel_cache.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::kernel_of;
using kiln::test::key_of;
using kiln::test::TempDir;

namespace {
std::vector<BundleItem> items(int from, int to) {
  std::vector<BundleItem> out;
  for (int i = from; i < to; ++i) out.push_back({key_of(i), kernel_of(i)});
  return out;
}
}  // namespace

TEST_CASE("bundle: write, open, find every entry") {
  TempDir tmp;
  write_bundle(tmp / "a.kbundle", items(0, 10));
  const Bundle b = Bundle::open(tmp / "a.kbundle");
  CHECK(b.items().size() == 10);
  for (int i = 0; i < 10; ++i) {
    auto k = b.find(key_of(i));
    REQUIRE(k);
    CHECK(k->image == kernel_of(i).image);
  }
  CHECK_FALSE(b.find(key_of(10)));
}

TEST_CASE("bundle: any damage refuses the whole bundle") {
  TempDir tmp;
  write_bundle(tmp / "a.kbundle", items(0, 3));
  const std::string good = kiln::test::read_file(tmp / "a.kbundle");
  int refused = 0, tried = 0;
  for (std::size_t at = 0; at < good.size(); at += 7) {
    std::string bad = good;
    bad[at] = char(bad[at] ^ 0x10);
    kiln::test::write_file(tmp / "bad.kbundle", bad);
    ++tried;
    try {
      Bundle::open(tmp / "bad.kbundle");
    } catch (const kiln::CacheError& e) {
      ++refused;
      if (refused == 1) CHECK(std::string(e.what()).find("kiln cache pack") != std::string::npos);
    }
  }
  CHECK(refused == tried);
  for (std::size_t n : {std::size_t(0), std::size_t(20), good.size() / 2, good.size() - 1}) {
    kiln::test::write_file(tmp / "short.kbundle", good.substr(0, n));
    CHECK_THROWS_AS(Bundle::open(tmp / "short.kbundle"), kiln::CacheError);
  }
  CHECK_THROWS_AS(Bundle::open(tmp / "missing.kbundle"), kiln::CacheError);
}

TEST_CASE("bundle: merged bundles hold the union, each entry once") {
  TempDir tmp;
  write_bundle(tmp / "a.kbundle", items(0, 6));
  write_bundle(tmp / "b.kbundle", items(4, 9));
  std::vector<BundleItem> all;
  for (const char* name : {"a.kbundle", "b.kbundle"}) {
    const Bundle b = Bundle::open(tmp / name);
    for (auto& it : b.items()) all.push_back(it);
  }
  write_bundle(tmp / "all.kbundle", all);
  CHECK(Bundle::open(tmp / "all.kbundle").items().size() == 9);
}

TEST_CASE("layers: memory, then bundles, then disk, then compile") {
  TempDir tmp;
  write_bundle(tmp / "app.kbundle", items(0, 2));
  KernelCacheOptions o;
  o.dir = tmp / "cache";
  o.bundles = {tmp / "app.kbundle"};
  KernelCache c(o);
  kiln::test::Counting n;
  CHECK(c.get(key_of(0), n.for_key(0)).source == KernelCache::Source::bundle);
  CHECK(c.get(key_of(0), n.for_key(0)).source == KernelCache::Source::memory);
  CHECK(c.get(key_of(5), n.for_key(5)).source == KernelCache::Source::compiled);
  CHECK(n.calls == 1);
  CHECK(c.counters().bundle_hits == 1);
  CHECK(DiskCache(tmp / "cache").list().size() == 1);  // bundle hits are not copied to disk

  std::string bad = kiln::test::read_file(tmp / "app.kbundle");
  bad[bad.size() - 3] ^= 1;
  kiln::test::write_file(tmp / "app.kbundle", bad);
  CHECK_THROWS_WITH_AS(KernelCache{o}, doctest::Contains("refusing bundle"), kiln::CacheError);
}

TEST_CASE("KILN_BUNDLE lists bundles, colon-separated, empty parts skipped") {
  ::setenv("KILN_BUNDLE", "a.kbundle::/x/b.kbundle:", 1);
  CHECK(bundles_from_env() == std::vector<std::string>{"a.kbundle", "/x/b.kbundle"});
  ::unsetenv("KILN_BUNDLE");
  CHECK(bundles_from_env().empty());
}
