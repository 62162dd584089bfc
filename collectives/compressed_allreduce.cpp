// The compressed all-reduce's arithmetic and its four collectives (see compressed_allreduce.h).
#include "collectives/compressed_allreduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace zt {

namespace {

bool positive(float v) { return !(v < 0.0f); }  // sgn(v) = +1 for v ≥ 0, −0 and NaN; −1 below zero

// ‖v‖₂ / √n: squares added in double in index order, rounded to fp32 once.
float rms(const float* v, size_t n) {
  double sq = 0;
  for (size_t i = 0; i < n; ++i) sq += double(v[i]) * double(v[i]);
  return float(std::sqrt(sq) / std::sqrt(double(n)));
}

// error = v − s·sgn(v), and v's signs packed eight to a byte, the first element in the high bit.
void compress(const float* v, size_t n, float s, float* error, uint8_t* bits) {
  for (size_t b = 0; b < n / 8; ++b) {
    const unsigned byte = CompressedAllReduce::sign_byte(v + 8 * b);
    for (unsigned k = 0; k < 8; ++k) error[8 * b + k] = v[8 * b + k] - (((byte >> (7 - k)) & 1u) ? s : -s);
    bits[b] = uint8_t(byte);
  }
}

// out[e] += (bit e ? s : −s) for e < n (n a multiple of 8).
void add_signed(const uint8_t* bits, size_t n, float s, float* out) {
  for (size_t b = 0; b < n / 8; ++b) {
    const unsigned byte = bits[b];
    for (unsigned k = 0; k < 8; ++k) out[8 * b + k] += ((byte >> (7 - k)) & 1u) ? s : -s;
  }
}

// out[e] = (bit e ? s : −s) for e < n, a byte at a time.
void expand_signed(const uint8_t* bits, size_t n, float s, float* out) {
  const size_t full = n / 8;
  for (size_t b = 0; b < full; ++b) {
    const unsigned byte = bits[b];
    float* o = out + 8 * b;
    for (unsigned k = 0; k < 8; ++k) o[k] = ((byte >> (7 - k)) & 1u) ? s : -s;
  }
  for (size_t e = full * 8; e < n; ++e) out[e] = ((bits[e / 8] >> (7 - e % 8)) & 1u) ? s : -s;
}

}  // namespace

uint8_t CompressedAllReduce::sign_byte(const float* v) {
  unsigned byte = 0;
  for (unsigned k = 0; k < 8; ++k) byte |= unsigned(positive(v[k])) << (7 - k);
  return uint8_t(byte);
}

size_t CompressedAllReduce::padded_length(size_t n, int world) {
  if (world < 1) throw std::invalid_argument("compressed all-reduce: world size " + std::to_string(world) + " < 1");
  const size_t w = size_t(world);
  const size_t unit = w * std::lcm(w, size_t(8));
  return (n + unit - 1) / unit * unit;
}

CompressedAllReduce::CallBytes CompressedAllReduce::call_bytes(size_t n, int world) {
  if (n == 0) return {};
  const uint64_t packed = padded_length(n, world) / 8;
  const uint64_t scales = uint64_t(world) * sizeof(float);
  return {packed, packed + 2 * scales};
}

uint64_t CompressedAllReduce::wire_bytes(size_t n, int world) {
  if (n == 0) return 0;
  const uint64_t w = uint64_t(world);
  const uint64_t chunk_bytes = padded_length(n, world) / 8 / w;
  return 2 * (w - 1) * (chunk_bytes + sizeof(float));
}

void CompressedAllReduce::prepare(ErrorFeedback& e, size_t n) const {
  const size_t pad = padded_length(n, comm_.world_size());
  if (e.worker.size() != pad) e.worker.assign(pad, 0.0f);
  if (e.server.size() != pad / size_t(comm_.world_size())) e.server.assign(pad / size_t(comm_.world_size()), 0.0f);
}

