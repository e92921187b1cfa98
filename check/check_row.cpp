#include "check/check_row.h"

namespace trainscope::check {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kSame: return "ok";
    case Verdict::kImproved: return "improved";
    case Verdict::kRegression: return "REGRESSION";
    case Verdict::kInfo: return "info";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

}  // namespace trainscope::check
