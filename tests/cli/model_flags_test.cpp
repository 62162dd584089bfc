// The model of a run that starts from Hugging Face Llama weights (--init-from a folder with a
// config.json): without --model the shape is config.json's (--seq-len applied), with --model or a
// shape flag each field that differs is an error naming config.json's key and the flag.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "runtime/checkpoint/hf_llama.h"
#include "runtime/common/diagnostics.h"
#include "runtime/train/model_flags.h"

namespace zt {
namespace {

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
