// train_single: the first training loop — one process, GPT-2 on a Backend, plain AdamW, warmup +
// cosine learning rate, global-norm clipping, a line per step and a validation loss every K steps.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/model_config.h"

namespace zt {

struct TrainOptions {
  ModelConfig model;            // shape; tied_embeddings included
  int64_t steps = 200;
  uint64_t seed = 1;            // initialisation, built-in data and sampling order
  std::string data_dir;         // "" = built-in synthetic language; else DIR/train.bin, DIR/val.bin
  int micro_batch = 8;
  int grad_accum = 1;
  double lr = 3e-3;
  double min_lr_ratio = 0.1;    // cosine decays to lr · min_lr_ratio at the last step
  int64_t warmup_steps = -1;    // -1: min(100, steps / 10)
  double weight_decay = 0.1;    // applied to matrices only (not to biases and LayerNorm)
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double max_grad_norm = 1.0;   // <= 0 disables clipping
  int64_t eval_every = 50;      // 0 disables evaluation (except the final one)
  int eval_batches = 4;         // micro-batches of validation windows per evaluation
  bool checkpoint_activations = false;
  int threads = 0;              // CPU threads (0 = OpenMP's default)
  bool print = true;            // per-step lines to `out`
};

struct TrainResult {
  std::vector<float> losses;                          // training loss per step
  std::vector<std::pair<int64_t, float>> val_losses;  // (step, validation loss); last one after the final step
  double unigram_entropy = 0;                         // of the training stream, nats
  double tokens_per_s = 0;                            // median over steps after the first
  int64_t params = 0;
};

// The learning rate at 0-based step `step`.
double learning_rate(const TrainOptions& o, int64_t step);

// Trains on the CPU backend. Throws zt::UserError on unusable options or data.
TrainResult train_single(const TrainOptions& options, std::FILE* out = stdout);

}  // namespace zt
