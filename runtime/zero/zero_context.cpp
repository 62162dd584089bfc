// allgather_doubles: the small exact exchange the step uses for the loss and the norm partials.
#include "runtime/zero/zero_context.h"

namespace zt {

std::vector<double> allgather_doubles(ZeroContext& z, const std::vector<double>& local) {
  const int W = z.comm.world_size(), rank = z.comm.rank();
  if (W == 1) return local;
  const size_t n = local.size();
  std::vector<double> all(n * size_t(W));
  void* buf = z.ledger.alloc(MemCategory::CommBuffers, all.size() * 8);
  z.backend.copy_to_device(static_cast<char*>(buf) + size_t(rank) * n * 8, local.data(), n * 8);
  z.comm.all_gather(static_cast<char*>(buf) + size_t(rank) * n * 8, buf, all.size(), DType::I64);
  z.backend.copy_to_host(all.data(), buf, all.size() * 8);
  z.ledger.free(buf);
  return all;
}

}  // namespace zt
