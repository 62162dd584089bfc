// zerotrain: the command-line entry point. Parses with CLI11, dispatches to the module that owns
// each subcommand, and turns user errors into the one report format and exit code 2.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "build_info.h"
#include "runtime/cli/commands.h"
#include "runtime/common/diagnostics.h"

int main(int argc, char** argv) {
  CLI::App app{"zerotrain " ZT_VERSION ": ZeRO-style data-parallel training with DeepSpeed-style configs"};
  app.set_version_flag("--version", std::string("zerotrain ") + ZT_VERSION + " (" + ZT_GIT_COMMIT + ")");
  int exit_code = 0;
  zt::register_train(app, exit_code);
  zt::register_check_command(app, exit_code);
  zt::register_env_command(app, exit_code);
  zt::register_prepare_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // CLI11 returns 0 for --help/--version; command-line mistakes are user errors (exit 2).
    return rc == 0 ? 0 : zt::kUserErrorExit;
  } catch (const zt::UserError& e) {
    std::fputs(e.diagnostics().format().c_str(), stderr);
    std::fprintf(stderr, "zerotrain: %zu error(s); nothing was started.\n", e.diagnostics().error_count());
    return zt::kUserErrorExit;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zerotrain: fatal: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
