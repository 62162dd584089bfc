// The compressed all-reduce's arithmetic and its four collectives (see compressed_allreduce.h).
#include "collectives/compressed_allreduce.h"

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
    uint8_t byte = 0;
    for (size_t k = 0; k < 8; ++k) {
      const float x = v[8 * b + k];
      const bool pos = positive(x);
      error[8 * b + k] = x - (pos ? s : -s);
      byte = uint8_t(byte | (pos ? 0x80u >> k : 0u));
    }
    bits[b] = byte;
  }
}

float sign_of(const uint8_t* bits, size_t e) { return (bits[e / 8] & (0x80u >> (e % 8))) ? 1.0f : -1.0f; }

}  // namespace

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

void CompressedAllReduce::run(float* x, size_t n, ErrorFeedback& e) {
  const int W = comm_.world_size(), r = comm_.rank();
  if (n == 0) {
    e.clear();
    return;
  }
  prepare(e, n);
  const size_t pad = e.worker.size(), chunk = pad / size_t(W), chunk_bytes = chunk / 8;

  // Worker: add the error, scale, keep the new error, pack the signs.
  buf_.assign(pad, 0.0f);
  std::memcpy(buf_.data(), x, n * sizeof(float));
  for (size_t i = 0; i < pad; ++i) buf_[i] += e.worker[i];
  const float s = rms(buf_.data(), pad);
  send_.resize(pad / 8);
  recv_.resize(pad / 8);
  compress(buf_.data(), pad, s, e.worker.data(), send_.data());

  // Phase 1: chunk j of every rank to rank j; every rank's scale to all.
  scales_.assign(size_t(W), 0.0f);
  scales_[size_t(r)] = s;
  comm_.all_to_all(send_.data(), recv_.data(), pad / 8, DType::U8);
  comm_.all_gather(scales_.data() + r, scales_.data(), size_t(W), DType::F32);

  // Server: this rank's chunk, summed over the ranks in rank order, plus the server error.
  const float inv_w = float(1.0 / double(W));
  float* c = buf_.data();  // the worker values are no longer needed
  for (size_t k = 0; k < chunk; ++k) {
    float acc = 0.0f;
    for (int i = 0; i < W; ++i) acc += sign_of(recv_.data() + size_t(i) * chunk_bytes, k) * (scales_[size_t(i)] * inv_w);
    c[k] = acc + e.server[k];
  }
  const float sj = rms(c, chunk);
  uint8_t* mine = send_.data() + size_t(r) * chunk_bytes;  // phase 2 gathers in place
  compress(c, chunk, sj, e.server.data(), mine);

  // Phase 2: every rank's server chunk and scale to all.
  scales_[size_t(r)] = sj;
  comm_.all_gather(mine, send_.data(), pad / 8, DType::U8);
  comm_.all_gather(scales_.data() + r, scales_.data(), size_t(W), DType::F32);
  for (size_t i = 0; i < n; ++i) x[i] = sign_of(send_.data(), i) * scales_[i / chunk];
}

}  // namespace zt
