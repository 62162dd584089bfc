// ConsolidatedWeights: the manifest and every rank file opened and checked once; a unit is the
// concatenation of the owned ranges that cover it (reshard.h's plan_reads).
#include "runtime/checkpoint/consolidated.h"

#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/reshard.h"

namespace zt::ckpt {

ConsolidatedWeights::ConsolidatedWeights(const std::string& checkpoint, const std::string& tag, bool verify)
    : verify_(verify) {
  Diagnostics d;
  tag_dir_ = resolve_checkpoint(checkpoint, tag, d);
  if (!tag_dir_.empty()) read_manifest(tag_dir_, manifest_, d);
  if (d.has_errors()) throw UserError(d);
  files_.resize(size_t(manifest_.world_size));
  for (int r = 0; r < manifest_.world_size; ++r) files_[size_t(r)] = ShardFileReader::open(tag_dir_, manifest_, r, d);
  if (d.has_errors()) throw UserError(d);
}

void ConsolidatedWeights::read_unit(int u, float* out) const {
  const UnitLayout& layout = manifest_.units.at(size_t(u));
  for (const auto& piece : plan_reads(manifest_.ranks, ElementRange{u, 0, layout.numel}))
    files_[size_t(piece.rank)]->read("master", piece.source, piece.src_offset, piece.n, out + piece.dst_offset, verify_);
}

std::vector<float> ConsolidatedWeights::unit(int u) const {
  std::vector<float> values(size_t(manifest_.units.at(size_t(u)).numel));
  read_unit(u, values.data());
  return values;
}

uint64_t ConsolidatedWeights::bytes_read() const {
  uint64_t total = 0;
  for (const auto& f : files_) total += f->bytes_read();
  return total;
}

}  // namespace zt::ckpt
