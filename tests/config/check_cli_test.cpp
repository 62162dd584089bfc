// End-to-end test of `zerotrain check --json`: runs the real binary on a shipped config and on a
// broken one, and checks that stdout is exactly one JSON object of the documented shape and that
// the exit code is 0 / 2. Usage: check_cli_test <zerotrain> <configs dir>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

int failures = 0;
#define EXPECT(cond)                                                 \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                    \
    }                                                                \
  } while (0)

bool expect_object(const nlohmann::json& j, int line) {
  if (j.is_object()) return true;
  std::fprintf(stderr, "%s:%d: FAILED: not a JSON object\n", __FILE__, line);
  ++failures;
  return false;
}
#define EXPECT_OBJECT(j) expect_object(j, __LINE__)

int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <zerotrain> <configs dir>\n", argv[0]);
    return 2;
  }
  const std::string zt = argv[1], dir = argv[2];
  const std::string flags =
      " --world-size 2 --model small --micro-batch 4 --grad-accum 1 --lr 3e-4 --weight-decay 0.1 --adam-beta1 0.9"
      " --adam-beta2 0.95 --adam-eps 1e-8 --max-grad-norm 1.0 --warmup-steps 10 --steps 100 --json";
  std::string out;
  // An HF Trainer template: every tunable comes from the flags.
  int rc = run(zt + " check --config " + dir + "/hf/zero2.json" + flags, out);
  EXPECT(rc == 0);
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  EXPECT(j.is_object());
  if (j.is_object()) {
    EXPECT(j["valid"] == true);
    EXPECT(j["errors"].is_array() && j["errors"].empty());
    EXPECT(j["warnings"].is_array());
    EXPECT(j["resolved"]["train_batch_size"] == 8);
    EXPECT(j["resolved"]["train_micro_batch_size_per_gpu"] == 4);
    EXPECT(j["resolved"]["gradient_accumulation_steps"] == 1);
    EXPECT(j["resolved"]["world_size"] == 2);
    EXPECT(j["resolved"]["zero_optimization"]["stage"] == 2);
    EXPECT(j["memory"].is_object());
  }

  // A Llama preset: Ψ and the activations are Llama's (Llama::activation_bytes_for), not GPT-2's of
  // the same width. smollm2-135m at micro-batch 4 × 2048, fp32 working type on CPU ranks: N = 8192
  // rows, C = H·hd = 576, q/k/v rows 960, I = 1536, Vp = 49152, 30 layers; the CPU attention keeps
  // (B·H·T + N·C)·4 bytes per block. Tokens and targets 2·N·4, RoPE table 2·2048·32·4, residual
  // stream 31·N·C·4, per block N·(3C + 960 + C + 3I)·4 + 2·N·4 + saved, head N·C·4 + N·4 + N·Vp·4 +
  // N·4, gradient scratch N·(2C + C + 960 + 3I)·4.
  {
    std::string llama_flags = flags;
    llama_flags.replace(llama_flags.find("--model small"), 13, "--model smollm2-135m");
    run(zt + " check --config " + dir + "/hf/zero2.json" + llama_flags, out);
    j = nlohmann::json::parse(out, nullptr, false);
    EXPECT(j.is_object());
    if (j.is_object()) {
      EXPECT(j["memory"]["input"]["params"] == 134515008);
      const int64_t N = 8192, C = 576, Q = 960, I = 1536, Vp = 49152, L = 30;
      const int64_t saved = (4 * 9 * 2048 + N * C) * 4;
      const int64_t want = 2 * N * 4 + 2 * 2048 * 32 * 4 + (L + 1) * N * C * 4 +
                           L * (N * (3 * C + Q + C + 3 * I) * 4 + 2 * N * 4 + saved) + N * C * 4 + N * 4 +
                           N * Vp * 4 + N * 4 + N * (2 * C + C + Q + 3 * I) * 4;
      EXPECT(j["memory"]["device_per_rank"]["activations"] == want);
    }
  }

  // --save: the plan holds each rank's checkpoint snapshot, (4 + 8)·Ψ/2 for fp32 AdamW at stage 2
  // over two ranks, in host RAM; and a host too small for it names --save and its folder (exit 3).
  rc = run(zt + " check --config " + dir + "/hf/zero2.json" + flags + " --save /tmp/zt_check_ck", out);
  EXPECT(rc == 0);
  j = nlohmann::json::parse(out, nullptr, false);
  if (EXPECT_OBJECT(j)) {
    const int64_t psi = j["memory"]["input"]["params"].get<int64_t>();
    EXPECT(j["memory"]["checkpoint_snapshot_per_rank"].get<int64_t>() == (12 * psi + 1) / 2);
    EXPECT(j["memory"]["host_per_rank"].get<int64_t>() >= (12 * psi + 1) / 2);
  }
  rc = run(zt + " check --config " + dir + "/hf/zero2.json" + flags + " --backend cpu --host-ram 8M"
                   " --save /tmp/zt_check_ck", out);
  EXPECT(rc == 3);
  j = nlohmann::json::parse(out, nullptr, false);
  bool named = false;
  if (EXPECT_OBJECT(j))
    for (const auto& e : j["fit_errors"]) named = named || (e["path"] == "--save" && e["value"] == "/tmp/zt_check_ck");
  EXPECT(named);

  const std::string bad = "zt_check_cli_bad.json";
  std::ofstream(bad) << R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
                          "fp16": {"enabled": true}, "bf16": {"enabled": true}, "zero_optimizaton": {}})";
  rc = run(zt + " check --config " + bad + " --world-size 4 --json", out);
  EXPECT(rc == 2);
  j = nlohmann::json::parse(out, nullptr, false);
  EXPECT(j.is_object());
  if (j.is_object()) {
    EXPECT(j["valid"] == false);
    EXPECT(j["errors"].size() == 3);
    bool batch = false, typo = false;
    for (const auto& e : j["errors"]) {
      const std::string m = e.value("message", "");
      batch = batch || (e["path"] == "train_batch_size" && m.find("32 != 4 * 4 * 4") != std::string::npos);
      typo = typo || (e["path"] == "zero_optimizaton" && m.find("zero_optimization") != std::string::npos);
    }
    EXPECT(batch);
    EXPECT(typo);
  }
  std::remove(bad.c_str());
  rc = run(zt + " check --config /nonexistent.json --json", out);
  EXPECT(rc == 2);
  EXPECT(nlohmann::json::parse(out, nullptr, false).is_object());
  std::printf("check_cli_test: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
