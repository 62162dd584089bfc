// GPU check for the plan module (label "gpu"; exits 77 where no GPU is present): the env report
// lists the device with its memory and compute capability, query_gpu_memory agrees with it, and
// pre-flight compares a plan with the real free GPU memory.
#include <cstdio>
#include <string>

#include "runtime/plan/env_report.h"
#include "runtime/plan/gpu_memory.h"
#include "runtime/plan/machine_probe.h"

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}
}  // namespace

int main() {
  const auto mem = zt::query_gpu_memory();
  if (!mem) {
    std::printf("no GPU here: skipped\n");
    return 77;
  }
  const zt::EnvReport r = zt::collect_env_report();
  std::fputs(zt::env_report_to_text(r).c_str(), stdout);
  expect(!r.gpus.empty(), "env report lists at least one GPU");
  expect(r.cuda_driver != "no driver" && r.cuda_driver.find('.') != std::string::npos, "driver version " + r.cuda_driver);
  if (!r.gpus.empty()) {
    const auto& g = r.gpus[0];
    expect(!g.name.empty(), "GPU 0 name: " + g.name);
    expect(g.memory_bytes == mem->total_bytes, "env memory equals cudaMemGetInfo total");
    expect(g.compute_capability.size() >= 3 && g.compute_capability[0] >= '1', "compute capability " + g.compute_capability);
  }
  expect(mem->free_bytes > 0 && mem->free_bytes <= mem->total_bytes, "free <= total");

  const zt::MachineFacts f = zt::probe_machine();
  expect(f.gpu_total.has_value() && *f.gpu_total == mem->total_bytes, "probe_machine sees the GPU");
  // A 200B-parameter model at stage 0 cannot fit any single GPU; a 1M one fits.
  zt::PlanInput big;
  big.params = 200'000'000'000;
  big.precision = zt::DType::BF16;
  const zt::Diagnostics d = zt::preflight(zt::make_memory_plan(big), f, "");
  bool gpu_msg = false;
  for (const auto& e : d.all()) gpu_msg |= e.message.find("of GPU memory per rank") != std::string::npos;
  expect(gpu_msg, "preflight reports the GPU shortfall");
  std::fputs(d.format().c_str(), stdout);
  zt::PlanInput small;
  small.params = 1'000'000;
  small.precision = zt::DType::BF16;
  expect(!zt::preflight(zt::make_memory_plan(small), f, "").has_errors(), "a 1M-param plan fits");
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
