// Hugging Face GPT-2 import: the weights scripts/make_hf_gpt2.py wrote (HF names, Conv1D layout,
// the hub's unprefixed names and mask buffers) load into zerotrain's GPT-2 on the CPU backend and
// give the numpy reference's logits and loss within 1e-5 relative (fp32). Then --init-from into a
// 2-rank stage-3 run, a save, and an export with --format hf, which scripts/check_hf_export.py
// compares with the original through the safetensors reference library; the same file into a model
// with 64 more vocabulary rows (zero rows added, recorded, never exported). ZT_HF_DIR names the folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "runtime/checkpoint/checkpoint_save.h"
#include "runtime/checkpoint/export.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/model/gpt2.h"
#include "tests/checkpoint/fake_state.h"
#include "tests/checkpoint/thread_comm.h"
#include "tests/model/model_test_util.h"

namespace zt::ckpt {
namespace {

std::string hf_dir() {
  const char* d = std::getenv("ZT_HF_DIR");
  return d ? d : "";
}

nlohmann::json reference() { return nlohmann::json::parse(read_small_file(hf_dir() + "/reference.json")); }

ModelConfig model_of(const nlohmann::json& r) {
  ModelConfig m;
  m.name = "hf-test";
  m.vocab = r["vocab"];
  m.dim = r["dim"];
  m.heads = r["heads"];
  m.layers = r["layers"];
  m.seq_len = r["seq_len"];
  return m;
}

TEST(HfImport, LogitsAndLossMatchTheNumpyReference) {
  ASSERT_FALSE(hf_dir().empty()) << "ZT_HF_DIR is not set";
  const auto ref = reference();
  const ModelConfig cfg = model_of(ref);
  const int B = ref["batch"], T = cfg.seq_len;
  auto be = make_cpu_backend();
  GPT2 model(cfg, *be, ModelRunOptions{B, false, /*keep_logits=*/true});
  Diagnostics d;
  auto reader = HfGpt2Reader::open(hf_dir() + "/model.safetensors", model.layouts(), cfg, d);
  ASSERT_TRUE(reader) << d.format();
  test::UnitBuffers buf(*be, model);
  for (int u = 0; u < model.num_units(); ++u) reader->read_unit(u, buf.p(u));
  const auto tokens = ref["tokens"].get<std::vector<int32_t>>();
  const auto targets = ref["targets"].get<std::vector<int32_t>>();
  model.set_batch(tokens.data(), targets.data(), B, T);
  const float loss = forward_only(model, buf.params);
  const double ref_loss = ref["loss"];
  EXPECT_NEAR(loss, ref_loss, 1e-5 * std::abs(ref_loss));
  const auto want = ref["logits"].get<std::vector<double>>();
  const float* got = static_cast<const float*>(model.logits());
  ASSERT_NE(got, nullptr);
  ASSERT_EQ(want.size(), size_t(B) * T * cfg.vocab);
  // zerotrain's rows are padded_vocab() apart (the LM head is padded); the reference's are vocab.
  const size_t V = size_t(cfg.vocab), Vp = size_t(cfg.padded_vocab());
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i / V * Vp + i % V]) - want[i]));
  EXPECT_GT(scale, 0.1);
  EXPECT_LE(worst, 1e-5 * scale) << "max logit error " << worst << " of " << scale;
}

TEST(HfImport, InitFromSaveAndExportForThePythonCheck) {
  ASSERT_FALSE(hf_dir().empty());
  const ModelConfig cfg = model_of(reference());
  const std::string ckpt = hf_dir() + "/ckpt", out = hf_dir() + "/export";
  remove_tree(ckpt);
  remove_tree(out);
  test::run_ranks(2, [&](int rank, Communicator& comm) {
    test::FakeShardedState st(cfg, 2, rank, 3);
    st.set_counters({{"step", 0}, {"applied_steps", 0}, {"skipped_steps", 0}});
    RankExchange ex(comm);
    init_from_hf(st, ex, hf_dir() + "/model.safetensors", cfg);
    EXPECT_EQ(st.commits, 1);
    SaveOptions o;
    o.dir = ckpt;
    CheckpointWriter w(ex, o);
    RunFacts f;
    f.model = cfg;
    const auto r = w.save(st, f, "global_step0");
    EXPECT_TRUE(r.ok) << r.message;
  });
  ExportOptions e;
  e.checkpoint = ckpt;
  e.out = out;
  e.format = "hf";
  const auto r = export_weights(e);
  EXPECT_EQ(r.params, cfg.total_params());
  EXPECT_TRUE(path_exists(out + "/model.safetensors"));
}