void CompressedAllReduce::run(float* x, size_t n, ErrorFeedback& e) { run(std::vector<Tensor>{{x, n, &e}}); }

void CompressedAllReduce::run(const std::vector<Tensor>& tensors) {
  const int W = comm_.world_size(), r = comm_.rank();
  const size_t w = size_t(W);
  // Empty tensors take no part (their errors emptied); each other's place in one rank's block is
  // its chunk's bytes.
  std::vector<Tensor> live;
  offset_.clear();
  size_t block = 0, largest = 0;
  for (const Tensor& k : tensors) {
    if (k.n == 0) {
      k.error->clear();
      continue;
    }
    prepare(*k.error, k.n);
    live.push_back(k);
    offset_.push_back(block);
    block += k.error->server.size() / 8;
    largest = std::max(largest, k.error->worker.size());
  }
  if (live.empty()) return;
  const size_t T = live.size();
  send_.assign(w * block, 0);
  recv_.assign(w * block, 0);
  scales_.assign(w * T, 0.0f);
  buf_.resize(largest);

  // Worker: each tensor's error added, its scale, its new error, its signs packed chunk by chunk
  // into the block of the chunk's rank.
  for (size_t t = 0; t < T; ++t) {
    const Tensor& k = live[t];
    ErrorFeedback& e = *k.error;
    const size_t pad = e.worker.size(), chunk = pad / w;
    std::fill(buf_.begin(), buf_.begin() + ptrdiff_t(pad), 0.0f);
    std::memcpy(buf_.data(), k.x, k.n * sizeof(float));
    for (size_t i = 0; i < pad; ++i) buf_[i] += e.worker[i];
    const float s = rms(buf_.data(), pad);
    scales_[size_t(r) * T + t] = s;
    for (size_t j = 0; j < w; ++j)
      compress(buf_.data() + j * chunk, chunk, s, e.worker.data() + j * chunk, send_.data() + j * block + offset_[t]);
  }

  // Phase 1: rank j's block of every rank to rank j; every rank's scales to all.
  comm_.all_to_all(send_.data(), recv_.data(), w * block, DType::U8);
  comm_.all_gather(scales_.data() + size_t(r) * T, scales_.data(), w * T, DType::F32);

  // Server: this rank's chunk of each tensor, summed over the ranks in rank order, plus its server
  // error; the signs packed into this rank's block of the phase-2 buffer (gathered in place).
  const float inv_w = float(1.0 / double(W));
  std::vector<float> server_scales(w * T, 0.0f);
  for (size_t t = 0; t < T; ++t) {
    const Tensor& k = live[t];
    ErrorFeedback& e = *k.error;
    const size_t chunk = e.server.size();
    // Rank by rank over the chunk (each element's terms still added in rank order, from zero).
    float* c = buf_.data();
    std::fill(c, c + chunk, 0.0f);
    for (size_t i = 0; i < w; ++i) add_signed(recv_.data() + i * block + offset_[t], chunk, scales_[i * T + t] * inv_w, c);
    for (size_t q = 0; q < chunk; ++q) c[q] += e.server[q];
    const float sj = rms(c, chunk);
    server_scales[size_t(r) * T + t] = sj;
    compress(c, chunk, sj, e.server.data(), send_.data() + size_t(r) * block + offset_[t]);
  }

  // Phase 2: every rank's block and scales to all; each tensor's result, chunk by chunk.
  comm_.all_gather(send_.data() + size_t(r) * block, send_.data(), w * block, DType::U8);
  comm_.all_gather(server_scales.data() + size_t(r) * T, server_scales.data(), w * T, DType::F32);
  for (size_t t = 0; t < T; ++t) {
    const Tensor& k = live[t];
    const size_t chunk = k.error->server.size();
    for (size_t j = 0; j * chunk < k.n; ++j)
      expand_signed(send_.data() + j * block + offset_[t], std::min(chunk, k.n - j * chunk),
                    server_scales[j * T + t], k.x + j * chunk);
  }
}

}  // namespace zt
