// A sweep of bad input over every kiln command, option and environment variable: each is
// refused with exit 1 and one line "kiln: ..." that names what to fix; never an abort, a
// signal or a C++ exception's own text.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "tests/support.hpp"
#include "tools/npy.hpp"

namespace {

using kiln::test::kiln_cli;

constexpr const char* kGraph = R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "f32"}],
  "nodes": [{"name": "y", "op": "softmax", "args": ["x"]}], "outputs": ["y"]})";

struct Case {
  std::string args;
  std::string env;
  std::string says;  ///< a piece of the one line
};

// The files the cases refer to, in `dir`: D a directory, G.json a graph, DIR.json a directory
// named like a graph, F a plain file, E an empty file, npy files good and bad.
std::vector<Case> cases(const std::string& d) {
  const std::string g = d + "/g.json", cache = " --cache-dir " + d + "/c";
  return {
      // A directory, a missing file or junk where a file belongs, for every command that reads one.
      {"plan " + d, "", "is a directory"},
      {"plan " + d + "/missing.json", "", "No such file"},
      {"run " + d, "", "is a directory"},
      {"bench " + d, "", "is a directory"},
      {"precompile " + d + cache, "", "is a directory"},
      {"precompile " + d + "/dir.json" + cache, "", "is a directory"},
      {"precompile " + d + "/missing" + cache, "", "No such file"},
      {"precompile " + d + "/e" + cache, "", "no kernels"},
      {"precompile " + g + " " + d + "/e" + cache, "", "no kernels"},
      {"tune " + d + "/dir.json", "", "is a directory"},
      {"tune " + d, "", "not a graph file"},
      {"tune", "", "nothing to tune"},
      {"cache explain " + d + " --arch sm_90a" + cache, "", "is a directory"},
      {"cache explain " + d + "/dir.json --arch sm_90a" + cache, "", "is a directory"},
      {"tune --import " + d + cache, "", "is a directory"},
      {"tune --import " + d + "/missing" + cache, "", "No such file"},
      {"tune --import " + d + "/f" + cache, "", "not a kiln tuning file"},
      {"tune --import " + d + "/f --export " + d + "/x" + cache, "", "give one of them"},
      {"tune --export " + d + "/x --gpu H100" + cache, "", "no tuning records"},
      // Archs.
      {"plan --arch '' " + g, "", "--arch ''"},
      {"plan --arch , " + g, "", "--arch ','"},
      {"plan --arch sm_1 " + g, "", "bad arch 'sm_1'"},
      {"plan --compile --arch sm_90a,bogus " + g + cache, "", "bad arch 'bogus'"},
      {"precompile --arch '' " + g + cache, "", "--arch ''"},
      {"precompile --arch , " + g + cache, "", "--arch ','"},
      {"precompile --arch sm_9000 " + g + cache, "", "sm_9000"},
      {"precompile --arch sm_90a,,sm_80 " + g + cache, "", "'sm_90a,,sm_80': an empty arch"},
      {"precompile --arch sm_80, " + g + cache, "", "an empty arch in the list"},
      {"plan --arch sm_80,sm_80 " + g, "", "sm_80 is named twice"},
      {"cache explain " + g + " --arch nope" + cache, "", "bad arch 'nope'"},
      // Shards and counts.
      {"precompile --shard 1/0 " + g + cache, "", "bad shard"},
      {"precompile --shard 2/2 " + g + cache, "", "bad shard"},
      {"precompile --shard x " + g + cache, "", "expected I/N"},
      {"bench " + g + " --reps 0", "", "--reps 0"},
      {"precompile -j 0 " + g + cache, "", "-j 0: the number of parallel compiles is at least 1"},
      {"precompile -j -3 " + g + cache, "", "-j -3: the number of parallel compiles"},
      {"tune --budget-s 0 " + g, "", "--budget-s 0: a number of seconds above 0"},
      {"tune --budget-s -5 " + g, "", "--budget-s -5"},
      {"tune --budget-s inf " + g, "", "--budget-s inf"},
      // A graph whose shapes or dtypes clash names its file, as its other errors do.
      {"plan " + d + "/shape.json", "", d + "/shape.json: node 'y'"},
      {"plan " + d + "/dtype.json", "", d + "/dtype.json: node 'y'"},
      // So does one planning it: a kernel compiled once per extent cannot be compiled ahead.
      {"tune " + d + "/sum.json" + cache, "", d + "/sum.json: kernel sum_f32"},
      // kiln run's inputs: all checked against the graph before any GPU is looked for.
      {"run " + g + " --input x=" + d, "", "is a directory"},
      {"run " + g + " --input x", "", "expected NAME=FILE.npy"},
      {"run " + g + " --input z=" + d + "/x.npy", "", "no input 'z'"},
      {"run " + g + " --input x=" + d + "/x.npy --input x=" + d + "/x.npy", "", "given twice"},
      {"run " + g, "", "input 'x' was not given"},
      {"run " + g + " --input x=" + d + "/wide.npy", "",
       d + "/wide.npy: input 'x': got f32[4, 9], the graph wants [4, 8]"},
      {"run " + g + " --input x=" + d + "/huge.npy", "", "is not an integer from 0 to 2^63-1"},
      {"run " + g + " --input x=" + d + "/negative.npy", "", "extent '-4' is not an integer"},
      {"run " + g + " --input x=" + d + "/x.npy --output-dir " + d + "/f", "", "--output-dir"},
      // The cache command.
      {"cache gc --max-bytes 0.5" + cache, "", "--max-bytes='0.5'"},
      {"cache gc --max-bytes -1" + cache, "", "--max-bytes='-1'"},
      {"cache gc --max-bytes 99999999999999999999999" + cache, "", "64 bits"},
      {"cache pack" + cache, "", "needs an output file"},
      {"cache pack " + d + "/out.kbundle" + cache, "", "nothing to pack"},
      {"cache pack " + d + "/nowhere/out.kbundle --merge " + d + "/f", "", "not a kiln bundle"},
      {"cache pack --merge " + d + " -o " + d + "/out.kbundle", "", "is a directory"},
      {"cache --cache-dir " + d + "/f ls", "", "not a directory"},
      {"cache ls --cache-dir " + d + "/f/sub", "", "cache directory"},
      {"cache", "", "subcommand"},
      {"frobnicate", "", "frobnicate"},
      {"plan " + g + " --frobnicate", "", "--frobnicate"},
      // Environment variables.
      {"precompile " + g + cache, "KILN_CACHE_MAX_BYTES=inf", "KILN_CACHE_MAX_BYTES='inf'"},
      {"cache gc" + cache, "KILN_CACHE_MAX_BYTES=20000000000G", "KILN_CACHE_MAX_BYTES"},
      {"cache stats" + cache, "KILN_CACHE_MAX_BYTES=nan", "KILN_CACHE_MAX_BYTES"},
      {"precompile " + g, "KILN_CACHE_DIR=" + d + "/f", "not a directory"},
      {"precompile " + g, "KILN_CACHE_DIR=" + d + "/f/sub", "cache directory"},
      {"precompile " + g, "KILN_CACHE_DIR= XDG_CACHE_HOME= HOME=", "no cache directory"},
      {"precompile " + g + cache, "KILN_DISABLE_DISK_CACHE=1", "KILN_DISABLE_DISK_CACHE"},
      {"precompile " + g + cache, "KILN_BUNDLE=" + d + "/f", "not a kiln bundle"},
      {"precompile " + g + cache, "KILN_BUNDLE=" + d, "is a directory"},
      {"plan --compile " + g + cache, "KILN_BUNDLE=" + d + "/missing", "No such file"},
      {"plan --compile " + g + cache, "KILN_RECORD=" + d, "KILN_RECORD"},
  };
}

