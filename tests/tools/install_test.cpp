// Packaging: the installed CMake package used as an outside project would (a C++14 project
// finds kiln and compiles its headers: the target asks for C++17 itself); and the suite's list
// of the cases it skipped.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tests/support.hpp"

TEST_CASE("cmake --install: a C++14 project finds kiln, includes its headers and links") {
  kiln::test::TempDir tmp;
  const std::string log = tmp / "log";
  auto sh = [&](const std::string& cmd) {
    return std::system((cmd + " >>" + log + " 2>&1").c_str());
  };
  REQUIRE(sh("cmake --install " + std::string(KILN_BINARY_DIR) + " --prefix " + (tmp / "prefix")) ==
          0);
  std::filesystem::create_directories(tmp / "app");
  kiln::test::write_file(tmp / "app/CMakeLists.txt", R"(cmake_minimum_required(VERSION 3.16)
project(consumer LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 14)
find_package(kiln CONFIG REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer kiln::kiln)
)");
  kiln::test::write_file(tmp / "app/main.cpp", R"(#include <kiln/kiln.hpp>
int main() {
  kiln::Graph g;
  g.output(kiln::silu(g.input("x", {8}, kiln::DType::f32)), "y");
  return kiln::Plan(g).kernels("sm_80").size() == 1 ? 0 : 1;
}
)");
  const int configured = sh("cmake -S " + (tmp / "app") + " -B " + (tmp / "app/build") +
                            " -G Ninja -DCMAKE_PREFIX_PATH=" + (tmp / "prefix"));
  const int built = configured == 0 ? sh("cmake --build " + (tmp / "app/build")) : -1;
  const int ran = built == 0 ? sh(tmp / "app/build/consumer") : -1;
  INFO(kiln::test::read_file(log));
  CHECK(configured == 0);
  CHECK(built == 0);
  CHECK(ran == 0);
}

TEST_CASE("the suite names the cases its skip decorator skipped, once, after the run") {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  FILE* p = ::popen((self + " -tc='gpu: kiln run reads*' 2>&1").c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  const std::string line = "[doctest]   gpu: kiln run reads .npy inputs and writes .npy outputs\n";
  if (kiln::test::has_gpu()) {
    CHECK(out.find(line) == std::string::npos);  // it ran
  } else {
    CHECK(out.find("[doctest] skipped by their decorator (") != std::string::npos);
    CHECK(out.find(line) != std::string::npos);
    CHECK(out.find(line) == out.rfind(line));  // once
  }
}
