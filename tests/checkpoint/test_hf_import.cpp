// Hugging Face GPT-2 import: the weights scripts/make_hf_gpt2.py wrote (HF names, Conv1D layout,
// the hub's unprefixed names and mask buffers) load into zerotrain's GPT-2 on the CPU backend and
// give the numpy reference's logits and loss within 1e-5 relative (fp32). Then --init-from into a
// 2-rank stage-3 run, a save, and an export with --format hf, which scripts/check_hf_export.py
// compares with the original through the safetensors reference library. ZT_HF_DIR names the folder.
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

}  // namespace
}  // namespace zt::ckpt
