// ShardedState: the boundary between checkpoints and the engine — one rank's part of a run (fp32
// master weights and optimizer moments per model unit, by flat element range, plus run counters).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "base/optimizer.h"
#include "runtime/model/unit_layout.h"

namespace zt {

// A run of elements of one unit: [begin, begin + n) of unit `unit` (index into units(), walk
// order) in the unit's flat, UNPADDED element index [0, UnitLayout::numel). Padding is the
// engine's business and never appears in a checkpoint.
struct ElementRange {
  int unit = 0;
  int64_t begin = 0;
  int64_t n = 0;
  int64_t end() const { return begin + n; }
  bool operator==(const ElementRange&) const = default;
};

// The fp32 arrays a checkpoint holds per unit for an optimizer, in file order: "master" (the fp32
// weights) first, then the optimizer's state under PyTorch's names. Adam, AdamW and Lamb:
// "exp_avg", "exp_avg_sq"; SGD with momentum != 0: "momentum_buffer"; SGD without momentum: none.
std::vector<std::string> state_arrays_for(OptimizerType optimizer, bool sgd_momentum);
// The optimizer as a manifest records it: "adamw", "adam" (L2 decay), "sgd", "lamb".
const char* checkpoint_optimizer_name(OptimizerType optimizer);

// What the engine implements so that a checkpoint can save and restore one rank's share of a run.
// Every call is made from the thread that trains, between optimizer steps (never during one);
// read() and write() are local, commit() is collective. A checkpoint never sees device memory,
// padding, offload records or the working (bf16/fp16) copy: it moves fp32 values by range.
//
// Constraints the engine meets:
//  * Partition: owned() over all ranks is disjoint and covers every unit's [0, numel) exactly once
//    (stages 1–3: the rank's shard without its padding; stage 0, where every rank holds everything,
//    a disjoint 1/N split all the same, so that each rank writes only its share). needed() is what
//    this rank must be given on load (its shard for stages 1–3; every unit whole for stage 0).
//  * read(array, r, out): r lies inside one range of owned(); copies r.n fp32 values (from device
//    memory, pinned host memory or NVMe records as the run keeps them) into host memory `out`.
//  * write(array, r, in): r lies inside one range of needed(); stores r.n fp32 values. Ranges
//    of needed() may be written in any order and in pieces; every element of every array in
//    arrays() is written exactly once before commit(), except when the load skips optimizer state
//    (then only "master" is written and the engine keeps its freshly initialised moments).
//  * commit(): collective, after all writes: rebuild the working parameters from the master
//    (rounding to bf16/fp16 where the run stores them), re-gather them as the stage needs
//    (stages 0–2: every rank's full copy; stage 3: the shards), and write back offload copies.
//    After commit() the next train step computes exactly what it would have after the save.
//  * counters() / set_counters(): the run's small state as one JSON object. Keys the checkpoint
//    reads (all integers unless noted):
//      "step"           optimizer steps taken so far (applied + skipped): the next step's index
//      "applied_steps"  steps whose update was applied (the scheduler is a function of this)
//      "skipped_steps"  fp16 overflow skips
//      "lr"             (number, optional) the learning rate the next step will use; recorded so
//                       that a load can prove the scheduler reproduces it
//      "loss_scaler"    (object, fp16 only) {"scale", "cur_hysteresis", "cur_iter",
//                       "last_overflow_iter"} as optim/loss_scaler.h's LossScaler::State
//    Any other key is kept as it is and handed back on load. The data sampler needs nothing here:
//    it is a function of (seed, step, global batch), which the manifest records from the run.
class ShardedState {
 public:
  virtual ~ShardedState() = default;

  // --- the run being saved -----------------------------------------------------------------
  virtual const std::vector<UnitLayout>& units() const = 0;  // the model, in walk order
  virtual int world_size() const = 0;
  virtual int rank() const = 0;
  virtual int stage() const = 0;                // ZeRO stage 0..3
  virtual DType precision() const = 0;          // working type: F32, BF16 or F16
  virtual OptimizerType optimizer() const = 0;
  virtual std::vector<std::string> arrays() const = 0;  // state_arrays_for(optimizer(), ...)

  // --- the partition -------------------------------------------------------------------------
  virtual std::vector<ElementRange> owned() const = 0;
  virtual std::vector<ElementRange> needed() const = 0;

  // --- values --------------------------------------------------------------------------------
  virtual void read(const std::string& array, const ElementRange& r, float* out) = 0;
  virtual void write(const std::string& array, const ElementRange& r, const float* in) = 0;
  // Where the range lives as plain fp32 host memory that a load may fill in place (write() is then
  // not called for it; commit() still is), or null (the default): the load reads into a buffer
  // and hands it to write().
  virtual float* write_target(const std::string& array, const ElementRange& r) {
    (void)array;
    (void)r;
    return nullptr;
  }
  virtual void commit() = 0;

  // --- counters ------------------------------------------------------------------------------
  virtual nlohmann::json counters() const = 0;
  virtual void set_counters(const nlohmann::json& counters) = 0;

  // --- this rank's private arrays ----------------------------------------------------------------
  // fp32 arrays that belong to this rank alone and are not partitioned (the compressed optimizers'
  // error feedback: every rank's differs). Which ones a state holds may depend on its counters
  // (0/1 Adam keeps more between a local step and the next sync): a save asks with its own
  // counters(), a load with the checkpoint's. Saved whole in the rank's own file; a load gives them back
  // to the same rank at the same world size only, before set_counters(), through
  // write_private(); where the checkpoint holds them but they cannot be given (another world
  // size), private_not_loaded(why) is called instead. None by default.
  struct PrivateArray {
    std::string name;
    int64_t n = 0;
    bool operator==(const PrivateArray&) const = default;
  };
  virtual std::vector<PrivateArray> private_arrays(const nlohmann::json& counters) const {
    (void)counters;
    return {};
  }
  // The most any save of this state holds (the writer reserves its snapshot for it at the start).
  virtual std::vector<PrivateArray> largest_private_arrays() const { return private_arrays(counters()); }
  virtual void read_private(const std::string& name, float* out) {
    (void)name;
    (void)out;
  }
  virtual void write_private(const std::string& name, const float* in) {
    (void)name;
    (void)in;
  }
  virtual void private_not_loaded(const std::string& why) { (void)why; }
};

}  // namespace zt
