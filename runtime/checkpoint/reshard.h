// Reshard planning: for a range a rank needs, which old ranks' owned ranges hold its elements and
// where — so that a load reads exactly those byte ranges from those files, at any world size and stage.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/sharded_state.h"

namespace zt::ckpt {

// Elements [src_offset, src_offset + n) of old rank `rank`'s owned range `source` land at
// [dst_offset, dst_offset + n) of the needed range.
struct ReadPiece {
  int rank = 0;
  ElementRange source;
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  int64_t n = 0;
};

// The pieces covering `needed`, in destination order. Throws std::logic_error if the old ranks'
// ranges leave part of it uncovered (a manifest that parse_manifest accepted never does).
std::vector<ReadPiece> plan_reads(const std::vector<RankFileRecord>& old_ranks, const ElementRange& needed);

// Old ranks whose files hold any element of `needed` (sorted).
std::vector<int> ranks_touched(const std::vector<RankFileRecord>& old_ranks, const std::vector<ElementRange>& needed);

}  // namespace zt::ckpt
