// Configs in the shapes public templates use (HF transformers' all-"auto" files, Accelerate's
// templates, axolotl's ZeRO-3 files with zeros, LLaMA-Factory's offload and AutoTP files,
// Megatron-DeepSpeed's fp16 blocks, LLaVA, Qwen, FastChat, old cpu_offload files): each with the
// flags its users pass, accepted with the batch numbers DeepSpeed derives, or refused with its real
// reason (the key and the message).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "tests/config/config_test_util.h"

namespace zt {
namespace {

// What an HF Trainer user passes: --per_device_train_batch_size 4 --gradient_accumulation_steps 2
// --learning_rate 2e-5 --warmup_steps 10 --max_steps 100 (and --bf16 or not).
AutoFlags trainer_flags(bool bf16 = false, bool with_grad_accum = true) {
  AutoFlags f;
  f.micro_batch = 4;
  if (with_grad_accum) f.grad_accum = 2;
  f.lr = 2e-5;
  f.warmup_steps = 10;
  f.steps = 100;
  f.bf16 = bf16;
  return f;
}

struct TemplateCase {
  const char* name;
  const char* file;
  std::function<void(LoadOptions&)> setup;
  int world;
  int64_t T, M, G;         // when accepted
  const char* error_path;  // "" when accepted
  const char* error_text;
  std::function<void(const LoadResult&)> more = {};
};

void small_model(LoadOptions& o) {
  o.model_hidden = 128;  // --model small
}

const std::vector<TemplateCase>& cases() {
  static const std::vector<TemplateCase> v = {
      {"hf_zero2_bf16_flag", "hf_zero2_auto.json", [](LoadOptions& o) { o.flags = trainer_flags(true); }, 4, 32, 4, 2, "", "",
       [](const LoadResult& r) {
         EXPECT_TRUE(r.config.bf16.enabled.value);
         EXPECT_FALSE(r.config.fp16.enabled.value);
         EXPECT_DOUBLE_EQ(r.config.scheduler.warmup_max_lr.value, 2e-5);
       }},
      {"hf_zero2_fp32", "hf_zero2_auto.json", [](LoadOptions& o) { o.flags = trainer_flags(); }, 2, 16, 4, 2, "", "",
       [](const LoadResult& r) { EXPECT_FALSE(r.config.bf16.enabled.value || r.config.fp16.enabled.value); }},
      {"hf_zero2_fp32_on_cuda", "hf_zero2_auto.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         o.backend = ComputeBackend::Cuda;
       },
       2, 0, 0, 0, "bf16.enabled", "the cuda backend computes in bf16"},
      {"hf_zero2_no_warmup_flag", "hf_zero2_auto.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(true);
         o.flags.warmup_steps.reset();
       },
       2, 0, 0, 0, "scheduler.params.warmup_num_steps", "HF Trainer's default"},
      {"hf_zero3_model", "hf_zero3_auto.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(true);
         small_model(o);
       },
       8, 64, 4, 2, "", "",
       [](const LoadResult& r) {
         EXPECT_EQ(r.config.zero_optimization.reduce_bucket_size.value, 128 * 128);
         EXPECT_EQ(r.config.zero_optimization.prefetch_bucket_size.value, 14745);
         EXPECT_EQ(r.config.scheduler.total_num_steps.value, 100);
       }},
      {"hf_zero3_params_only", "hf_zero3_auto.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(true);
         o.size_without_shape = true;
       },
       8, 0, 0, 0, "zero_optimization.reduce_bucket_size", "--params gives the parameter count"},
      {"hf_zero3_zeros_fp16", "hf_zero3_zeros_fp16.json", [](LoadOptions& o) { o.flags.micro_batch = 1; }, 1, 1, 1, 1, "", "",
       [](const LoadResult& r) {
         const auto& z = r.config.zero_optimization;
         EXPECT_EQ(z.reduce_bucket_size.value, 0);
         EXPECT_EQ(z.prefetch_bucket_size.value, 0);
         EXPECT_EQ(z.param_persistence_threshold.value, 0);
         EXPECT_TRUE(z.gather_16bit_weights_on_model_save.value);  // the deprecated fp16 spelling
       }},
      {"hf_zero2_bf16_file", "hf_zero2_bf16.json", [](LoadOptions& o) { o.flags = trainer_flags(); }, 2, 16, 4, 2, "", ""},
      {"accelerate_zero2", "accelerate_zero2.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(false, false);
         small_model(o);
       },
       2, 8, 4, 1, "", "", [](const LoadResult& r) { EXPECT_TRUE(r.config.fp16.enabled.value); }},
      {"accelerate_zero2_grad_accum_mismatch", "accelerate_zero2.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         small_model(o);
       },
       2, 0, 0, 0, "gradient_accumulation_steps", "the config says 1 and --grad-accum says 2"},
      {"accelerate_zero3_offload", "accelerate_zero3_offload.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(false, false);
         small_model(o);
       },
       4, 16, 4, 1, "", "",
       [](const LoadResult& r) { EXPECT_FALSE(r.config.zero_optimization.gather_16bit_weights_on_model_save.value); }},
      {"accelerate_zero1", "accelerate_zero1.json", [](LoadOptions& o) { o.flags = trainer_flags(false, false); }, 8, 32, 4, 1,
       "", ""},
      {"axolotl_zero1", "axolotl_zero1.json", [](LoadOptions& o) { o.flags = trainer_flags(true); }, 2, 16, 4, 2, "", ""},
      {"axolotl_zero3_zeros", "axolotl_zero3_bf16_zeros.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         small_model(o);
       },
       4, 32, 4, 2, "", "",
       [](const LoadResult& r) {
         const auto& z = r.config.zero_optimization;
         EXPECT_EQ(z.sub_group_size.value, 0);
         EXPECT_EQ(z.max_live_parameters.value, 0);
         EXPECT_EQ(z.max_reuse_distance.value, 0);
         EXPECT_EQ(z.param_persistence_threshold.value, 1280);  // bare spelling, "auto": 10 * hidden
       }},
      {"axolotl_zero3_offload_all", "axolotl_zero3_offload_all.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         small_model(o);
       },
       2, 16, 4, 2, "", "",
       [](const LoadResult& r) {
         EXPECT_NE(test::find(r, "zero_force_ds_cpu_optimizer", "accepted for compatibility", Severity::Warning), nullptr)
             << test::dump(r);
       }},
      {"axolotl_zero1_compile", "axolotl_zero1_compile.json", [](LoadOptions& o) { o.flags = trainer_flags(true); }, 1, 8, 4, 2,
       "", "",
       [](const LoadResult& r) { EXPECT_NE(test::find(r, "compile", "it is off here", Severity::Warning), nullptr) << test::dump(r); }},
      {"llamafactory_z2_offload", "llamafactory_z2_offload.json", [](LoadOptions& o) { o.flags = trainer_flags(); }, 2, 0, 0, 0,
       "comms_config", "DeepSpeed does not read this key"},
      {"llamafactory_z2_offload_allowed", "llamafactory_z2_offload.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         o.allow_unknown_keys = true;
       },
       2, 16, 4, 2, "", "",
       [](const LoadResult& r) {
         EXPECT_NE(test::find(r, "monitor_config", "DeepSpeed does not read this key", Severity::Warning), nullptr);
       }},
      {"llamafactory_z3_offload", "llamafactory_z3_offload.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(true);
         small_model(o);
       },
       8, 64, 4, 2, "", ""},
      {"llamafactory_z3_partial_offload", "llamafactory_z3_partial_offload.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(true);
         small_model(o);
       },
       4, 32, 4, 2, "", "", [](const LoadResult& r) { EXPECT_DOUBLE_EQ(r.config.zero_optimization.offload_optimizer.ratio.value, 0.3); }},
      {"llamafactory_autotp", "llamafactory_autotp.json", [](LoadOptions& o) { o.flags = trainer_flags(); }, 2, 0, 0, 0,
       "tensor_parallel", "changes what training computes"},
      {"llamafactory_autotp_allowed", "llamafactory_autotp.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         o.allow_unknown_keys = true;
       },
       2, 0, 0, 0, "tensor_parallel", "--allow-unknown-keys does not skip it"},
      {"llamafactory_fp8", "llamafactory_z3_fp8.json", [](LoadOptions& o) { o.flags.micro_batch = 2; }, 2, 0, 0, 0, "fp8",
       "DeepSpeed has no fp8 block"},
      {"llamafactory_sequence_parallel", "llamafactory_sequence_parallel.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         small_model(o);
       },
       2, 0, 0, 0, "bf16.loss_scale", "DeepSpeed refuses it too",
       [](const LoadResult& r) { EXPECT_NE(test::find(r, "sequence_parallel", "DeepSpeed does not read this key"), nullptr); }},
      {"megatron_zero1_fp16", "megatron_zero1_fp16.json", [](LoadOptions&) {}, 8, 256, 8, 4, "", "",
       [](const LoadResult& r) {
         EXPECT_EQ(r.config.fp16.loss_scale_window.value, 500);
         EXPECT_EQ(r.config.fp16.initial_scale_power.value, 11);
       }},
      {"megatron_offload_stage1", "megatron_offload_stage1.json", [](LoadOptions&) {}, 4, 0, 0, 0,
       "zero_optimization.offload_param.device", "parameter offload needs ZeRO stage 3",
       [](const LoadResult& r) { EXPECT_NE(test::find(r, "data_efficiency", "it is off here", Severity::Warning), nullptr); }},
      {"megatron_bf16_zero2", "megatron_bf16_zero2.json", [](LoadOptions&) {}, 8, 0, 0, 0, "communication_data_type",
       "not one of the accepted values",
       [](const LoadResult& r) { EXPECT_NE(test::find(r, "bfloat16.loss_scale", "DeepSpeed refuses it too"), nullptr) << test::dump(r); }},
      {"megatron_curriculum", "megatron_curriculum.json", [](LoadOptions&) {}, 4, 0, 0, 0, "curriculum_learning",
       "does not implement"},
      {"old_warmuplr_total", "old_cpu_offload_warmuplr_total.json", [](LoadOptions&) {}, 2, 0, 0, 0,
       "scheduler.params.total_num_steps", "DeepSpeed refuses it too"},
      {"old_cpu_offload", "old_cpu_offload.json", [](LoadOptions&) {}, 2, 16, 4, 2, "", "",
       [](const LoadResult& r) {
         EXPECT_EQ(r.config.zero_optimization.offload_optimizer.device.value, "cpu");
         EXPECT_EQ(r.config.zero_optimization.offload_param.device.value, "cpu");
       }},
      {"old_zero_boolean", "old_zero_boolean.json", [](LoadOptions&) {}, 1, 8, 8, 1, "", "",
       [](const LoadResult& r) { EXPECT_EQ(r.config.zero_optimization.stage.value, 1); }},
      {"infinity_nvme", "infinity_nvme_thread_count.json", [](LoadOptions& o) { o.model = *model_preset("small"); }, 1, 1, 1, 1,
       "", "", [](const LoadResult& r) { EXPECT_EQ(r.config.aio.intra_op_parallelism.value, 2); }},
      {"llava_zero3_offload", "llava_zero3_offload.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         small_model(o);
       },
       8, 64, 4, 2, "", "", [](const LoadResult& r) { EXPECT_EQ(r.config.steps_per_print.value, std::optional<int64_t>(100000)); }},
      {"llava_zero2", "llava_zero2.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags();
         small_model(o);
       },
       2, 16, 4, 2, "", ""},
      {"qwen_zero2", "qwen_zero2.json", [](LoadOptions& o) { o.flags = trainer_flags(true); }, 2, 16, 4, 2, "", ""},
      {"fastchat_zero3", "fastchat_zero3.json",
       [](LoadOptions& o) {
         o.flags = trainer_flags(true);
         small_model(o);
       },
       4, 32, 4, 2, "", ""},
      {"trlx_offload_param_stage2", "trlx_zero2_offload_param.json", [](LoadOptions& o) { o.flags.micro_batch = 2; }, 2, 0, 0, 0,
       "zero_optimization.offload_param.device", "parameter offload needs ZeRO stage 3"},
      {"monitors_wandb", "monitors_wandb.json", [](LoadOptions&) {}, 2, 0, 0, 0, "wandb", "the Weights & Biases monitor"},
      {"monitors_wandb_allowed", "monitors_wandb.json", [](LoadOptions& o) { o.allow_unknown_keys = true; }, 2, 8, 2, 2, "", ""},
      {"autocast_amsgrad", "autocast_amsgrad.json", [](LoadOptions& o) { o.allow_unknown_keys = true; }, 1, 0, 0, 0,
       "torch_autocast", "changes what training computes",
       [](const LoadResult& r) { EXPECT_NE(test::find(r, "optimizer.params.amsgrad", "AMSGrad"), nullptr) << test::dump(r); }},
      {"schedules_and_spellings", "schedules_and_spellings.json", [](LoadOptions&) {}, 1, 8, 4, 2, "", "",
       [](const LoadResult& r) {
         EXPECT_EQ(r.config.communication_data_type.value, "bf16");
         EXPECT_EQ(r.config.data_types.grad_accum_dtype.value, "bf16");
         EXPECT_EQ(r.config.checkpoint.tag_validation.value, "Fail");
         EXPECT_EQ(r.config.optimizer.type.value, "AdamW");
         EXPECT_NE(test::find(r, "scheduler.params.warmup_num_steps", "DeepSpeed only warns", Severity::Warning), nullptr);
       }},
      {"onecycle_stairs", "onecycle_stairs.json", [](LoadOptions&) {}, 4, 32, 4, 2, "", "",
       [](const LoadResult& r) { EXPECT_EQ(r.config.scheduler.cycle_first_stair_count.value, 4); }},
      {"batch_mismatch", "batch_mismatch.json", [](LoadOptions&) {}, 4, 0, 0, 0, "train_batch_size", "32 != 4 * 4 * 4"},
  };
  return v;
}

