#include "report/case_options.h"

namespace trainscope::report {

CaseOptions case_options(const analysis::CaseData& c) {
  const nlohmann::json& config = c.run_case.config;
  CaseOptions out;
  out.trains = c.run_case.mode != "allreduce";  // the runner's mode of sweeps
  out.train = options::options_from_config(config);
  out.placement = options::placement_from_config(config);
  if (config.is_object()) {
    if (auto it = config.find("replay_from"); it != config.end() && it->is_string()) {
      out.replay_from = it->get<std::string>();
    }
  }
  return out;
}

std::optional<options::TrainOptions> trainer_options(const analysis::CaseData& c) {
  const analysis::RunData* run = c.first_usable();
  if (!run || !run->summary->options.is_object()) return std::nullopt;
  return options::options_from_record(run->summary->options);
}

}  // namespace trainscope::report
