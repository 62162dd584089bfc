// allgather_doubles (the small exact exchange for the loss and the norm partials), the segments of a
// bucket, and the destructors' last wait.
#include "runtime/zero/zero_context.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace zt {

std::vector<double> allgather_doubles(ZeroContext& z, const std::vector<double>& local) {
  return allgather_doubles(z, z.comm, local);
}

std::vector<double> allgather_doubles(ZeroContext& z, Communicator& over, const std::vector<double>& local) {
  const int W = over.world_size(), rank = over.rank();
  if (W == 1) return local;
  const size_t n = local.size();
  std::vector<double> all(n * size_t(W));
  void* buf = z.ledger.alloc(MemCategory::CommBuffers, all.size() * 8);
  z.backend.copy_to_device(static_cast<char*>(buf) + size_t(rank) * n * 8, local.data(), n * 8);
  over.all_gather(static_cast<char*>(buf) + size_t(rank) * n * 8, buf, all.size(), DType::I64);
  z.backend.copy_to_host(all.data(), buf, all.size() * 8);
  z.ledger.free(buf);
  return all;
}

std::vector<Segment> bucket_segments(const ZeroContext& z, const Bucket& b, bool by_owner,
                                     const std::function<void*(const BucketPiece&)>& buffer) {
  std::vector<Segment> segs;
  for (const BucketPiece& piece : b.pieces) {
    void* base = buffer(piece);
    if (!by_owner) {
      segs.push_back({z.element_at(base, piece.begin), size_t(piece.n), 0});
      continue;
    }
    for (const OwnedPart& part : split_by_owner(piece, z.part.shard(piece.unit).shard))
      segs.push_back({z.element_at(base, part.begin), size_t(part.n), part.owner});
  }
  return segs;
}

void wait_or_abort(const ZeroContext& z, const char* what, const std::function<void()>& wait_all) {
  try {
    wait_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zerotrain: rank %d: %s failed while shutting down: %s\n", z.comm.rank(), what, e.what());
    std::abort();  // the other ranks cannot be left waiting on a half-finished collective
  }
}

}  // namespace zt