void make_files(const std::string& d) {
  kiln::test::write_file(d + "/g.json", kGraph);
  kiln::test::write_file(d + "/shape.json",
                         R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "f32"},
    {"name": "b", "shape": [5], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "add", "args": ["x", "b"]}], "outputs": ["y"]})");
  kiln::test::write_file(d + "/sum.json",
                         R"({"inputs": [{"name": "x", "shape": ["?", 64], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "sum", "args": ["x"], "attrs": {"axis": 0}}], "outputs": ["y"]})");
  kiln::test::write_file(d + "/dtype.json",
                         R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "bool"}],
    "nodes": [{"name": "y", "op": "softmax", "args": ["x"]}], "outputs": ["y"]})");
  std::filesystem::create_directory(d + "/dir.json");
  kiln::test::write_file(d + "/f", "junk\n");
  kiln::test::write_file(d + "/e", "");
  kiln::tools::write_npy(d + "/x.npy",
                         {{4, 8}, kiln::DType::f32, std::vector<unsigned char>(4 * 8 * 4)});
  kiln::tools::write_npy(d + "/wide.npy",
                         {{4, 9}, kiln::DType::f32, std::vector<unsigned char>(4 * 9 * 4)});
  std::string header = kiln::test::read_file(d + "/x.npy");
  const std::string data = header.substr(header.size() - 128);
  header.resize(header.size() - 128);
  for (const auto& [name, dims] :
       {std::pair<std::string, std::string>{"huge", "(4, 99999999999999999999)"},
        {"negative", "(-4, 8)"}}) {
    std::string h = header;
    h.replace(h.find("(4, 8)"), 6, dims);
    h.resize(header.size(), ' ');
    h.back() = '\n';
    kiln::test::write_file(d + "/" + name + ".npy", h + data);
  }
}

}  // namespace

