#include <cblas.h>
#include <fmt/core.h>

#include "cli/commands.h"

namespace trainscope::cli {

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the version, git revision and BLAS build");
  cmd->callback([] {
    fmt::print("trainscope {} (git {})\n", TRAINSCOPE_VERSION, TRAINSCOPE_GIT_REVISION);
    fmt::print("openblas: {}\n", openblas_get_config());
  });
}

}  // namespace trainscope::cli
