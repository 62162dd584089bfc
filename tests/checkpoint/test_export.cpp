// Export of consolidated weights: zerotrain names (fp32, bf16) and Hugging Face GPT-2 names and
// layout, streamed unit by unit; the round trips export -> import (--init-from) give the same bits.
#include <gtest/gtest.h>

#include "base/half_float.h"
#include "runtime/checkpoint/export.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"
#include "runtime/checkpoint/safetensors.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

using test::FakeShardedState;

float master(int unit, int64_t elem) { return FakeShardedState::value("master", unit, elem, 5); }

int64_t largest_unit(const std::vector<UnitLayout>& units) {
  int64_t n = 0;
  for (const auto& u : units) n = std::max(n, u.numel);
  return n;
}

class Export : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(test::save_fake(dir.sub("ckpt"), m, 3, 2, 5).ok); }
  ExportResult run(const std::string& format, const std::string& dtype, const std::string& out) {
    ExportOptions o;
    o.checkpoint = dir.sub("ckpt");
    o.out = out;
    o.format = format;
    o.dtype = dtype;
    return export_weights(o);
  }
  test::TempDir dir;
  ModelConfig m = test::small_model();
  std::vector<UnitLayout> units = build_unit_layouts(test::small_model());
};

TEST_F(Export, ZerotrainFp32HoldsEveryTensorOnceByName) {
  const auto r = run("zerotrain", "fp32", dir.sub("w.safetensors"));
  EXPECT_EQ(r.params, m.total_params());
  EXPECT_LE(r.peak_buffer_bytes, largest_unit(units) * 4) << "one unit at a time, no more";
  Diagnostics d;
  auto f = SafetensorsFile::open(dir.sub("w.safetensors"), d, "");
  ASSERT_TRUE(f) << d.format();
  EXPECT_EQ(f->metadata().at("format"), "zerotrain-weights");
  size_t n = 0;
  for (const auto& u : units)
    for (const auto& t : u.tensors) {
      const StTensor* st = f->find(u.name + "." + t.name);
      ASSERT_TRUE(st) << u.name << "." << t.name;
      EXPECT_EQ(st->shape, t.shape);
      std::vector<float> v(size_t(t.numel));
      f->read(*st, 0, v.size() * 4, v.data());
      for (int64_t i = 0; i < t.numel; ++i) ASSERT_EQ(v[size_t(i)], master(u.index, t.offset + i)) << st->name << "[" << i << "]";
      ++n;
    }
  EXPECT_EQ(f->tensors().size(), n);
}

TEST_F(Export, Bf16RoundsToNearestEven) {
  run("zerotrain", "bf16", dir.sub("w.safetensors"));
  Diagnostics d;
  auto f = SafetensorsFile::open(dir.sub("w.safetensors"), d, "");
  ASSERT_TRUE(f);
  const auto& u = units[1];
  const auto& t = u.tensors[2];  // qkv_w
  const StTensor* st = f->find(u.name + "." + t.name);
  ASSERT_EQ(st->dtype, StDType::BF16);
  std::vector<uint16_t> v(size_t(t.numel));
  f->read(*st, 0, v.size() * 2, v.data());
  for (int64_t i = 0; i < t.numel; ++i) ASSERT_EQ(v[size_t(i)], f32_to_bf16_bits(master(1, t.offset + i)));
}

