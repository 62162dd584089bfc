// NVMe offload of the optimizer state: one record per sub-group in a direct-I/O swap file, written
// at start from the initial values, and walked by a pipeline (read ahead, step, write behind) each
// optimizer step. Summaries read the master weights back the same way.
#include <cstring>

#include "runtime/engine/engine_state.h"
#include "runtime/model/init.h"

namespace zt {

size_t Engine::State::record_floats(int64_t n) const {
  const bool has_v = opt.optimizer.type != OptimizerType::SGD;
  const bool has_m = has_v || opt.optimizer.momentum != 0.0;
  return size_t(n) * ((master_aliases_work ? 0 : 1) + (has_m ? 1 : 0) + (has_v ? 1 : 0));
}

void Engine::State::setup_nvme(const std::vector<std::vector<float>>& initial_master) {
  const auto& off = opt.offload;
  std::vector<size_t> bytes;
  for (const auto& sg : subgroups) bytes.push_back(std::max<size_t>(4, record_floats(sg.n) * 4));
  offload::SwapperConfig sc;
  sc.nvme_path = off.nvme_path;
  sc.rank = rank;
  sc.aio = off.aio;
  swapper = std::make_unique<offload::NvmeSwapper>(sc, bytes);
  offload::PinnedAllocatorOptions po;
  po.pin_memory = off.pin_memory;
  pinned = std::make_unique<offload::PinnedAllocator>(po);
  pipeline = std::make_unique<offload::SwapPipeline>(*swapper, std::max(1, off.buffer_count), *pinned);
  ledger.record_external(MemCategory::Optimizer, uint64_t(pipeline->buffer_count()) *
                                                    std::max<uint64_t>(swapper->max_padded_bytes(), 4096));
  pipeline->initialize([&](size_t k, void* data, size_t n_bytes) {
    std::memset(data, 0, n_bytes);  // moments start at zero
    const SubGroup& sg = subgroups[k];
    if (!master_aliases_work)
      std::memcpy(data, initial_master[sg.unit].data() + sg.begin, size_t(sg.n) * 4);
  });
}

std::vector<std::vector<float>> Engine::State::read_masters() {
  std::vector<std::vector<float>> out(static_cast<size_t>(U));
  for (int u = 0; u < U; ++u) out[u].assign(size_t(state_len(u)), 0.0f);
  pipeline->run([&](size_t k, void* data, size_t) {
    const SubGroup& sg = subgroups[k];
    std::memcpy(out[sg.unit].data() + sg.begin, data, size_t(sg.n) * 4);
  });
  return out;
}

void Engine::State::setup_param_nvme(const std::vector<std::vector<float>>& initial_shards) {
  std::vector<size_t> bytes;
  for (int u = 0; u < U; ++u) bytes.push_back(size_t(shard_len(u)) * es);
  offload::SwapperConfig sc;
  sc.nvme_path = opt.offload.param_nvme_path;
  sc.rank = rank;
  sc.aio = opt.offload.aio;
  param_swapper = std::make_unique<offload::NvmeSwapper>(sc, bytes);
  if (!pinned) {
    offload::PinnedAllocatorOptions po;
    po.pin_memory = opt.offload.pin_memory;
    pinned = std::make_unique<offload::PinnedAllocator>(po);
  }
  for (int u = 0; u < U; ++u) {
    param_image = initial_shards[u];
    param_image_unit = u;
    write_param_shard(u);
  }
}

offload::PinnedBuffer Engine::State::read_param_shard(int u) {
  offload::PinnedBuffer buf = pinned->allocate(param_swapper->padded_bytes(size_t(u)));
  param_swapper->wait(param_swapper->read(size_t(u), buf.data()));
  return buf;
}

// Writes unit u's rebuilt shard (param_image) to its record. Synchronous: the next gather of the
// unit reads it back, and the image is reused for the next unit.
void Engine::State::write_param_shard(int u) {
  if (param_image_unit != u) return;  // no element of u lives on this rank: its record stays zero
  offload::PinnedBuffer buf = pinned->allocate(param_swapper->padded_bytes(size_t(u)));
  std::memset(buf.data(), 0, param_swapper->padded_bytes(size_t(u)));
  std::memcpy(buf.data(), param_image.data(), size_t(shard_len(u)) * es);
  param_swapper->wait(param_swapper->write(size_t(u), buf.data()));
  param_image_unit = -1;
}

}  // namespace zt
