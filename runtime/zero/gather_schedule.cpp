// GatherSchedule: the prefetch and release decisions of stage 3.
#include "runtime/zero/gather_schedule.h"

#include <stdexcept>

namespace zt {

GatherSchedule::GatherSchedule(std::vector<int64_t> padded, std::vector<int64_t> numel, const GatherOptions& o,
                               bool tied_head)
    : padded_(std::move(padded)), numel_(std::move(numel)), o_(o), tied_head_(tied_head) {
  if (padded_.size() != numel_.size()) throw std::invalid_argument("GatherSchedule: one padded size and one numel per unit");
}

std::vector<int> GatherSchedule::prefetch_after(int pos, int64_t live, std::vector<bool> gathered) const {
  std::vector<int> out;
  if (!o_.overlap) return out;
  int64_t budget = o_.prefetch_bucket_size;
  for (int q = pos + 1; q < 2 * units(); ++q) {
    const int unit = unit_at(q);
    if (gathered[size_t(unit)]) continue;  // a unit the walk meets twice is fetched once
    const int64_t size = padded_[size_t(unit)];
    if (size > budget || live + size > o_.max_live_parameters) break;
    out.push_back(unit);
    gathered[size_t(unit)] = true;
    live += size;
    budget -= size;
  }
  return out;
}

bool GatherSchedule::uses_unit(int pos, int u) const {
  const int v = unit_at(pos);
  return v == u || (tied_head_ && u == 0 && v == units() - 1);
}

bool GatherSchedule::keeps_after(int u, int pos, int64_t live) const {
  if (o_.persistent(numel_[size_t(u)])) return true;  // kept until the update makes it stale
  int next = -1;
  for (int q = pos + 1; q < 2 * units() && next < 0; ++q)
    if (uses_unit(q, u)) next = q;
  if (next < 0) return false;
  int64_t distance = 0;  // parameters computed on before the next use
  for (int q = pos + 1; q < next; ++q) distance += numel_[size_t(unit_at(q))];
  return distance < o_.max_reuse_distance && live <= o_.max_live_parameters;
}

}  // namespace zt
