// The `small` preset learns the built-in language: validation loss falls far below the data's
// unigram entropy (what any context-free model can reach) within a short CPU budget.
#include <gtest/gtest.h>

#include "runtime/data/synthetic.h"
#include "runtime/model/model_config.h"
#include "runtime/train/train_single.h"

namespace zt {
namespace {

TEST(TrainSmall, LossFallsWellBelowUnigramEntropy) {
  TrainOptions o;
  o.model = *model_preset("small");
  // Budget: 30 steps × 4 × 64 = 7.7k tokens, ~8 CPU-seconds here (more on a loaded machine).
  o.steps = 30;
  o.micro_batch = 4;
  o.warmup_steps = 3;
  o.lr = 3e-3;
  o.eval_every = 0;
  o.print = false;
  const TrainResult r = train_single(o);
  // Numbers (seed 1): unigram entropy of the built-in stream 3.16 nats; the chain's entropy rate
  // 0.94 nats; untrained loss ≈ ln 256 = 5.5 nats. Measured: val loss 2.04 after these 30 steps
  // (1.59 after 60 steps of micro batch 8). Pass: at least 1 nat below the unigram entropy.
  ASSERT_FALSE(r.val_losses.empty());
  const float final_val = r.val_losses.back().second;
  EXPECT_GT(r.unigram_entropy, 3.0);
  EXPECT_GT(r.losses.front(), 5.0f);
  EXPECT_LT(final_val, r.unigram_entropy - 1.0) << "final val loss " << final_val;
  EXPECT_GT(final_val, synthetic_conditional_entropy() - 0.05) << "below the entropy rate: leaking val data?";
}

}  // namespace
}  // namespace zt
