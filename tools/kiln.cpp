// The kiln command-line tool.
#include <iostream>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>

#include "engine/logging.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"

int main(int argc, char** argv) {
  kiln::configure_cli_logging();
  CLI::App app{"kiln: a JIT kernel engine for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KILN_VERSION);
  app.fallthrough();  // global options after a subcommand too: `kiln cache ls --cache-dir D`
  kiln::tools::Globals globals;
  app.add_option("--cache-dir", globals.cache_dir,
                 "Cache directory (default: $KILN_CACHE_DIR, else ~/.cache/kiln)");
  kiln::tools::Command run;
  kiln::tools::add_info(app, run, globals);
  kiln::tools::add_cache(app, run, globals);
  kiln::tools::add_precompile(app, run, globals);
  kiln::tools::add_graph_commands(app, run, globals);
  kiln::tools::add_tune(app, run, globals);
  kiln::tools::add_bench(app, run, globals);
  if (argc > 1 && argv[1][0] != '-') {
    const auto known =
        app.get_subcommands([&](const CLI::App* s) { return s->check_name(argv[1]); });
    if (known.empty()) {
      std::cerr
          << "kiln: unknown command '" << kiln::printable_name(argv[1])
          << "'; the commands: info, cache, precompile, plan, run, bench, tune (kiln --help)\n";
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "kiln: " << e.what() << " (see kiln --help)\n";
    return 1;
  }
  // Every failure ends here as one line (details at KILN_LOG_LEVEL=debug) and exit code 1, but
  // a failed compile, which shows the head of NVRTC's log too; an exception that is not a
  // kiln::Error is a bug of this tool, and says so.
  try {
    return run ? run() : 0;
  } catch (const kiln::CompileError& e) {  // the first lines of its log, and where the rest is
    std::cerr << kiln::tools::compile_report(e, kiln::logs_debug());
  } catch (const kiln::Error& e) {
    std::cerr << kiln::tools::error_report(e.what(), kiln::logs_debug());
  } catch (const std::bad_alloc&) {
    std::cerr << "kiln: out of host memory\n";
  } catch (const std::exception& e) {
    std::cerr << kiln::tools::error_report(
        std::string("internal error (please report it): ") + e.what(), kiln::logs_debug());
  }
  return 1;
}
