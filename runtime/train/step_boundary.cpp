// StepBoundary: each rank's word is its signal number plus 256 when its output failed.
#include "runtime/train/step_boundary.h"

namespace zt {

StopDecision StepBoundary::agree(int local_signal, bool local_output_failed) {
  const int64_t mine = int64_t(local_signal & 0xff) | (local_output_failed ? 0x100 : 0);
  const std::vector<int64_t> all = x_.all_gather_words({mine});
  StopDecision d;
  for (int r = 0; r < int(all.size()); ++r) {
    const int sig = int(all[size_t(r)] & 0xff);
    if (sig) {
      d.signalled.push_back(r);
      if (!d.signal) d.signal = sig;
    }
    if (all[size_t(r)] & 0x100) d.output_failed.push_back(r);
  }
  return d;
}

bool save_before_stop(ckpt::CheckpointManager& ckpt, int64_t step, std::FILE* say) {
  if (!ckpt.saving()) return false;
  try {
    ckpt.at_end(step);
  } catch (const UserError& e) {
    if (say) std::fprintf(say, "%s", e.diagnostics().format().c_str());
    return false;
  }
  return !ckpt.saves().empty() && ckpt.saves().back().ok && ckpt.saves().back().step == step;
}

}  // namespace zt
