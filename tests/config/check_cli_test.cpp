// End-to-end test of `zerotrain check --json`: runs the real binary on a shipped config and on a
// broken one, and checks that stdout is exactly one JSON object of the documented shape and that
// the exit code is 0 / 2. Usage: check_cli_test <zerotrain> <configs dir>
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
