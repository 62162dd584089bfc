// Generation: the CPU decode attention (multi-head and grouped-query) against the full causal
// forward's last row; each family's decoder (prompt prefill, then one position at a time through
// the key/value cache) against the training forward's logits at every position — GPT-2 tied and
// untied, Llama tiny (grouped-query), tied and with llama3 RoPE scaling; TokenPicker's greedy,
// seeded and top-k draws; generate()'s stop token and lengths.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention.h"
#include "runtime/model/causal_lm.h"
#include "runtime/model/decoder.h"
#include "runtime/model/gpt2.h"
#include "runtime/model/gpt2_decoder.h"
#include "runtime/model/llama_decoder.h"
#include "runtime/model/token_picker.h"
#include "tests/model/model_test_util.h"
#include "tests/model/random_values.h"

namespace zt {
namespace {

double max_abs_diff(const float* a, const float* b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    if (!(d <= worst)) worst = d;  // NaN wins
  }
  return worst;
}

TEST(AttentionDecode, EqualsTheCausalForwardsLastRow) {
  for (const auto [B, T, C, NH, NKV] : std::vector<std::array<int, 5>>{
           {1, 1, 8, 2, 2}, {2, 7, 12, 3, 3}, {1, 70, 64, 4, 4}, {3, 130, 32, 1, 1},  // multi-head
           {2, 9, 32, 4, 2}, {1, 70, 36, 6, 3}, {2, 33, 64, 8, 1}}) {                  // grouped-query
    const int Tmax = T + 5;  // the cache is longer than what is filled
    const int W = (NH + 2 * NKV) * (C / NH);  // one packed row: q, k, v
    std::vector<float> cache = test::randn(size_t(B) * Tmax * W, 7);
    // The full forward over the first T positions of each sequence, packed [B, T, W].
    std::vector<float> qkv(size_t(B) * T * W);
    for (int b = 0; b < B; ++b)
      std::copy_n(cache.begin() + ptrdiff_t(b) * Tmax * W, size_t(T) * W, qkv.begin() + ptrdiff_t(b) * T * W);
    std::vector<float> full(size_t(B) * T * C), saved(cpu::attention_saved_bytes(B, T, C, NH) / 4);
    cpu::attention_forward(full.data(), saved.data(), qkv.data(), B, T, C, NH, NKV);
    std::vector<float> out(size_t(B) * C, NAN);
    cpu::attention_decode(out.data(), cache.data(), B, Tmax, T, C, NH, NKV);
    for (int b = 0; b < B; ++b)
      EXPECT_LT(max_abs_diff(out.data() + size_t(b) * C, full.data() + (size_t(b) * T + T - 1) * C, size_t(C)), 1e-5)
          << "B=" << B << " T=" << T << " C=" << C << " NH=" << NH << " NKV=" << NKV << " sequence " << b;
  }
}

TEST(AttentionDecode, RefusesPositionsOutsideTheCache) {
  std::vector<float> cache(3 * 8 * 4), out(8);
  EXPECT_THROW(cpu::attention_decode(out.data(), cache.data(), 1, 4, 5, 8, 2, 2), std::invalid_argument);
  EXPECT_THROW(cpu::attention_decode(out.data(), cache.data(), 1, 4, 0, 8, 2, 2), std::invalid_argument);
  EXPECT_THROW(cpu::attention_decode(out.data(), cache.data(), 1, 4, 2, 8, 2, 3), std::invalid_argument);  // NKV ∤ NH
}

// The training forward's logits for `tokens` (one sequence), row t predicting token t + 1.
std::vector<float> forward_logits(CausalLM& model, test::UnitBuffers& buf, const std::vector<int32_t>& tokens) {
  const int T = int(tokens.size());
  std::vector<int32_t> targets(tokens.size(), 0);
  model.set_batch(tokens.data(), targets.data(), 1, T);
  std::vector<void*> params(buf.params.begin(), buf.params.end());
  forward_only(model, params);
  const int Vp = model.config().padded_vocab();
  const float* logits = static_cast<const float*>(model.logits());
  return std::vector<float>(logits, logits + size_t(T) * Vp);
}

// The decoder make_decoder gives for `cfg` against the training forward at every position of one
// sequence of seq_len tokens: a 6-token prompt, then one token at a time to the full context.
void check_decoder_matches_forward(const ModelConfig& cfg, const char* family) {
  auto be = make_cpu_backend();
  const std::unique_ptr<CausalLM> model = make_causal_lm(cfg, *be, ModelRunOptions{1, false, true});
  test::UnitBuffers buf(*be, *model);
  test::fill_random_params(*model, buf, 5);
  std::vector<int32_t> tokens;
  for (int i = 0; i < cfg.seq_len; ++i) tokens.push_back((i * 7 + 3) % cfg.vocab);
  const std::vector<float> want = forward_logits(*model, buf, tokens);
  const int Vp = cfg.padded_vocab();

  std::vector<const void*> params(buf.params.begin(), buf.params.end());
  const std::unique_ptr<Decoder> decoder = make_decoder(cfg, *be, params, cfg.seq_len);
  EXPECT_EQ(dynamic_cast<LlamaDecoder*>(decoder.get()) != nullptr, cfg.llama()) << "make_decoder's family";
  // Every block caches max_len rows of q, k and v: (H + 2Hkv)·hd values each, NKV key/value heads.
  EXPECT_EQ(decoder->cache_bytes(), size_t(cfg.layers) * size_t(cfg.seq_len) * size_t(cfg.qkv_rows()) * sizeof(float));
  const int prompt_len = 6;
  std::vector<float> got = decoder->prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + prompt_len));
  ASSERT_EQ(got.size(), size_t(cfg.vocab));
  EXPECT_LT(max_abs_diff(got.data(), want.data() + size_t(prompt_len - 1) * Vp, size_t(cfg.vocab)), 1e-4)
      << family << " prefill";
  for (int t = prompt_len; t < cfg.seq_len; ++t) {
    got = decoder->append(tokens[size_t(t)]);
    EXPECT_EQ(decoder->length(), t + 1);
    EXPECT_LT(max_abs_diff(got.data(), want.data() + size_t(t) * Vp, size_t(cfg.vocab)), 1e-4)
        << family << " position " << t;
  }
  EXPECT_THROW(decoder->append(0), std::length_error);  // the cache is full
  // A new prefill starts over: a one-token prompt gives row 0.
  got = decoder->prefill({tokens[0]});
  EXPECT_LT(max_abs_diff(got.data(), want.data(), size_t(cfg.vocab)), 1e-4) << family;
  EXPECT_THROW(decoder->prefill({cfg.vocab}), std::invalid_argument);  // outside the vocabulary
}