TEST(Templates, EveryTemplateAcceptedOrRefusedWithItsReason) {
  int accepted = 0, refused = 0;
  std::set<std::string> files;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    files.insert(c.file);
    LoadOptions o;
    o.world_size = c.world;
    o.world_source = WorldSizeSource::Flag;
    o.probe_paths = false;
    c.setup(o);
    const LoadResult r = load_config(std::string(ZT_TEMPLATES_DIR) + "/" + c.file, o);
    for (const auto& d : r.diagnostics.all()) EXPECT_FALSE(d.fix.empty()) << format_diagnostic(d);
    if (std::string(c.error_path).empty()) {
      ASSERT_TRUE(r.valid()) << test::dump(r);
      EXPECT_EQ(r.config.train_batch_size.value, c.T);
      EXPECT_EQ(r.config.train_micro_batch_size_per_gpu.value, c.M);
      EXPECT_EQ(r.config.gradient_accumulation_steps.value, c.G);
      EXPECT_EQ(c.T, c.M * c.G * c.world);
      ++accepted;
    } else {
      EXPECT_FALSE(r.valid());
      EXPECT_NE(test::find(r, c.error_path, c.error_text), nullptr)
          << "want " << c.error_path << ": " << c.error_text << "\n" << test::dump(r);
      ++refused;
    }
    if (c.more) c.more(r);
  }
  EXPECT_GE(files.size(), 30u);
  EXPECT_GE(cases().size(), 40u);
  std::printf("templates: %zu files, %zu cases: %d accepted, %d refused with their reason\n", files.size(), cases().size(),
              accepted, refused);
  RecordProperty("accepted", accepted);
  RecordProperty("refused", refused);
}

}  // namespace
}  // namespace zt
