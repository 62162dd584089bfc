// GradReducer: the gradient side of ZeRO. Backward fills one full-unit buffer per unit in backward
// order; that flat stream is cut into buckets of reduce_bucket_size elements (runtime/zero/buckets.h),
// and each bucket is reduced with ONE collective as soon as every unit it touches is done:
//   stage 0: all-reduced at the accumulation boundary (micro-steps are added first);
//   stage 1: reduce-scattered at the accumulation boundary into this rank's part of the full grads;
//   stages 2–3: reduce-scattered every micro-step, this rank's part added into its gradient shard,
//     and the full buffer released once every bucket holding a piece of it is done;
//   MiCS (stage 3 over shard groups): the reduce-scatters run inside the shard group, and in the
//     accumulation boundary's micro-step each bucket's owned parts, final once its reduce-scatter
//     completes, are all-reduced across the replica group right then, beside the rest of backward
//     (as DeepSpeed's MiCS does per bucket); finish() waits for them;
//   qgZ (stage 3 over more than one node, zero_quantized_gradients): each bucket's 1-D tensors
//     (biases, norms) are reduce-scattered exactly and the rest goes through QuantizedReduce's two
//     int4 all-to-alls, both issued together and waited as one.
// With overlap_comm the collectives run while backward continues (stages 2–3 keep one bucket in
// flight, qgZ two — the older one's second hop issued when the next bucket is —, stages 0–1 all of
// them until the boundary); without it each is waited where it is issued.
// Exact reductions are element-wise sums in rank order, so no bucket size ever changes a result
// (qgZ's quantization blocks follow its buckets, so there it does).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "runtime/zero/buckets.h"
#include "runtime/zero/quantized_reduce.h"
#include "runtime/zero/reduced_grads.h"
#include "runtime/zero/unit_buffers.h"
#include "runtime/zero/zero_context.h"

namespace zt {

// How many gradient collectives stay in flight once one is issued: none without overlap_comm; one
// beside backward when every micro-step reduces (stages 2–3: the full buffers go back to the pool
// as their buckets complete; qgZ two, so that one bucket's second hop runs while the next bucket's
// first does); all of them until the accumulation boundary otherwise.
inline size_t reduce_calls_kept_in_flight(bool overlap, bool reduces_each_micro_step, bool two_hops = false) {
  if (!overlap) return 0;
  return reduces_each_micro_step ? (two_hops ? 2 : 1) : SIZE_MAX;
}

struct ReduceOptions {
  int64_t bucket_elems = 500000000;  // reduce_bucket_size: elements per gradient collective
  bool overlap = false;              // overlap_comm
  bool quantized_gradients = false;  // qgZ (stage 3; off on one node); its buckets are balanced over the
                                     // partition's ranks (cut_balanced_buckets) whenever it is asked for
  int64_t quantized_block = 8;       // qgZ: elements per scale (the engine: the model's width)
};

class GradReducer {
 public:
  GradReducer(ZeroContext& z, UnitBufferPool& pool, const ReduceOptions& o);
  ~GradReducer();  // waits for collectives still in flight (their buffers go with this object)
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // --- one step ---------------------------------------------------------------------------------
  void start_step();                      // zeroes the accumulated gradients
  void start_micro_step(bool last);       // `last`: the accumulation boundary (stages 0–1 reduce then)
  void* grad_buffer(int u);               // the zeroed full buffer backward adds unit u's gradient into
  void unit_done(int u);                  // every write into unit u's buffer this micro-step is done
  void finish();                          // every bucket reduced and waited (MiCS: and the replicas
                                          // added): the gradients are final
  // Stage 0: whether the accumulation boundary all-reduces the gradients (on unless turned off).
  // 1-bit Adam's compressed phase turns it off, as DeepSpeed's enable_backward_allreduce = False:
  // each rank keeps its own sums. Between steps.
  void set_all_reduce(bool on);

  // --- results (after finish) -----------------------------------------------------------------------
  void* grads(int u) const { return grads_[size_t(u)]; }  // grad_len elements (full or this rank's shard)
  // This rank's reduced sums, state element 0 onward (state_len elements; the rest is not reduced).
  ReducedGrads reduced() const;

  const std::vector<Bucket>& buckets() const { return stream_.buckets(); }
  // qgZ: each bucket's parts sent exactly (inside: the 1-D tensors) and quantized (outside); empty when off.
  const std::vector<BucketSplit>& quantized_split() const { return qgz_split_; }
  bool quantizes() const { return qgz_.on(); }
  size_t quantized_block() const { return qgz_.on() ? qgz_.block() : 0; }  // qgZ's elements per scale
  // qgZ's sampled error and its exact elements since the last take (calls == 0: off).
  QuantError take_quant_error();
  // qgZ's traffic in one micro-step's reduction: every bucket's two all-to-alls, and the elements
  // it reduce-scatters exactly (the predictor's terms; zero when off).
  QuantizedReduce::WireBytes quantized_wire_bytes() const;
  uint64_t exact_elements_per_micro_step() const;

 private:
  struct InFlight {
    size_t bucket;
    CommHandlePtr handle;
    Clock::time_point issued;
    std::shared_ptr<TwoHopHandle> two_hop;  // qgZ's quantized part (advanced once the next bucket is issued)
  };
  void issue(size_t k);
  void complete_front();
  void drain(size_t keep);
  std::string bucket_name(size_t k) const;
  void all_reduce_replicas(size_t k);

  ZeroContext& z_;
  UnitBufferPool& pool_;
  bool overlap_;
  std::vector<void*> grads_;         // accumulated gradients (ledger: Grads)
  std::vector<void*> full_;          // unit -> this micro-step's full buffer, while in use
  BucketStream stream_;              // the buckets in backward order and the next to issue
  std::vector<int> buckets_of_unit_; // how many buckets hold a piece of unit u
  std::vector<int> pending_;         // of those, still to complete this micro-step
  std::deque<InFlight> in_flight_;
  bool reducing_now_ = false;        // this micro-step issues reductions
  bool boundary_ = false;            // this micro-step ends the accumulation (MiCS: the replicas add then)
  bool all_reduce_ = true;           // stage 0: the boundary all-reduces (set_all_reduce)
  struct ReplicaCall {
    CommHandlePtr handle;
    std::vector<Segment> segments;
    Clock::time_point issued;
  };
  std::vector<ReplicaCall> replica_calls_;  // MiCS: the boundary's replica all-reduces, waited in finish()
  QuantizedReduce qgz_;              // qgZ, when on
  std::vector<BucketSplit> qgz_split_;
  uint64_t exact_elements_ = 0;      // qgZ: elements reduced exactly since the last take
};

}  // namespace zt