ModelConfig small_gpt2(bool tied) {
  ModelConfig cfg = *model_preset("tiny");
  cfg.dim = 32;
  cfg.heads = 4;
  cfg.layers = 3;
  cfg.vocab = 37;
  cfg.seq_len = 20;
  cfg.tied_embeddings = tied;
  return cfg;
}

TEST(GPT2Decoder, CachedLogitsEqualTheForwardsTied) { check_decoder_matches_forward(small_gpt2(true), "GPT2"); }
TEST(GPT2Decoder, CachedLogitsEqualTheForwardsUntied) { check_decoder_matches_forward(small_gpt2(false), "GPT2"); }
// llama-tiny: 4 query heads on 2 key/value heads, untied; -tied: 3 on 1, tied; -rope-llama3: the
// llama3 frequency rule over 40 positions.
TEST(LlamaDecoder, CachedLogitsEqualTheForwardsGroupedQuery) {
  check_decoder_matches_forward(*model_preset("llama-tiny"), "Llama");
}
TEST(LlamaDecoder, CachedLogitsEqualTheForwardsTied) {
  check_decoder_matches_forward(*model_preset("llama-tiny-tied"), "Llama");
}
TEST(LlamaDecoder, CachedLogitsEqualTheForwardsLlama3Rope) {
  check_decoder_matches_forward(*model_preset("llama-tiny-rope-llama3"), "Llama");
}

TEST(Decoder, RefusesAContextPastTheModelsAndAMissingUnit) {
  const ModelConfig cfg = *model_preset("llama-tiny");
  auto be = make_cpu_backend();
  const std::unique_ptr<CausalLM> model = make_causal_lm(cfg, *be);
  test::UnitBuffers buf(*be, *model);
  std::vector<const void*> params(buf.params.begin(), buf.params.end());
  EXPECT_THROW(make_decoder(cfg, *be, params, cfg.seq_len + 1), std::invalid_argument);
  EXPECT_THROW(make_decoder(cfg, *be, params, 0), std::invalid_argument);
  params.pop_back();
  EXPECT_THROW(make_decoder(cfg, *be, params, cfg.seq_len), std::invalid_argument);
  EXPECT_THROW(LlamaDecoder(small_gpt2(true), *be, std::vector<const void*>(5, nullptr), 4), std::invalid_argument);
}