TEST_F(Export, HuggingFaceNamesLayoutAndConfig) {
  const auto r = run("hf", "fp32", dir.sub("hf"));
  ASSERT_EQ(r.files.size(), 2u);
  Diagnostics d;
  auto f = SafetensorsFile::open(dir.sub("hf/model.safetensors"), d, "");
  ASSERT_TRUE(f) << d.format();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_FALSE(f->find("lm_head.weight")) << "tied: GPT2LMHeadModel ties lm_head to wte itself";
  const StTensor* qkv = f->find("transformer.h.1.attn.c_attn.weight");
  ASSERT_TRUE(qkv);
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{24, 72})) << "Conv1D stores [in, out]";
  // Element [i, o] of HF's Conv1D weight is our [o, i].
  const auto& t = units[2].tensor("qkv_w");
  std::vector<float> v(size_t(t.numel));
  f->read(*qkv, 0, v.size() * 4, v.data());
  for (int64_t i = 0; i < 24; ++i)
    for (int64_t o = 0; o < 72; ++o) ASSERT_EQ(v[size_t(i * 72 + o)], master(2, t.offset + o * 24 + i));
  EXPECT_TRUE(f->find("transformer.wte.weight"));
  EXPECT_TRUE(f->find("transformer.ln_f.bias"));
  EXPECT_TRUE(f->find("transformer.h.0.mlp.c_proj.weight"));
  EXPECT_EQ(f->tensors().size(), 2u + 12u * 2u + 2u);
  const auto cfg = nlohmann::json::parse(read_small_file(dir.sub("hf/config.json")));
  EXPECT_EQ(cfg["model_type"], "gpt2");
  EXPECT_EQ(cfg["n_embd"], 24);
  EXPECT_EQ(cfg["n_head"], 2);
  EXPECT_EQ(cfg["n_layer"], 2);
  EXPECT_EQ(cfg["n_positions"], 10);
  EXPECT_EQ(cfg["vocab_size"], 61);
  EXPECT_EQ(cfg["activation_function"], "gelu_new");
  EXPECT_EQ(cfg["architectures"][0], "GPT2LMHeadModel");
}

TEST_F(Export, HfAndZerotrainFilesImportBackBitForBit) {
  for (const std::string format : {"hf", "zerotrain"}) {
    const std::string out = format == "hf" ? dir.sub("hf") : dir.sub("w.safetensors");
    run(format, "fp32", out);
    const std::string file = format == "hf" ? out + "/model.safetensors" : out;
    // --init-from into a fresh run at another world size and stage.
    test::run_ranks(2, [&](int rank, Communicator& comm) {
      FakeShardedState st(m, 2, rank, 3);
      RankExchange ex(comm);
      init_from_hf(st, ex, file, m);
      EXPECT_EQ(st.mismatches(5, {"master"}), 0) << format;
      EXPECT_EQ(st.commits, 1);
    });
  }
}

TEST_F(Export, UntiedModelsExportTheirLmHead) {
  ModelConfig u = m;
  u.tied_embeddings = false;
  test::TempDir d2;
  ASSERT_TRUE(test::save_fake(d2.sub("c"), u, 2, 0, 5).ok);
  ExportOptions o;
  o.checkpoint = d2.sub("c");
  o.out = d2.sub("hf");
  o.format = "hf";
  export_weights(o);
  Diagnostics d;
  auto f = SafetensorsFile::open(d2.sub("hf/model.safetensors"), d, "");
  ASSERT_TRUE(f);
  ASSERT_TRUE(f->find("lm_head.weight"));
  EXPECT_EQ(f->find("lm_head.weight")->shape, (std::vector<int64_t>{61, 24}));
  EXPECT_EQ(nlohmann::json::parse(read_small_file(d2.sub("hf/config.json")))["tie_word_embeddings"], false);
  // The file is refused by a tied run, with the fix.
  Diagnostics e;
  EXPECT_FALSE(HfGpt2Reader::open(d2.sub("hf/model.safetensors"), units, m, e));
  EXPECT_NE(e.format().find("tie_word_embeddings"), std::string::npos) << e.format();
}

TEST_F(Export, BadOptionsAreReportedTogether) {
  ExportOptions o;
  o.checkpoint = dir.sub("ckpt");
  o.format = "onnx";
  o.dtype = "fp8";
  try {
    export_weights(o);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostics().error_count(), 3u) << e.diagnostics().format();
  }
}

TEST_F(Export, ImportRefusesAWrongShapeNamingTheTensor) {
  run("hf", "fp32", dir.sub("hf"));
  ModelConfig wide = m;
  wide.dim = 32;
  const auto wide_units = build_unit_layouts(wide);
  Diagnostics d;
  EXPECT_FALSE(HfGpt2Reader::open(dir.sub("hf/model.safetensors"), wide_units, wide, d));
  EXPECT_NE(d.format().find("tensor \"transformer.wte.weight\") = [61, 24]: expected [61, 32]"), std::string::npos)
      << d.format();
  EXPECT_NE(d.format().find("config.json: n_embd = 24"), std::string::npos) << d.format();
}

}  // namespace
}  // namespace zt::ckpt
