// kiln.h from outside: the installed package's header compiled as C99 and C++17 with warnings
// as errors, and a C program linked against the installed library that plans and compiles a
// graph offline and checks the error paths (tests/capi/consumer.c).
#include <cstdlib>
#include <filesystem>

#include "tests/support.hpp"

TEST_CASE("c api: an installed C99 consumer plans and compiles offline and meets every error class") {
  kiln::test::TempDir tmp;
  const std::string log = tmp / "log", prefix = tmp / "prefix";
  auto sh = [&](const std::string& cmd) {
    kiln::test::write_file(log, kiln::test::read_file(log) + "$ " + cmd + "\n");
    return std::system((cmd + " >>" + log + " 2>&1").c_str());
  };
  kiln::test::write_file(log, "");
  REQUIRE(sh("cmake --install " + std::string(KILN_BINARY_DIR) + " --prefix " + prefix) == 0);
  std::string libdir;
  for (const auto& f : std::filesystem::recursive_directory_iterator(prefix))
    if (f.path().filename() == "libkiln.so") libdir = f.path().parent_path().string();
  INFO(kiln::test::read_file(log));
  REQUIRE(!libdir.empty());
  const std::string include = prefix + "/include";
  const std::string source = std::string(KILN_SOURCE_DIR) + "/tests/capi/consumer.c";
  const std::string header = include + "/kiln/kiln.h";
  const int c99 = sh("cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c " + header);
  const int cxx17 =
      sh("c++ -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c++ " + header);
  const int built = sh("cc -std=c99 -Wall -Wextra -Werror -pedantic -I " + include + " " + source +
                       " -o " + (tmp / "consumer") + " -L " + libdir + " -lkiln -Wl,-rpath," + libdir);
  // docs/c-api.md's example, as a translation unit of its own.
  const std::string doc = kiln::test::read_file(std::string(KILN_SOURCE_DIR) + "/docs/c-api.md");
  const std::size_t from = doc.find("```c\n"), to = doc.find("```\n", from + 5);
  REQUIRE(to != std::string::npos);
  kiln::test::write_file(tmp / "example.c", doc.substr(from + 5, to - from - 5));
  const int example = sh("cc -std=c99 -Wall -Wextra -Werror -pedantic -I " + include + " -c " +
                         (tmp / "example.c") + " -o " + (tmp / "example.o"));
  const int ran = built == 0 ? sh(tmp / "consumer" + " " + (tmp / "cache")) : -1;
  INFO(kiln::test::read_file(log));
  CHECK(c99 == 0);
  CHECK(cxx17 == 0);
  CHECK(built == 0);
  CHECK(example == 0);
  CHECK(ran == 0);
  CHECK(kiln::test::read_file(log).find("consumer: ok") != std::string::npos);
}

TEST_CASE("c api: libkiln.so exports the C functions beside the C++ API") {
  kiln::test::TempDir tmp;
  const std::string out = tmp / "nm";
  const std::string lib = std::string(KILN_BINARY_DIR) + "/lib/libkiln.so";
  REQUIRE(std::system(("nm -D --defined-only " + lib + " >" + out + " 2>&1").c_str()) == 0);
  const std::string nm = kiln::test::read_file(out);
  for (const char* fn :
       {"kiln_version", "kiln_last_error", "kiln_last_error_class", "kiln_status_name",
        "kiln_gpu_available", "kiln_engine_create", "kiln_engine_create_offline",
        "kiln_engine_destroy", "kiln_engine_arch", "kiln_engine_set_stream",
        "kiln_engine_use_own_stream", "kiln_engine_synchronize", "kiln_engine_cache_stats",
        "kiln_graph_create", "kiln_graph_from_json", "kiln_graph_destroy", "kiln_graph_input",
        "kiln_graph_add", "kiln_graph_output", "kiln_graph_to_json", "kiln_plan_create",
        "kiln_plan_destroy", "kiln_plan_compile", "kiln_plan_run", "kiln_plan_output",
        "kiln_plan_replay", "kiln_precompile", "kiln_tune", "kiln_template_from_json",
        "kiln_template_destroy", "kiln_template_launch", "kiln_template_precompile",
        "kiln_graph_define_template", "kiln_buffer_create", "kiln_buffer_destroy",
        "kiln_buffer_data", "kiln_buffer_write", "kiln_buffer_read", "kiln_tensor_from_dlpack"}) {
    CAPTURE(fn);
    CHECK(nm.find(std::string(" T ") + fn + "\n") != std::string::npos);
  }
  CHECK(nm.find("_ZN4kiln6EngineC1ENS_13EngineOptionsE") != std::string::npos);  // C++ stays
}