// HF's vocabulary is smaller than the model's (as 50257 into a model of 50304): the file's 64 rows
// import into a model of 128 with rows 64..127 at zero, the real logits are the reference's, the
// checkpoint records 64 and export --format hf writes 64 rows (ckpt_hf_export_check_padded compares
// them with the original through the reference library); --format zerotrain keeps the model's rows
// and carries 64 to the next --init-from.
TEST(HfImport, SmallerVocabularyImportsPaddedAndExportsWithoutThePadding) {
  ASSERT_FALSE(hf_dir().empty());
  const auto ref = reference();
  const ModelConfig file_cfg = model_of(ref);
  ModelConfig cfg = file_cfg;
  cfg.vocab = file_cfg.vocab + 64;
  const int64_t V = file_cfg.vocab, C = cfg.dim;
  const int B = ref["batch"], T = cfg.seq_len;
  auto be = make_cpu_backend();
  GPT2 model(cfg, *be, ModelRunOptions{B, false, /*keep_logits=*/true});
  Diagnostics d;
  auto reader = HfGpt2Reader::open(hf_dir() + "/model.safetensors", model.layouts(), cfg, d);
  ASSERT_TRUE(reader) << d.format();
  EXPECT_EQ(reader->file_vocab(), V);
  EXPECT_EQ(reader->hf_vocab(), V);
  test::UnitBuffers buf(*be, model);
  for (int u = 0; u < model.num_units(); ++u) reader->read_unit(u, buf.p(u));
  const float* wte = buf.p(0);  // unit 0's first tensor is wte [vocab, C]
  int64_t nonzero_pad = 0, zero_real = 0;
  for (int64_t i = V * C; i < int64_t(cfg.vocab) * C; ++i) nonzero_pad += wte[i] != 0.0f;
  for (int64_t i = 0; i < V * C; ++i) zero_real += wte[i] == 0.0f;
  EXPECT_EQ(nonzero_pad, 0);
  EXPECT_EQ(zero_real, 0);
  const auto tokens = ref["tokens"].get<std::vector<int32_t>>();
  const auto targets = ref["targets"].get<std::vector<int32_t>>();
  model.set_batch(tokens.data(), targets.data(), B, T);
  forward_only(model, buf.params);
  const auto want = ref["logits"].get<std::vector<double>>();
  const float* got = static_cast<const float*>(model.logits());
  const size_t Vp = size_t(cfg.padded_vocab());
  double scale = 0, worst = 0, pad_logit = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i / size_t(V) * Vp + i % size_t(V)]) - want[i]));
  for (size_t row = 0; row < size_t(B) * T; ++row)
    for (size_t c = size_t(V); c < size_t(cfg.vocab); ++c) pad_logit = std::max(pad_logit, std::abs(double(got[row * Vp + c])));
  EXPECT_LE(worst, 1e-5 * scale) << "max logit error " << worst << " of " << scale;
  EXPECT_EQ(pad_logit, 0.0) << "a zero row of the tied wte gives logit 0";

  const std::string ckpt = hf_dir() + "/ckpt_padded", out = hf_dir() + "/export_padded";
  remove_tree(ckpt);
  remove_tree(out);
  test::run_ranks(2, [&](int rank, Communicator& comm) {
    test::FakeShardedState st(cfg, 2, rank, 3);
    st.set_counters({{"step", 0}, {"applied_steps", 0}, {"skipped_steps", 0}});
    RankExchange ex(comm);
    RunFacts f;
    f.model = cfg;
    f.hf_vocab = init_from_hf(st, ex, hf_dir() + "/model.safetensors", cfg);
    EXPECT_EQ(f.hf_vocab, V);
    SaveOptions o;
    o.dir = ckpt;
    CheckpointWriter w(ex, o);
    const auto r = w.save(st, f, "global_step0");
    EXPECT_TRUE(r.ok) << r.message;
  });
  Manifest m;
  ASSERT_TRUE(read_manifest(ckpt + "/global_step0", m, d)) << d.format();
  EXPECT_EQ(m.run.hf_vocab, V);
  ExportOptions e;
  e.checkpoint = ckpt;
  e.out = out;
  e.format = "hf";
  const auto r = export_weights(e);
  EXPECT_EQ(r.params, file_cfg.total_params()) << "the padding rows are not exported";
  const auto config = nlohmann::json::parse(read_small_file(out + "/config.json"));
  EXPECT_EQ(config["vocab_size"], V);
  // Our own format keeps the model's rows and records the HF vocabulary for the next import.
  e.format = "zerotrain";
  make_directories(hf_dir() + "/export_padded_zt");  // no config.json beside it
  e.out = hf_dir() + "/export_padded_zt/weights.safetensors";
  EXPECT_EQ(export_weights(e).params, cfg.total_params());
  auto again = HfGpt2Reader::open(e.out, build_unit_layouts(cfg), cfg, d);
  ASSERT_TRUE(again) << d.format();
  EXPECT_EQ(again->hf_vocab(), V);
}

TEST(HfImport, LargerVocabularyThanTheModelIsRefusedWithTheFix) {
  ASSERT_FALSE(hf_dir().empty());
  ModelConfig cfg = model_of(reference());
  cfg.vocab -= 1;
  Diagnostics d;
  EXPECT_FALSE(HfGpt2Reader::open(hf_dir() + "/model.safetensors", build_unit_layouts(cfg), cfg, d));
  EXPECT_NE(d.format().find("--vocab " + std::to_string(cfg.vocab + 1)), std::string::npos) << d.format();
}

}  // namespace
}  // namespace zt::ckpt
