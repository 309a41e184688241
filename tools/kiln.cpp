// The kiln command-line tool.
#include <iostream>

#include <kiln/error.hpp>

#include "engine/logging.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"

int main(int argc, char** argv) {
  kiln::configure_logging();
  CLI::App app{"kiln: a JIT kernel engine for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KILN_VERSION);
  kiln::tools::Command run;
  kiln::tools::add_info(app, run);
  kiln::tools::add_cache(app, run);
  kiln::tools::add_precompile(app, run);
  kiln::tools::add_graph_commands(app, run);
  kiln::tools::add_tune(app, run);
  kiln::tools::add_bench(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run ? run() : 0;
  } catch (const kiln::Error& e) {
    std::cerr << kiln::tools::error_report(e.what(), kiln::logs_debug());
    return 1;
  }
}
