// zerotrain: the command-line entry point. Parses with CLI11, dispatches to each sub-command (one
// file each beside it, runtime/cli/*_command.cpp), and turns user errors into the one report format
// and exit code 2.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <exception>
#include <new>
#include <stdexcept>

#include "base/check.h"
#include "base/simd.h"
#include "build_info.h"
#include "collectives/bootstrap.h"
#include "runtime/cli/subcommands.h"
#include "runtime/common/diagnostics.h"
#include "runtime/config/report.h"

namespace {

// "rank 3: " when launched by an MPI launcher with several ranks, so that a rank's own errors can be
// told apart; "" otherwise. (Read from the launcher's environment: MPI may not be up, or gone.)
std::string rank_prefix() {
  if (zt::Bootstrap::launcher_world_size() == 1) return "";
  return "rank " + std::to_string(zt::Bootstrap::launcher_rank()) + ": ";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zerotrain " ZT_VERSION ": ZeRO-style data-parallel training with DeepSpeed-style configs"};
  app.set_version_flag("--version", std::string("zerotrain ") + ZT_VERSION + " (" + ZT_GIT_COMMIT + ")");
  int exit_code = 0;
  zt::register_train(app, exit_code);
  zt::register_check_command(app, exit_code);
  zt::register_env_command(app, exit_code);
  zt::register_prepare_command(app, exit_code);
  zt::register_export_command(app, exit_code);
  zt::register_checkpoint_command(app, exit_code);
  zt::register_sample_command(app, exit_code);
  zt::register_eval_command(app, exit_code);
  zt::register_tune_command(app, exit_code);
  // ZT_SIMD is read by every command that computes or checksums (base/simd.h), first inside the
  // kernels' parallel loops, where a refusal could not be reported: a value this CPU cannot honour
  // is refused here, once for the job, before anything runs.
  try {
    zt::resolve_simd_level();
  } catch (const std::runtime_error& e) {
    if (zt::Bootstrap::launcher_rank() == 0) {
      const std::string value = std::getenv("ZT_SIMD") ? std::getenv("ZT_SIMD") : "";
      std::string reason = e.what();
      if (reason.rfind("ZT_SIMD=" + value + ": ", 0) == 0) reason.erase(0, value.size() + 10);
      zt::Diagnostics d;
      d.error("ZT_SIMD", value, reason,
              "unset ZT_SIMD, or set it to auto or to a level this CPU has: " + zt::supported_simd_levels());
      zt::write_all(stderr, zt::format_report(d, ""));
      std::fprintf(stderr, "zerotrain: 1 error(s); stopped before doing anything.\n");
    }
    return zt::Bootstrap::stop_before_start(zt::kUserErrorExit);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same command line: launcher rank 0 alone prints the mistake (or --help).
    const int rc = zt::Bootstrap::launcher_rank() == 0 ? app.exit(e) : e.get_exit_code();
    // CLI11 returns 0 for --help/--version; command-line mistakes are user errors (exit 2).
    return zt::Bootstrap::stop_before_start(rc == 0 ? 0 : zt::kUserErrorExit);
  } catch (const zt::ReportedError& e) {
    return zt::Bootstrap::stop_before_start(e.exit_code());  // the job printed it once already
  } catch (const zt::UserError& e) {
    const std::string who = rank_prefix();
    zt::write_all(stderr, zt::format_report(e.diagnostics(), who));
    // A subcommand (sample, export, ...) stopped before it did anything; the root command trains.
    const auto subcommands = app.get_subcommands();
    const std::string what = subcommands.empty() ? "zerotrain" : "zerotrain " + subcommands.front()->get_name();
    std::fprintf(stderr, "%s%s: %zu error(s); stopped before %s.\n", who.c_str(), what.c_str(),
                 e.diagnostics().error_count(), subcommands.empty() ? "training" : "doing anything");
    return zt::kUserErrorExit;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%szerotrain: out of memory: an allocation failed; lower the micro batch, use a higher ZeRO stage "
                 "or offload\n", rank_prefix().c_str());
    return zt::kOutOfMemoryExit;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%szerotrain: fatal: %s\n", rank_prefix().c_str(), e.what());
    return 1;
  }
  return exit_code;
}
