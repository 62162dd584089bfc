// Lamb over the shard: the trust ratio is per tensor, and a tensor may be split across ranks'
// shards, so phase 1 sums ||w||² and ||update||² per tensor piece, every rank's per-tensor sums are
// exchanged and added in rank order (stage 0 computes every rank's pieces itself, in the same
// order), and phase 2 applies each tensor's ratio. The result is the same bits for every stage.
#include "optim/lamb.h"
#include "runtime/zero/shard_optimizer.h"

namespace zt {

namespace {

struct RankPieces {
  int64_t base = 0;  // where rank q's shard of the unit starts in the state arrays
  std::vector<LambPiece> pieces;
};

// Rank q's pieces of unit u, with tensor ids numbered across the whole model.
RankPieces pieces_of(const ShardMap& m, int u, int64_t first_tensor, bool full_state) {
  RankPieces r;
  const auto& sh = m.shard(u);
  r.base = full_state ? sh.rank_begin : 0;
  for (const auto& p : sh.pieces) r.pieces.push_back({size_t(p.shard_offset), size_t(p.size), first_tensor + p.tensor});
  return r;
}

}  // namespace

void ShardOptimizer::lamb_step(const std::vector<float*>& g, const LambHyper& h) {
  const Partition& part = z_.part;
  const int U = part.units(), W = part.world_size();
  int64_t tensors = 0;
  std::vector<int64_t> first(size_t(U), 0);
  for (int u = 0; u < U; ++u) {
    first[size_t(u)] = tensors;
    tensors += int64_t(part.map().unit(u).tensors.size());
  }
  const bool full = part.all_reduces_grads();  // stage 0: this process holds every rank's state
  std::vector<const ShardMap*> views;
  for (int q : part.norm_ranks()) views.push_back(&part.map_of(q));

  // Phase 1, and each rank's per-tensor sums (w², u²) in piece order.
  std::vector<std::vector<double>> per_rank;
  for (const ShardMap* m : views) {
    std::vector<double> sums(size_t(2 * tensors), 0.0);
    for (int u = 0; u < U; ++u) {
      const RankPieces rp = pieces_of(*m, u, first[size_t(u)], full);
      std::vector<LambPartial> partials(rp.pieces.size());
      const size_t n = size_t(part.shard(u).shard);
      lamb_phase1({master_[size_t(u)] + rp.base, n}, {g[size_t(u)] + rp.base, n}, {m_[size_t(u)] + rp.base, n},
                  {v_[size_t(u)] + rp.base, n}, rp.pieces, h, partials);
      for (size_t i = 0; i < rp.pieces.size(); ++i) {
        sums[size_t(2 * rp.pieces[i].tensor)] += partials[i].w_sq;
        sums[size_t(2 * rp.pieces[i].tensor + 1)] += partials[i].u_sq;
      }
    }
    per_rank.push_back(std::move(sums));
  }
  if (!full) {
    const auto all = allgather_doubles(z_, per_rank[0]);
    per_rank.assign(size_t(W), {});
    for (int q = 0; q < W; ++q)
      per_rank[size_t(q)].assign(all.begin() + q * 2 * tensors, all.begin() + (q + 1) * 2 * tensors);
  }
  std::vector<float> ratio(size_t(tensors), 1.0f);
  for (int64_t t = 0; t < tensors; ++t) {
    double w2 = 0, u2 = 0;
    for (const auto& r : per_rank) {
      w2 += r[size_t(2 * t)];
      u2 += r[size_t(2 * t + 1)];
    }
    ratio[size_t(t)] = lamb_trust_ratio(w2, u2, h);
  }

  // Phase 2.
  for (const ShardMap* m : views) {
    for (int u = 0; u < U; ++u) {
      const RankPieces rp = pieces_of(*m, u, first[size_t(u)], full);
      std::vector<float> piece_ratio;
      for (const auto& p : rp.pieces) piece_ratio.push_back(ratio[size_t(p.tensor)]);
      const size_t n = size_t(part.shard(u).shard);
      lamb_phase2({master_[size_t(u)] + rp.base, n}, {m_[size_t(u)] + rp.base, n}, {v_[size_t(u)] + rp.base, n},
                  rp.pieces, h, piece_ratio);
    }
  }
}

}  // namespace zt
