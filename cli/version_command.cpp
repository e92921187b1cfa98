#include <cblas.h>
#include <fmt/core.h>

#include "cli/commands.h"
#include "kernels/cpu_isa.h"
#include "kernels/matmul_bf16.h"

namespace trainscope::cli {

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "version",
      "Print the version, git revision, BLAS build and the CPU's vector ISA (with its level, "
      "capped by TRAINSCOPE_MAX_CPU_ISA when set)");
  cmd->callback([] {
    fmt::print("trainscope {} (git {})\n", TRAINSCOPE_VERSION, TRAINSCOPE_GIT_REVISION);
    fmt::print("openblas: {}\n", openblas_get_config());
    const kernels::CpuIsa isa = kernels::detect_cpu_isa();
    fmt::print("cpu: {} (level {})\n", isa.summary(), kernels::isa_level_name(isa.level()));
    fmt::print("onednn: {}\n", kernels::onednn_description());
  });
}

}  // namespace trainscope::cli
