// CompressedAllReduce: 1-bit Adam's error-compensated all-reduce (DeepSpeed's
// compressed_allreduce, runtime/comm/nccl.py and mpi.py), built on any communicator's all-to-all
// and all-gather, over fp32 host buffers. Each rank sends one sign bit per element and one fp32
// scale, twice:
//   worker:  x (n elements, zero-padded to n_pad) += worker error; s = ‖x‖₂ / √n_pad;
//            worker error = x − s·sgn(x) with sgn(v) = +1 for v ≥ 0 (zero, −0 and NaN included);
//            the signs packed eight to a byte, first element in the high bit (numpy's packbits),
//            cut into W chunks of n_pad / W;
//   phase 1: all-to-all of the chunks (rank j collects chunk j of every rank) and all-gather of s;
//   server:  for chunk j, c = Σ_i sgn_i · (s_i · (1/W)), added in rank order, then + server error;
//            s_j = ‖c‖₂ / √(n_pad / W); server error = c − s_j·sgn(c); c's signs packed;
//   phase 2: all-gather of the W packed server chunks and of their scales;
//   result:  x[e] = s_j · sgn for e in chunk j (trimmed to n): the same on every rank, an estimate
//            of the ranks' mean whose errors feed back into the next call.
// n_pad is the next multiple of W·lcm(W, 8), so every chunk is whole bytes. A norm is a sum of
// squares in double (in index order) whose square root over √count is rounded to fp32 once; the
// rest is fp32 as written above. An empty x returns at once and empties both errors.
// Per call each rank sends (W−1)/W · n_pad/8 bytes of signs and (W−1) fp32 scales in each phase:
// about 2 bits per element against 32–64 for an fp16/fp32 all-reduce. Several tensors can share
// one call's four collectives (run(tensors)), each keeping its own arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/communicator.h"

namespace zt {

// One tensor's error feedback: the worker error (n_pad elements) and the server error for this
// rank's chunk (n_pad / W). Both start at zero and belong to one rank (they differ between ranks).
struct ErrorFeedback {
  std::vector<float> worker, server;
  void clear() { worker.clear(), server.clear(); }
  uint64_t bytes() const { return (worker.size() + server.size()) * sizeof(float); }
};

class CompressedAllReduce {
 public:
  explicit CompressedAllReduce(Communicator& comm) : comm_(comm) {}

  // The packed signs of v[0..8): bit 7 (the high bit) is v[0]'s, bit 0 v[7]'s — numpy's packbits
  // order, as DeepSpeed packs them — set for v ≥ 0 (zero, −0 and NaN included), clear below zero.
  static uint8_t sign_byte(const float* v);
  // n rounded up to a multiple of W·lcm(W, 8) (0 stays 0).
  static size_t padded_length(size_t n, int world);
  // The algorithm bytes one call of n elements records, per op as the communicator counts them.
  struct CallBytes {
    uint64_t all_to_all = 0, all_gather = 0;
  };
  static CallBytes call_bytes(size_t n, int world);
  // What one call puts on the wire from this rank: (W−1)/W of each packed buffer plus W−1 scales, twice.
  static uint64_t wire_bytes(size_t n, int world);

  // Sizes e's buffers for n elements (zero-filled) unless they already have that size.
  void prepare(ErrorFeedback& e, size_t n) const;
  // x (n elements, host memory) ← the compressed mean over the ranks; e updated. Collective: every
  // rank calls it with the same n, in the same order. W = 1 runs the same arithmetic alone.
  void run(float* x, size_t n, ErrorFeedback& e);

  // Several tensors at once, each with its own padding, scales and errors — bit for bit the calls
  // of run() one by one — in the same four collectives: each rank's chunks of every tensor travel
  // in one all-to-all (tensor after tensor inside each rank's block), the T scales in one
  // all-gather, and so in phase 2. The records count the sum of the single calls' bytes in 1 + 3
  // calls instead of T + 3T: on a link where each message costs a round trip, that is the win.
  struct Tensor {
    float* x = nullptr;
    size_t n = 0;
    ErrorFeedback* error = nullptr;
  };
  void run(const std::vector<Tensor>& tensors);

 private:
  Communicator& comm_;
  std::vector<float> buf_, scales_;
  std::vector<uint8_t> send_, recv_;
  std::vector<size_t> offset_;  // each tensor's byte offset inside one rank's block
};

}  // namespace zt
