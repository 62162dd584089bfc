// CPU offload transfers: staged units' gradients leave backend memory and their new working params
// come back through a ring of pinned chunks, each transfer overlapping the host's work on another
// chunk. NVMe offload of the optimizer state: one record per sub-group in a direct-I/O swap file, written
// at start from the initial values, and walked by a pipeline (read ahead, step, write behind) each
// optimizer step. Summaries read the master weights back the same way.
#include <cstring>

#include "runtime/engine/engine_state.h"
#include "offload/cpu_adam.h"
#include "runtime/engine/precision_emulation.h"
#include "runtime/model/init.h"

namespace zt {

void Engine::State::make_pinned() {
  if (pinned) return;
  offload::PinnedAllocatorOptions po;
  po.pin_memory = opt.offload.pin_memory;
  pinned = std::make_unique<offload::PinnedAllocator>(po);
}

void Engine::State::setup_staging() {
  make_pinned();
  int64_t largest = 1;
  for (int u = 0; u < U; ++u)
    if (staged[u] || grad_host[u]) largest = std::max(largest, state_len(u));
  const int64_t chunk = std::min(opt.offload.chunk_elems, largest);
  ring = std::make_unique<offload::StagingRing>(backend, *pinned, std::max(2, opt.offload.buffer_count),
                                                size_t(chunk) * es);
  ledger.record_host(MemCategory::CommBuffers, ring->bytes_allocated());
  publish_ticket.assign(size_t(U), 0);
}

// Gradient base of unit u's state range in backend memory (stage 1 keeps full grads).
static int64_t grad_offset(int stage, int64_t rank_offset) { return stage == 1 ? rank_offset : 0; }

std::vector<float*> Engine::State::collect_grads() {
  std::vector<float*> g(static_cast<size_t>(U), nullptr);
  struct Chunk {
    int u;
    int64_t begin, n;
  };
  std::vector<Chunk> chunks;
  const int64_t chunk = ring ? int64_t(ring->slot_bytes() / es) : 0;
  for (int u = 0; u < U; ++u) {
    if (grad_host[u] && chunk < 1) throw std::logic_error("collect_grads: host gradient copies need the staging ring");
    void* base = at(grads[u], grad_offset(opt.stage, rank_offset(u)));
    // Emulated 16-bit communication: the reduced sum is stored in the communication type (stages
    // 2–3 round it as they accumulate the reduce-scatter's result).
    if (host_fp32 && opt.stage < 2) emulate(base, state_len(u), comm_p());
    if (!grad_host[u]) {
      g[u] = static_cast<float*>(base);
      continue;
    }
    g[u] = grad_host[u];
    for (int64_t b = 0; b < state_len(u); b += chunk) chunks.push_back({u, b, std::min(chunk, state_len(u) - b)});
  }
  if (chunks.empty()) return g;
  const bool bf16 = backend.act_dtype() == DType::BF16;
  ring->stream_out(
      chunks.size(),
      [&](size_t k) {
        const Chunk& c = chunks[k];
        return std::pair<const void*, size_t>(at(grads[c.u], grad_offset(opt.stage, rank_offset(c.u)) + c.begin),
                                              size_t(c.n) * es);
      },
      [&](size_t k, const void* data, size_t) {
        const Chunk& c = chunks[k];
        float* dst = grad_host[c.u] + c.begin;
        if (!bf16) {
          std::memcpy(dst, data, size_t(c.n) * 4);
          return;
        }
        const uint16_t* h = static_cast<const uint16_t*>(data);
        for (int64_t i = 0; i < c.n; ++i) dst[i] = bf16_bits_to_f32(h[i]);
      });
  return g;
}

void* Engine::State::working_dst(int u, int64_t begin) {
  return at(work[u], (opt.stage == 1 || opt.stage == 2 ? rank_offset(u) : 0) + begin);
}

void Engine::State::publish_working(int u, int64_t begin, int64_t n, const float* values) {
  const int64_t chunk = int64_t(ring->slot_bytes() / es);
  for (int64_t off = 0; off < n; off += chunk) {
    const int64_t len = std::min(chunk, n - off);
    publish_ticket[u] = ring->publish(working_dst(u, begin + off), size_t(len) * es,
                                      [&](void* slot) { to_act(slot, values + off, len); });
  }
}

void Engine::State::adam_publish(int u, int64_t begin, int64_t n, float* p, const float* g, float* m, float* v) {
  const int64_t chunk = int64_t(ring->slot_bytes() / es);
  for (int64_t off = 0; off < n; off += chunk) {
    const int64_t len = std::min(chunk, n - off);
    publish_ticket[u] = ring->publish(working_dst(u, begin + off), size_t(len) * es, [&](void* slot) {
      offload::cpu_adam_step(p + off, g + off, m + off, v + off, size_t(len), adam_h,
                             offload::AdamOutput{slot, backend.act_dtype()});
    });
  }
}

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
  make_pinned();
  pipeline = std::make_unique<offload::SwapPipeline>(*swapper, std::max(1, off.buffer_count), *pinned);
  ledger.record_host(MemCategory::Optimizer, uint64_t(pipeline->buffer_count()) *
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
  const auto& off = opt.offload;
  for (int u = 0; u < U; ++u)
    if (shard_len(u) > off.param_buffer_size)
      throw std::invalid_argument("offload_param.buffer_size = " + std::to_string(off.param_buffer_size) +
                                  " elements cannot hold unit " + unit_name(u) + "'s shard of " +
                                  std::to_string(shard_len(u)) + " elements on rank " + std::to_string(rank) +
                                  ": raise zero_optimization.offload_param.buffer_size to at least " +
                                  std::to_string(shard_len(u)));
  if (off.param_buffer_count < 1)
    throw std::invalid_argument("offload_param.buffer_count = " + std::to_string(off.param_buffer_count) +
                                ": must be at least 1");
  param_swapper = std::make_unique<offload::NvmeSwapper>(sc, bytes);
  make_pinned();
  // Buffers as large as the largest record (never more than buffer_size elements, checked above).
  for (int i = 0; i < off.param_buffer_count; ++i)
    param_buffers.push_back(pinned->allocate(param_swapper->max_padded_bytes()));
  ledger.record_host(MemCategory::CommBuffers, uint64_t(off.param_buffer_count) * param_buffers[0].capacity());
  for (int u = 0; u < U; ++u) {
    param_image.assign(size_t(shard_len(u)) * es, 0);
    to_act(param_image.data(), initial_shards[u].data(), int64_t(initial_shards[u].size()));
    param_image_unit = u;
    write_param_shard(u);
  }
}

void Engine::State::to_act(void* dst, const float* src, int64_t n) const {
  if (backend.act_dtype() == DType::F32) {
    std::memcpy(dst, src, size_t(n) * 4);
    round_to_precision(static_cast<float*>(dst), size_t(n), opt.precision);  // emulated 16-bit storage
  } else {
    offload::convert_f32(dst, backend.act_dtype(), src, size_t(n));
  }
}

// Reads and writes are synchronous for now (one buffer in use at a time): the buffers are reused
// rather than allocated per transfer, which pinned allocation makes costly.
void* Engine::State::param_buffer() {
  void* b = param_buffers[next_param_buffer].data();
  next_param_buffer = (next_param_buffer + 1) % param_buffers.size();
  return b;
}

void* Engine::State::read_param_shard(int u) {
  void* buf = param_buffer();
  param_swapper->wait(param_swapper->read(size_t(u), buf));
  return buf;
}

// The shard's source is host memory (the pinned shard, or its record read back from NVMe); the
// all-gather needs it in backend memory. The copy is waited here: the gather is issued right after.
void* Engine::State::bring_in_shard(int u) {
  const int64_t n = shard_len(u);
  auto& free_list = shard_pool[n];
  void* dst;
  if (free_list.empty()) {
    dst = ledger.alloc(MemCategory::CommBuffers, size_t(n) * es);
  } else {
    dst = free_list.back();
    free_list.pop_back();
  }
  const void* src = param_nvme ? read_param_shard(u) : work[u];
  backend.wait_copy(backend.copy_to_device_async(dst, src, size_t(n) * es));
  return dst;
}

void Engine::State::drop_shard_in(int u) {
  Gathered& g = gathered[u];
  if (!g.shard_in) return;
  shard_pool[shard_len(u)].push_back(g.shard_in);
  g.shard_in = nullptr;
}

// Writes unit u's rebuilt shard (param_image) to its record. Synchronous: the next gather of the
// unit reads it back, and the image is reused for the next unit.
void Engine::State::write_param_shard(int u) {
  if (param_image_unit != u) return;  // no element of u lives on this rank: its record stays zero
  void* buf = param_buffer();
  std::memset(buf, 0, param_swapper->padded_bytes(size_t(u)));
  std::memcpy(buf, param_image.data(), size_t(shard_len(u)) * es);
  param_swapper->wait(param_swapper->write(size_t(u), buf));
  param_image_unit = -1;
}

}  // namespace zt
