// import_units: agree, then read the needed units whole and write their needed ranges.
#include "runtime/checkpoint/unit_import.h"

#include <vector>

namespace zt::ckpt {

void import_units(ShardedState& state, RankExchange& ex, const std::string& path, bool opened,
                  const Diagnostics& problems, const std::function<void(int unit, float* values)>& read_unit) {
  if (!ex.all_true(opened)) {
    if (!opened) throw UserError(problems);
    throw UserError("--init-from", path, "stopped: another rank cannot read the weights", "read that rank's errors");
  }
  const auto needed = state.needed();
  std::vector<float> unit;
  for (int u = 0; u < int(state.units().size()); ++u) {
    bool any = false;
    for (const auto& r : needed) any = any || (r.unit == u && r.n > 0);
    if (!any) continue;
    unit.resize(size_t(state.units()[size_t(u)].numel));
    read_unit(u, unit.data());
    for (const auto& r : needed)
      if (r.unit == u && r.n > 0) state.write("master", r, unit.data() + r.begin);
  }
  state.commit();
}

}  // namespace zt::ckpt
