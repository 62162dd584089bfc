// HierarchicalGather: the two levels' segment lists, and the handle that chains them.
#include "runtime/zero/hierarchical_gather.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace zt {

namespace {

// Waits for level one, then issues level two and waits for it.
class ChainedHandle final : public CommHandle {
 public:
  ChainedHandle(CommHandlePtr first, Communicator* second, std::vector<Segment> segments, DType t)
      : first_(std::move(first)), second_comm_(second), segments_(std::move(segments)), t_(t) {}
  void wait() override {
    if (first_) {
      first_->wait();
      first_.reset();
      second_ = second_comm_->all_gather_segments_async(segments_, t_);
    }
    second_->wait();
  }
  bool done() override { return !first_ && second_->done(); }

 private:
  CommHandlePtr first_, second_;
  Communicator* second_comm_;
  std::vector<Segment> segments_;
  DType t_;
};

}  // namespace

HierarchicalGather::HierarchicalGather(Communicator* cross, Communicator* node) : cross_(cross), node_(node) {
  if ((cross == nullptr) != (node == nullptr))
    throw std::invalid_argument("HierarchicalGather: needs both levels' communicators or neither");
}

CommHandlePtr HierarchicalGather::gather_async(void* full, size_t padded, DType t, size_t element_bytes) const {
  const size_t m = size_t(cross_->world_size()), n = size_t(node_->world_size()), s = m * n;
  if (padded % s != 0)
    throw std::invalid_argument("HierarchicalGather: a unit of " + std::to_string(padded) +
                                " elements does not split into " + std::to_string(s) + " shards");
  const size_t shard = padded / s, l = size_t(node_->rank());
  char* base = static_cast<char*>(full);
  auto at = [&](size_t i) { return base + i * shard * element_bytes; };
  std::vector<Segment> across, inside;
  for (size_t j = 0; j < m; ++j) across.push_back({at(j * n + l), shard, int(j)});
  for (size_t j = 0; j < m; ++j)  // by shard-group rank: node j's local index k owns shard j·n + k
    for (size_t k = 0; k < n; ++k) inside.push_back({at(j * n + k), shard, int(k)});
  return std::make_shared<ChainedHandle>(cross_->all_gather_segments_async(across, t), node_, std::move(inside), t);
}

}  // namespace zt
