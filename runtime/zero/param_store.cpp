// ParamStore: working-parameter buffers in backend memory, pinned host memory or NVMe records.
#include "runtime/zero/param_store.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "offload/cpu_adam.h"

namespace zt {

ParamStore::ParamStore(ZeroContext& z, offload::PinnedAllocator& pinned, HostTransfer* transfer,
                       const ParamOffloadOptions& o)
    : z_(z), pinned_(pinned), transfer_(transfer), opt_(o), shard_pool_(z.ledger, z.backend, z.element_bytes()) {
  const Partition& p = z.part;
  const int U = p.units();
  const size_t es = z.element_bytes();
  std::vector<size_t> record_bytes;
  bool nvme = false;
  for (int u = 0; u < U; ++u) {
    const UnitPart& up = p.unit(u);
    const size_t bytes = size_t(up.param_len) * es;
    switch (up.param) {
      case ParamHome::Backend:
        work_.push_back(z.ledger.alloc(MemCategory::Params, bytes));
        break;
      case ParamHome::Host:
        host_shards_.push_back(pinned.allocate(bytes));
        z.ledger.record_host(MemCategory::Params, bytes);
        work_.push_back(host_shards_.back().data());
        break;
      case ParamHome::Nvme:
        work_.push_back(nullptr);
        nvme = true;
        break;
    }
    record_bytes.push_back(bytes);
  }
  shard_in_.assign(size_t(U), nullptr);
  if (!nvme) return;
  if (o.buffer_count < 1)
    throw std::invalid_argument("offload_param.buffer_count = " + std::to_string(o.buffer_count) + ": must be at least 1");
  offload::SwapperConfig sc;
  sc.nvme_path = o.nvme_path;
  sc.rank = p.rank();
  sc.aio = o.aio;
  swapper_ = std::make_unique<offload::NvmeSwapper>(sc, record_bytes);
  for (int i = 0; i < o.buffer_count; ++i) buffers_.push_back(pinned.allocate(swapper_->max_padded_bytes()));
  z.ledger.record_host(MemCategory::CommBuffers, uint64_t(o.buffer_count) * buffers_[0].capacity());
  initial_.resize(size_t(U));
}

void ParamStore::to_act(void* dst, const float* src, int64_t n) const {
  if (z_.working_type() == DType::F32) {
    if (dst != src) std::memcpy(dst, src, size_t(n) * 4);  // equal where the master is the working copy
    round_to_precision(static_cast<float*>(dst), size_t(n), z_.train_precision);  // emulated 16-bit storage
  } else {
    offload::convert_f32(dst, z_.working_type(), src, size_t(n));
  }
}

void ParamStore::initialize(int u, const float* values) {
  const UnitPart& up = z_.part.unit(u);
  const int64_t n = up.param_len;
  switch (up.param) {
    case ParamHome::Nvme:
      if (initial_.empty()) initial_.resize(size_t(z_.part.units()));  // set anew after finish_initialize
      initial_[size_t(u)].assign(size_t(n) * z_.element_bytes(), 0);
      to_act(initial_[size_t(u)].data(), values, n);
      return;
    case ParamHome::Host:
      to_act(work_[size_t(u)], values, n);
      return;
    case ParamHome::Backend:
      if (z_.part.config().backend_is_host) {
        to_act(work_[size_t(u)], values, n);
      } else {
        stage16_.resize(size_t(n));
        to_act(stage16_.data(), values, n);
        z_.backend.copy_to_device(work_[size_t(u)], stage16_.data(), size_t(n) * z_.element_bytes());
      }
      return;
  }
}

void ParamStore::finish_initialize() {
  if (!swapper_) return;
  for (int u = 0; u < z_.part.units(); ++u) {
    image_ = std::move(initial_[size_t(u)]);
    image_unit_ = u;
    finish_update(u);
  }
  initial_.clear();
  std::vector<uint16_t>().swap(stage16_);
}

// Reads and writes of NVMe records are synchronous (one buffer in use at a time): the buffers are
// reused rather than allocated per transfer, which pinned allocation makes costly.
void* ParamStore::next_buffer() {
  void* b = buffers_[next_buffer_].data();
  next_buffer_ = (next_buffer_ + 1) % buffers_.size();
  return b;
}

const void* ParamStore::gather_source(int u) {
  const UnitPart& up = z_.part.unit(u);
  if (up.param == ParamHome::Backend) return work_[size_t(u)];
  const int64_t n = up.param_len;
  void* dst = shard_pool_.acquire(n, false);  // overwritten whole by the copy below
  const void* src = work_[size_t(u)];
  if (up.param == ParamHome::Nvme) {
    void* buf = next_buffer();
    swapper_->wait(swapper_->read(size_t(u), buf));
    src = buf;
  }
  // Waited here: the all-gather is issued right after.
  z_.backend.wait_copy(z_.backend.copy_to_device_async(dst, src, size_t(n) * z_.element_bytes()));
  shard_in_[size_t(u)] = dst;
  return dst;
}

void ParamStore::release_gather_source(int u) {
  void*& p = shard_in_[size_t(u)];
  if (!p) return;
  shard_pool_.release(z_.part.unit(u).param_len, p);
  p = nullptr;
}

void ParamStore::write(int u, int64_t begin, int64_t n, const float* values) {
  const Partition& p = z_.part;
  const UnitPart& up = p.unit(u);
  if (p.master_aliases_params()) return;  // the update wrote the working params themselves
  if (up.param == ParamHome::Nvme) {      // rebuild the shard (padding stays zero); finish_update writes it back
    if (image_unit_ != u) {
      image_.assign(size_t(up.param_len) * z_.element_bytes(), 0);
      image_unit_ = u;
    }
    to_act(image_.data() + (up.state_in_param + begin) * int64_t(z_.element_bytes()), values, n);
    return;
  }
  if (up.staged() && up.param == ParamHome::Backend) {
    if (!transfer_) throw std::logic_error("ParamStore::write: staged unit " + std::to_string(u) + " without a transfer ring");
    transfer_->publish(u, working_at(u, begin), n,
                       [&](void* slot, int64_t first, int64_t len) { to_act(slot, values + first, len); });
    return;
  }
  if (!p.config().backend_is_host && up.param == ParamHome::Backend)
    throw std::logic_error("ParamStore::write: unit " + std::to_string(u) + "'s working params are on the device");
  to_act(working_at(u, begin), values, n);
}

void ParamStore::finish_update(int u) {
  if (z_.part.unit(u).param != ParamHome::Nvme || image_unit_ != u) return;  // no element of u here: record stays zero
  void* buf = next_buffer();
  std::memset(buf, 0, swapper_->padded_bytes(size_t(u)));
  std::memcpy(buf, image_.data(), image_.size());
  swapper_->wait(swapper_->write(size_t(u), buf));
  image_unit_ = -1;
}

}  // namespace zt
