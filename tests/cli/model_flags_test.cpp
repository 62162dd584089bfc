// resolve_model on the Llama presets: every preset resolves; overrides that break a Llama shape
// are a UserError naming the flag and the value; a head width that was dim / heads follows the
// overrides; GPT-2 presets keep their own checks (the training run's). And the model of a run that
// starts from Hugging Face Llama weights (--init-from a folder with a config.json): without --model
// the shape is config.json's (--seq-len applied), with --model or a shape flag each field that
// differs is an error naming config.json's key and the flag.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "runtime/checkpoint/hf_llama.h"
#include "runtime/common/diagnostics.h"
#include "runtime/model/model_config.h"
#include "runtime/train/model_flags.h"

namespace zt {
namespace {

// The diagnostics of the UserError resolve_model throws for `f` (none when it does not throw).
std::vector<Diagnostic> problems_of(const ModelFlags& f) {
  try {
    resolve_model(f);
  } catch (const UserError& e) {
    return e.diagnostics().all();
  }
  return {};
}

ModelFlags flags(const std::string& preset) {
  ModelFlags f;
  f.preset = preset;
  return f;
}

TEST(ModelFlags, EveryLlamaPresetResolves) {
  for (const char* p : {"llama-tiny", "llama-tiny-tied", "llama-tiny-rope-llama3", "smollm2-135m", "tinyllama-1.1b",
                        "llama-3.2-1b"}) {
    const ModelConfig m = resolve_model(flags(p));
    EXPECT_TRUE(m.llama()) << p;
    EXPECT_EQ(m.name, p);
    EXPECT_TRUE(model_shape_problems(m).empty()) << p;
  }
}

TEST(ModelFlags, HeadsThatKvHeadsDoNotDivideNameTheFlag) {
  ModelFlags f = flags("llama-tiny");  // 4 heads, 2 kv heads, dim 32
  f.heads = 3;
  const auto d = problems_of(f);
  ASSERT_FALSE(d.empty());
  for (const Diagnostic& x : d) {
    EXPECT_EQ(x.path, "--heads");
    EXPECT_EQ(x.value, "3");
  }
  EXPECT_NE(d[0].message.find("kv_heads 2 must divide heads 3"), std::string::npos) << d[0].message;
}

TEST(ModelFlags, OddHeadWidthNamesTheDim) {
  ModelFlags f = flags("llama-tiny");
  f.dim = 36;  // 36 / 4 = 9: RoPE needs an even head width
  const auto d = problems_of(f);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "--dim");
  EXPECT_EQ(d[0].value, "36");
  EXPECT_NE(d[0].message.find("head_dim 9 must be even"), std::string::npos) << d[0].message;
}

TEST(ModelFlags, GoodOverridesResolveAndTheHeadWidthFollows) {
  ModelFlags f = flags("llama-tiny");
  f.heads = 8;
  f.layers = 3;
  const ModelConfig m = resolve_model(f);
  EXPECT_EQ(m.name, "llama-tiny+custom");
  EXPECT_EQ(m.heads, 8);
  EXPECT_EQ(m.kv_head_count(), 2);
  EXPECT_EQ(m.head_width(), 4);  // dim 32 / 8
  EXPECT_EQ(m.layers, 3);
  ModelFlags v = flags("smollm2-135m");
  v.vocab = 1;
  const auto d = problems_of(v);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "--vocab");
}

TEST(ModelFlags, Gpt2PresetsAreLeftToTheRunsChecks) {
  ModelFlags f = flags("tiny");
  f.dim = 17;  // not divisible by 2 heads: the training run reports it as before
  EXPECT_NO_THROW(resolve_model(f));
}


std::string fixture(const std::string& c) { return std::string(ZT_LLAMA_FIXTURES_DIR) + "/" + c; }

// resolve_model for these command-line arguments against `c`'s config.json.
ModelConfig resolve(const std::string& c, std::vector<std::string> args) {
  CLI::App app;
  ModelFlags flags;
  add_model_flags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  app.parse(args);
  const auto described = ckpt::hf_llama_config_at(fixture(c));
  EXPECT_TRUE(described);
  return resolve_model(flags, app, *described, fixture(c) + "/config.json");
}

std::string refusal(const std::string& c, const std::vector<std::string>& args) {
  try {
    resolve(c, args);
  } catch (const UserError& e) {
    return e.diagnostics().format();
  }
  return "accepted";
}

TEST(ModelFromWeights, WithoutModelTheShapeIsConfigJsons) {
  const ModelConfig m = resolve("llama_tiny_tied", {});
  EXPECT_TRUE(m.llama());
  EXPECT_EQ(m.vocab, 61);
  EXPECT_EQ(m.heads, 3);
  EXPECT_EQ(m.kv_head_count(), 1);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(m.seq_len, 256);
  EXPECT_EQ(resolve("llama_tiny_tied", {"--seq-len", "16"}).seq_len, 16);
  EXPECT_EQ(resolve("llama_tiny", {"--model", "llama-tiny"}).name, "llama-tiny");
  EXPECT_EQ(resolve("llama_tiny_rope_llama3", {"--model", "llama-tiny-rope-llama3"}).seq_len, 40);
}

TEST(ModelFromWeights, MismatchesNameTheKeyAndTheFlag) {
  std::string msg = refusal("llama_tiny", {"--model", "llama-tiny-tied"});
  for (const char* s : {"config.json: num_attention_heads = 4", "has 3", "--heads", "hidden_size = 32", "--dim",
                        "num_key_value_heads = 2", "tie_word_embeddings = false", "--untied-embeddings"})
    EXPECT_NE(msg.find(s), std::string::npos) << "no \"" << s << "\" in: " << msg;
  msg = refusal("llama_tiny", {"--layers", "3"});
  EXPECT_NE(msg.find("num_hidden_layers = 2: this run's model (hf-llama) has 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--layers"), std::string::npos) << msg;
  msg = refusal("llama_tiny_tied", {"--untied-embeddings"});
  EXPECT_NE(msg.find("tie_word_embeddings = true"), std::string::npos) << msg;
  msg = refusal("llama_tiny", {"--model", "llama-tiny-rope-llama3"});
  EXPECT_NE(msg.find("rope_scaling = default"), std::string::npos) << msg;
  msg = refusal("llama_tiny", {"--model", "small"});
  EXPECT_NE(msg.find("model_type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is GPT-2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt
