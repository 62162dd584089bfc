// GPT2::activation_bytes_for (what the memory plan counts) against what a model really allocates,
// for every preset up to gpt2-350m (one block's set with checkpointing for the large ones, so that
// the test stays small), with and without checkpointing and kept logits, at several micro batches.
// The constructor refuses a mismatch itself; the test names the configuration that broke it.
#include <gtest/gtest.h>

#include <string>

#include "kernels/backend.h"
#include "runtime/model/gpt2.h"

namespace zt {
namespace {

TEST(ActivationBytes, FormulaEqualsWhatTheModelAllocates) {
  auto backend = make_cpu_backend();
  for (const char* name : {"tiny", "small", "gpt2-124m", "gpt2-350m"}) {
    const ModelConfig m = *model_preset(name);
    const bool large = m.layers >= 12;
    for (int batch : {1, 3}) {
      if (large && batch > 1) continue;
      for (bool recompute : {false, true}) {
        if (large && !recompute) continue;
        for (bool keep : {false, true}) {
          SCOPED_TRACE(std::string(name) + " batch " + std::to_string(batch) + (recompute ? " recompute" : "") +
                       (keep ? " keep_logits" : ""));
          const ModelRunOptions o{batch, recompute, keep};
          const size_t want = GPT2::activation_bytes_for(
              m, o, 4, backend->attention_saved_bytes(batch, m.seq_len, m.dim, m.heads));
          const GPT2 model(m, *backend, o);
          EXPECT_EQ(model.activation_bytes(), want);
        }
      }
    }
  }
}

// The formula tracks what each piece costs: more rows, more bytes; checkpointing keeps fewer.
TEST(ActivationBytes, GrowsWithTheBatchAndShrinksWithCheckpointing) {
  const ModelConfig m = *model_preset("small");
  const size_t one = GPT2::activation_bytes_for(m, {1, false, false}, 4, 1000);
  EXPECT_GT(GPT2::activation_bytes_for(m, {2, false, false}, 4, 1000), one);
  EXPECT_LT(GPT2::activation_bytes_for(m, {1, true, false}, 4, 1000), one);
  EXPECT_EQ(GPT2::activation_bytes_for(m, {1, false, false}, 4, 2000), one + size_t(m.layers) * 1000);
}

}  // namespace
}  // namespace zt
