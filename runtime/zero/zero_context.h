// ZeroContext: what every ZeRO object of one engine shares — the backend, the communicator the
// partition spans (the world, or MiCS's shard group) and the other groups, the ledger, the partition, the precisions and the timeline — with the small helpers they all use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "collectives/communicator.h"
#include "runtime/zero/comm_groups.h"
#include "kernels/backend.h"
#include "runtime/zero/buckets.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/partition.h"
#include "runtime/zero/precision_emulation.h"
#include "runtime/zero/trace.h"

namespace zt {


// Where one step's time went (wall_clock_breakdown): compute, and waits for communication.
struct StepTimes {
  double forward_s = 0, backward_s = 0, reduce_wait_s = 0, gather_wait_s = 0, optimizer_s = 0;
};

struct ZeroContext {
  Backend& backend;
  Communicator& comm;      // the ranks the partition spans: groups->shard()
  MemoryLedger& ledger;
  const Partition& part;
  DType train_precision;   // what the model trains in (fp32, bf16, fp16)
  DType comm_precision;    // communication_data_type (default: the training precision)
  DType accum_precision;   // data_types.grad_accum_dtype (default: the training precision)
  Trace* trace = nullptr;  // rank 0's timeline when --trace is on
  StepTimes times;         // of the step in progress
  // Every group the engine split (runtime/zero/comm_groups.h): hpZ's secondary group, MiCS's
  // replica group and the hierarchical gather's levels, each null when the run has none.
  const CommGroups* groups = nullptr;

  Communicator* secondary_comm() const { return groups ? groups->secondary() : nullptr; }
  Communicator* replica_comm() const { return groups ? groups->replica() : nullptr; }

  DType working_type() const { return backend.act_dtype(); }  // what the backend's buffers hold
  size_t element_bytes() const { return dtype_size(backend.act_dtype()); }
  // The CPU backend stores fp32; bf16/fp16 training is emulated by rounding where a GPU would store
  // the 16-bit type.
  bool emulates() const { return backend.act_dtype() == DType::F32 && part.config().backend_is_host; }
  // The address `elements` working-type elements past `base`.
  void* element_at(void* base, int64_t elements) const {
    return static_cast<char*>(base) + elements * int64_t(element_bytes());
  }
  // Rounds n fp32 backend values to `p` (no-op on a real 16-bit backend and for fp32).
  void emulate(void* x, int64_t n, DType p) const {
    if (emulates()) round_to_precision(static_cast<float*>(x), size_t(n), p);
  }
  void traced(const std::string& name, TraceTrack track, Clock::time_point begin) const {
    if (trace) trace->span(name, track, begin, Clock::now());
  }
};

// The segments one bucketed collective takes for bucket `b`: each piece at its place in
// buffer(piece) (a unit's padded buffer), split by the rank owning each part of the unit when
// `by_owner` (reduce-scatter, all-gather), whole otherwise (all-reduce).
std::vector<Segment> bucket_segments(const ZeroContext& z, const Bucket& b, bool by_owner,
                                     const std::function<void*(const BucketPiece&)>& buffer);

// For the destructor of an object whose buffers collectives still in flight use: `wait_all` waits
// for them; a failure there cannot be reported to the other ranks, which would wait forever in the
// same collective, so the process ends (the launcher ends the job) after naming `what`.
void wait_or_abort(const ZeroContext& z, const char* what, const std::function<void()>& wait_all);

// Every rank of z.comm's `local` doubles, in rank order. Doubles travel as their bit patterns (int64), so sums
// made from them are exact and identical on every rank; through backend memory (NCCL needs device
// buffers). Collective.
std::vector<double> allgather_doubles(ZeroContext& z, const std::vector<double>& local);
// The same over another of the engine's communicators (the world, for the step's loss under MiCS).
std::vector<double> allgather_doubles(ZeroContext& z, Communicator& over, const std::vector<double>& local);

}  // namespace zt