TEST_CASE("bad input anywhere in the CLI: exit 1, one line naming what to fix, never an abort") {
  kiln::test::TempDir tmp;
  make_files(tmp.path());
  const auto all = cases(tmp.path());
  for (const Case& c : all) {
    const auto r = kiln_cli(c.args, c.env);
    CAPTURE(c.env + " kiln " + c.args);
    CAPTURE(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.rfind("kiln: ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find(c.says) != std::string::npos);
    CHECK(r.output.find("terminate called") == std::string::npos);
    CHECK(r.output.find("what()") == std::string::npos);
  }
  MESSAGE(all.size() << " bad command lines refused");
}

TEST_CASE(
    "KILN_LOG_LEVEL takes any case and warns once on an unknown value; KILN_DISABLE_FUSION reaches "
    "the CLI") {
  kiln::test::TempDir tmp;
  make_files(tmp.path());
  const auto garbage = kiln_cli("plan " + (tmp / "g.json"), "KILN_LOG_LEVEL=garbage");
  CHECK(garbage.status == 0);
  // A warning as compilers write theirs: no timestamp, no logger name, "kiln: " once.
  CHECK(garbage.err.rfind("kiln: warning: KILN_LOG_LEVEL='garbage' is not a level", 0) == 0);
  CHECK(std::count(garbage.err.begin(), garbage.err.end(), '\n') == 1);
  const auto upper =
      kiln_cli("plan --compile --arch sm_80 " + (tmp / "g.json") + " --cache-dir " + (tmp / "c"),
               "KILN_LOG_LEVEL=DEBUG");
  CHECK(upper.status == 0);
  CHECK(upper.err.find("is not a level") == std::string::npos);
  CHECK(upper.err.find("kiln: debug: ") != std::string::npos);
  CHECK(upper.err.find("[debug]") == std::string::npos);

  kiln::test::write_file(tmp / "chain.json",
                         R"({"inputs": [{"name": "x", "shape": [64], "dtype": "f32"}],
    "nodes": [{"name": "a", "op": "exp", "args": ["x"]}, {"name": "b", "op": "neg", "args": ["a"]}], "outputs": ["b"]})");
  CHECK(kiln_cli("plan " + (tmp / "chain.json")).out.find("\n1 kernel for 2 nodes\n") !=
        std::string::npos);  // counts in words; the input is no node
  for (const char* flag : {"KILN_DISABLE_FUSION=1", ""}) {
    const auto unfused =
        kiln_cli(std::string("plan ") + (*flag ? "" : "--no-fuse ") + (tmp / "chain.json"), flag);
    CHECK(unfused.out.find("2 kernels for 2 nodes") != std::string::npos);
  }
}
