// Tuning records: round trip through the cache directory, merge, and refusal of another GPU's.
#include "cache/tuning.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <kiln/error.hpp>
#include <string>

#include "tests/support.hpp"

using kiln::cache::TuningDb;
using kiln::cache::TuningRecord;

namespace {
TuningRecord record(const std::string& gpu, const std::string& sig, double us) {
  return kiln::test::tuning_record(gpu, sig, {{"block", 512}}, us);
}
}  // namespace

TEST_CASE("tuning records: round trip, merge keeps the faster, another GPU's are refused") {
  kiln::test::TempDir dir;
  const std::string h100 = "NVIDIA H100 80GB HBM3", h200 = "NVIDIA H200";
  CHECK(TuningDb::load(dir.path(), h100).records().empty());  // no file yet

  TuningDb db(h100);
  db.put(record(h100, "aaa", 10));
  db.put(record(h100, "bbb", 20));
  db.put(record(h100, "aaa", 9));  // same signature: replaced
  db.save(dir.path());
  CHECK(TuningDb::path(dir.path(), h100) == dir / "tuning/NVIDIA_H100_80GB_HBM3.json");
  const TuningDb back = TuningDb::load(dir.path(), h100);
  REQUIRE(back.records().size() == 2);
  REQUIRE(back.find("aaa"));
  CHECK(back.find("aaa")->winner_us == 9);
  CHECK(back.find("aaa")->winner == std::map<std::string, int>{{"block", 512}});
  CHECK(back.find("ccc") == nullptr);

  TuningDb incoming = TuningDb::parse(back.to_json(), "export.json");
  incoming.put(record(h100, "aaa", 12));  // slower than ours: not taken
  incoming.put(record(h100, "ccc", 5));   // new: taken
  TuningDb mine = TuningDb::load(dir.path(), h100);
  CHECK(mine.merge(incoming) == 1);
  CHECK(mine.find("aaa")->winner_us == 9);
  CHECK(mine.find("ccc"));

  TuningDb other(h200);
  other.put(record(h200, "aaa", 1));
  CHECK_THROWS_WITH_AS(mine.merge(other), doctest::Contains("never applied to another GPU"),
                       kiln::ArgumentError);
  CHECK_THROWS_AS(mine.put(record(h200, "ddd", 1)), kiln::ArgumentError);
  CHECK(mine.find("aaa")->winner_us == 9);  // untouched

  // A file of another GPU under this GPU's name, or a malformed one, is refused with the path.
  other.save(dir.path());
  std::rename(TuningDb::path(dir.path(), h200).c_str(), TuningDb::path(dir.path(), h100).c_str());
  CHECK_THROWS_WITH_AS(TuningDb::load(dir.path(), h100),
                       doctest::Contains("holds records of 'NVIDIA H200'"), kiln::CacheError);
  std::ofstream(TuningDb::path(dir.path(), h100)) << "{\"gpu\": \"x\", \"records\": [{}]}";
  CHECK_THROWS_WITH_AS(TuningDb::load(dir.path(), h100),
                       doctest::Contains("not a kiln tuning file"), kiln::CacheError);
  CHECK_THROWS_AS(TuningDb::parse("not json", "x.json"), kiln::CacheError);
}

TEST_CASE(
    "kiln tune: --export and --import ship records; another GPU's are kept apart, never applied") {
  kiln::test::TempDir dir;
  const std::string env = "KILN_CACHE_DIR=" + (dir / "cache");
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  TuningDb made(h100);
  made.put(record(h100, "aaa", 10));
  made.put(record(h100, "bbb", 20));
  std::ofstream(dir / "from-farm.json") << made.to_json();

  auto r = kiln::test::kiln_cli("tune --import " + (dir / "from-farm.json"), env);
  CHECK(r.status == 0);
  CHECK(r.output.find("imported 2 records of 'NVIDIA H100 80GB HBM3' (2 new or faster)") !=
        std::string::npos);
  if (!kiln::test::has_gpu())
    CHECK(r.output.find("not applied on this machine (no GPU here)") != std::string::npos);
  CHECK(TuningDb::load(dir / "cache", h100).records().size() == 2);  // under the H100's own file

  r = kiln::test::kiln_cli("tune --import " + (dir / "from-farm.json"), env);  // again: nothing new
  CHECK(r.output.find("(0 new or faster)") != std::string::npos);

  r = kiln::test::kiln_cli("tune --export " + (dir / "out.json") + " --gpu '" + h100 + "'", env);
  CHECK(r.status == 0);
  std::ifstream in(dir / "out.json");
  const TuningDb back =
      TuningDb::parse(std::string(std::istreambuf_iterator<char>(in), {}), "out.json");
  CHECK(back.gpu() == h100);
  CHECK(back.records().size() == 2);
  REQUIRE(back.find("bbb"));
  CHECK(back.find("bbb")->winner_us == 20);

  // Errors: one line, non-zero exit, nothing written.
  r = kiln::test::kiln_cli("tune --export " + (dir / "none.json") + " --gpu 'NVIDIA H200'", env);
  CHECK(r.status == 1);
  CHECK(r.output.find("no tuning records of 'NVIDIA H200'") != std::string::npos);
  CHECK_FALSE(std::ifstream(dir / "none.json"));
  std::ofstream(dir / "bad.json") << "{\"gpu\": 3}";
  r = kiln::test::kiln_cli("tune --import " + (dir / "bad.json"), env);
  CHECK(r.status == 1);
  CHECK(r.output.find("not a kiln tuning file") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE("kiln tune: without a GPU, a one-line error after checking the graph" *
          doctest::skip(kiln::test::has_gpu())) {
  const std::string graph = std::string(KILN_SOURCE_DIR) +
                            "/tests/regressions/seed-150-epilogue-reads-a-later-reduction.json";
  auto r = kiln::test::kiln_cli("tune " + graph);
  CHECK(r.status == 1);
  CHECK(r.output.rfind("kiln: tune: no GPU here", 0) == 0);
  CHECK(r.output.find("to time the 2 kernels") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  r = kiln::test::kiln_cli("tune /nonexistent/g.json");
  CHECK(r.status == 1);
  CHECK(r.output.find("cannot read graph file") != std::string::npos);
}
