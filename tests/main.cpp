#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // The fault tests provoke warnings on purpose; show them only when asked (KILN_LOG_LEVEL).
  ::setenv("KILN_LOG_LEVEL", "error", 0);
  spdlog::set_level(spdlog::level::from_str(std::getenv("KILN_LOG_LEVEL")));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
