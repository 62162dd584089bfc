// The resolved-config echo: text lines with sources, and the JSON shape `check --json` prints.
#include <gtest/gtest.h>

#include "runtime/config/config_echo.h"
#include "runtime/config/config_plan.h"
#include "tests/config/config_test_util.h"

namespace zt {
namespace {

TEST(Echo, TextShowsEveryValueWithItsSource) {
  LoadOptions o;
  o.world_size = 2;
  o.world_source = WorldSizeSource::Flag;
  o.flags.lr = 0.01;
  const auto r = test::load(R"({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "Adam", "params": {"lr": "auto"}},
                                "zero_optimization": {"stage": 3, "cpu_offload_param": true}})", o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  const std::string t = config_to_text(r.config);
  EXPECT_NE(t.find("train_batch_size = 8  (derived: micro batch * world size = 4 * 2)"), std::string::npos) << t;
  EXPECT_NE(t.find("optimizer.params.lr = 0.01  (auto <- --lr)"), std::string::npos) << t;
  EXPECT_NE(t.find("zero_optimization.offload_param.device = \"cpu\"  (deprecated <- zero_optimization.cpu_offload_param)"),
            std::string::npos) << t;
  EXPECT_NE(t.find("zero_optimization.stage = 3  (file)"), std::string::npos) << t;
  EXPECT_NE(t.find("zero_optimization.reduce_bucket_size = 500000000  (default)"), std::string::npos) << t;
  EXPECT_NE(t.find("world_size = 2  (flag --world-size)"), std::string::npos) << t;
  EXPECT_EQ(t.find("cpu_offload_param ="), std::string::npos) << "deprecated keys echo under their new name";
}

TEST(Echo, JsonShape) {
  const auto r = test::load(R"({"train_batch_size": 16, "gradient_accumulation_steps": 2,
                                "zero_optimization": {"stage": 2, "max_live_parameters": 7}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  const auto j = config_to_json(r.config);
  EXPECT_EQ(j["train_batch_size"], 16);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 8);
  EXPECT_EQ(j["gradient_accumulation_steps"], 2);
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_EQ(j["zero_optimization"]["stage"], 2);
  EXPECT_EQ(j["zero_optimization"]["stage3_max_live_parameters"], 7);
  EXPECT_FALSE(j["zero_optimization"].contains("max_live_parameters"));
  EXPECT_EQ(j["zero_optimization"]["offload_param"]["buffer_count"], 5);
  EXPECT_EQ(j["fp16"]["initial_scale_power"], 16);
  const auto s = config_sources_json(r.config);
  EXPECT_EQ(s["zero_optimization.stage"], "file");
  EXPECT_EQ(s["fp16.enabled"], "default");
}

TEST(Echo, PlanInputFromConfig) {
  const auto r = test::load(R"({"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true},
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.25}, "offload_param": {"device": "cpu"}}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  ModelConfig m;  // the "small" preset's shape
  m.layers = 4;
  m.heads = 4;
  m.dim = 128;
  m.vocab = 256;
  m.seq_len = 64;
  const PlanInput in = plan_input(r.config, m.total_params(), &m, 1);
  EXPECT_EQ(in.stage, 3);
  EXPECT_EQ(in.precision, DType::BF16);
  EXPECT_EQ(in.optimizer, OptimizerType::AdamW);
  EXPECT_EQ(in.offload_optimizer, OffloadDevice::CPU);
  EXPECT_DOUBLE_EQ(in.offload_optimizer_ratio, 0.25);
  EXPECT_EQ(in.offload_param, OffloadDevice::CPU);
  EXPECT_EQ(in.micro_batch, 2);
  EXPECT_EQ(in.hidden, m.dim);
  EXPECT_EQ(in.params, m.total_params());
  const auto sgd = test::load(R"({"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "SGD", "params": {"momentum": 0.9}},
                                  "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})");
  ASSERT_TRUE(sgd.valid()) << test::dump(sgd);
  const PlanInput sin = plan_input(sgd.config, m.total_params(), &m, 1);
  EXPECT_EQ(sin.optimizer, OptimizerType::SGD);
  EXPECT_TRUE(sin.sgd_momentum);
}

TEST(Echo, ParamCounts) {
  int64_t n = 0;
  ASSERT_TRUE(parse_param_count("7e9", n));
  EXPECT_EQ(n, 7000000000);
  ASSERT_TRUE(parse_param_count("7B", n));
  EXPECT_EQ(n, 7000000000);
  ASSERT_TRUE(parse_param_count("1.5B", n));
  EXPECT_EQ(n, 1500000000);
  ASSERT_TRUE(parse_param_count("124M", n));
  EXPECT_EQ(n, 124000000);
  ASSERT_TRUE(parse_param_count("350k", n));
  EXPECT_EQ(n, 350000);
  ASSERT_TRUE(parse_param_count("1000", n));
  EXPECT_EQ(n, 1000);
  for (const char* bad : {"", "B", "7X", "-1B", "0", "7BB", "nan", "inf"}) EXPECT_FALSE(parse_param_count(bad, n)) << bad;
}

}  // namespace
}  // namespace zt