TEST(TokenPicker, GreedyIsTheArgmaxLowestIdOnTies) {
  TokenPicker greedy(SamplingOptions{0.0, 0, 1});
  EXPECT_EQ(greedy.pick({0.f, 3.f, 1.f, 3.f}), 1);
  EXPECT_EQ(greedy.pick({-1.f, -2.f}), 0);
  TokenPicker top1(SamplingOptions{1.0, 1, 9});  // top-k 1 draws only the most likely
  for (int i = 0; i < 20; ++i) EXPECT_EQ(top1.pick({0.5f, 0.1f, 2.f, 1.9f}), 2);
  // A vocabulary limit (a tokenizer smaller than the model) never picks past it, greedy or drawn.
  TokenPicker limited_greedy(SamplingOptions{0.0, 0, 1, 2});
  EXPECT_EQ(limited_greedy.pick({0.5f, 0.1f, 2.f, 1.9f}), 0);
  TokenPicker limited(SamplingOptions{1.0, 0, 5, 2});
  for (int i = 0; i < 200; ++i) EXPECT_LT(limited.pick({0.5f, 0.1f, 9.f, 9.f}), 2);
}

TEST(TokenPicker, SeededDrawsRepeatAndFollowTheSoftmax) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::vector<int32_t> a, b, c;
  TokenPicker pa(SamplingOptions{1.0, 0, 42}), pb(SamplingOptions{1.0, 0, 42}), pc(SamplingOptions{1.0, 0, 43});
  for (int i = 0; i < 20000; ++i) {
    a.push_back(pa.pick(logits));
    b.push_back(pb.pick(logits));
    c.push_back(pc.pick(logits));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::map<int32_t, int> counts;
  for (int32_t t : a) ++counts[t];
  EXPECT_NEAR(counts[0] / 20000.0, 0.5, 0.02);
  EXPECT_NEAR(counts[1] / 20000.0, 0.3, 0.02);
  EXPECT_NEAR(counts[2] / 20000.0, 0.2, 0.02);
  // Temperature 0.5 squares the odds: 25:9:4.
  TokenPicker cold(SamplingOptions{0.5, 0, 3});
  counts.clear();
  for (int i = 0; i < 20000; ++i) ++counts[cold.pick(logits)];
  EXPECT_NEAR(counts[0] / 20000.0, 25.0 / 38, 0.02);
  // top-k 2 renormalises over the two most likely: 5:3.
  TokenPicker top2(SamplingOptions{1.0, 2, 4});
  counts.clear();
  for (int i = 0; i < 20000; ++i) ++counts[top2.pick(logits)];
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[0] / 20000.0, 5.0 / 8, 0.02);
}

TEST(TokenPicker, RefusesNegativeSettings) {
  EXPECT_THROW(TokenPicker(SamplingOptions{-1.0, 0, 1}), std::invalid_argument);
  EXPECT_THROW(TokenPicker(SamplingOptions{1.0, -2, 1}), std::invalid_argument);
}

TEST(Generate, StopsAtTheStopTokenAndAtTheCount) {
  ModelConfig cfg = *model_preset("tiny");
  cfg.vocab = 23;
  auto be = make_cpu_backend();
  GPT2 model(cfg, *be, ModelRunOptions{1, false, false});
  test::UnitBuffers buf(*be, model);
  test::fill_random_params(model, buf, 11);
  std::vector<const void*> params(buf.params.begin(), buf.params.end());
  GPT2Decoder decoder(cfg, *be, params, cfg.seq_len);
  TokenPicker greedy(SamplingOptions{0.0, 0, 1});
  std::vector<int32_t> seen;
  const std::vector<int32_t> out = generate(decoder, greedy, {1, 2}, 5, std::nullopt, [&](int32_t t) { seen.push_back(t); });
  EXPECT_EQ(out.size(), 5u);
  EXPECT_EQ(seen, out);
  EXPECT_EQ(decoder.length(), 2 + 4);  // the last pick is not fed back
  const std::vector<int32_t> stopped = generate(decoder, greedy, {1, 2}, 5, out[1]);
  const auto stop_at = std::find(out.begin(), out.end(), out[1]);  // greedy: the same tokens up to the stop
  EXPECT_EQ(stopped, std::vector<int32_t>(out.begin(), stop_at + 1));
}

}  // namespace
}  // namespace zt
