// bench_quant: in one run, int8 and int4 block quantization of fp32 and bf16 shards and their
// dequantization, at every SIMD level the CPU has, each against a memcpy moving the same number
// of bytes (read + written) in the same round: ratio = memcpy time / kernel time (1.0 = the
// kernel streams as fast as memcpy). Interleaved rounds, median and min..max; a table, then JSON lines.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/simd.h"
#include "kernels/quant/block_plan.h"
#include "kernels/quant/block_quant.h"

namespace {

using Clock = std::chrono::steady_clock;
using zt::quant::QuantBits;

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto pos = line.find(':');
      return pos == std::string::npos ? line : line.substr(pos + 2);
    }
  return "unknown";
}

double load_average() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

template <class F>
double seconds(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Stats {
  double median = 0, min = 0, max = 0;
};
Stats stats(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  Stats s;
  if (xs.empty()) return s;
  s.min = xs.front();
  s.max = xs.back();
  const size_t n = xs.size();
  s.median = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  return s;
}

// memcpy of `bytes` split into `threads` contiguous chunks (the same split as the kernels' blocks).
void parallel_memcpy(char* dst, const char* src, size_t bytes, int threads) {
#pragma omp parallel num_threads(threads)
  {
    const size_t t = size_t(omp_get_thread_num()), T = size_t(omp_get_num_threads());
    const size_t lo = bytes * t / T / 64 * 64, hi = t + 1 == T ? bytes : bytes * (t + 1) / T / 64 * 64;
    std::memcpy(dst + lo, src + lo, hi - lo);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"block quantizers against a memcpy of the same bytes"};
  size_t melems = 32;
  int rounds = 7;
  std::vector<int> thread_counts{1, omp_get_max_threads()};
  app.add_option("--melems", melems, "elements per shard, in millions")->check(CLI::Range(1, 2048));
  app.add_option("--rounds", rounds, "interleaved rounds")->check(CLI::Range(1, 100));
  app.add_option("--threads", thread_counts, "OpenMP thread counts to measure")->check(CLI::Range(1, 1024));
  size_t block = 0;
  app.add_option("--block", block, "elements per scale, a multiple of 8 (default: DeepSpeed's weight rule, "
                                   "~8,000; qgZ's gradients take the model's width, e.g. 768)");
  CLI11_PARSE(app, argc, argv);
  if (block % 8 != 0) {
    std::fprintf(stderr, "bench_quant: --block %zu is not a multiple of 8 (int4 blocks start on a byte)\n", block);
    return 2;
  }
  std::sort(thread_counts.begin(), thread_counts.end());
  thread_counts.erase(std::unique(thread_counts.begin(), thread_counts.end()), thread_counts.end());

  std::vector<zt::SimdLevel> levels;
  for (auto l : {zt::SimdLevel::Avx512, zt::SimdLevel::Avx2, zt::SimdLevel::Scalar})
    if (zt::simd_level_supported(l)) levels.push_back(l);

  const size_t n = melems * 1000000;
  const zt::quant::BlockPlan plan = block ? zt::quant::BlockPlan(1, n, block) : zt::quant::BlockPlan(1, n);
  std::vector<float> x(n), out(n);
  std::vector<uint16_t> xb(n), outb(n);
  std::vector<uint8_t> q(n);
  std::vector<float> scales(plan.blocks_per_shard());
  const size_t probe_max = (4 * n + n + 4 * scales.size()) / 2 + 64;  // half the largest traffic of one pass
  std::vector<char> src(probe_max), dst(probe_max);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {  // first touch from the threads that will use the pages
    x[i] = 1e-3f * float(int(i % 2001) - 1000) * (1.0f + float(i % 7));
    xb[i] = uint16_t(0x3c00u + (i % 977));
    out[i] = 0;
    outb[i] = 0;
    q[i] = 0;
  }
  std::memset(src.data(), 1, src.size());
  std::memset(dst.data(), 0, dst.size());
  const std::string machine = cpu_model();
  const double load_start = load_average();
  std::printf("bench_quant: %zu elements, block %zu (%zu blocks), %d rounds, machine: %s (%d hardware threads), "
              "load average %.2f\n",
              n, plan.block_size(), plan.blocks_per_shard(), rounds, machine.c_str(), omp_get_num_procs(), load_start);

  struct Variant {
    QuantBits bits;
    bool bf16;
  };
  std::vector<Variant> variants;
  for (QuantBits b : {QuantBits::Int8, QuantBits::Int4})
    for (bool bf16 : {false, true}) variants.push_back({b, bf16});

  // key: level/threads/bits/dtype/op -> times and ratios
  std::map<std::string, std::vector<double>> t_of, ratio_of;
  std::map<std::string, double> bytes_of;
  auto key = [](zt::SimdLevel l, int T, QuantBits b, bool bf16, const std::string& op) {
    return std::string(zt::simd_level_name(l)) + "/" + std::to_string(T) + "/" + zt::quant::quant_bits_name(b) +
           "/" + (bf16 ? "bf16" : "fp32") + "/" + op;
  };
  for (int r = 0; r < rounds; ++r) {
    for (int T : thread_counts) {
      omp_set_num_threads(T);
      for (size_t li = 0; li < levels.size(); ++li) {
        const auto level = levels[(li + size_t(r)) % levels.size()];  // rotate which level runs first
        zt::cpu::set_simd_level(level);
        for (const auto& v : variants) {
          const zt::quant::QuantLayout l = plan.shard_layout(v.bits);
          const double in_bytes = double(n) * (v.bf16 ? 2 : 4), qb = double(l.q_bytes()) + 4.0 * double(l.blocks());
          const double bytes_q = in_bytes + qb, bytes_d = qb + in_bytes;
          auto do_q = [&] {
            if (v.bf16) zt::quant::quantize_bf16(xb.data(), l, q.data(), scales.data());
            else zt::quant::quantize(x.data(), l, q.data(), scales.data());
          };
          auto do_d = [&] {
            if (v.bf16) zt::quant::dequantize_bf16(q.data(), scales.data(), l, outb.data());
            else zt::quant::dequantize(q.data(), scales.data(), l, out.data());
          };
          const double tq = seconds(do_q), td = seconds(do_d);
          const double mq = seconds([&] { parallel_memcpy(dst.data(), src.data(), size_t(bytes_q / 2), T); });
          const double md = seconds([&] { parallel_memcpy(dst.data(), src.data(), size_t(bytes_d / 2), T); });
          const std::pair<const char*, std::array<double, 3>> rows[] = {
              {"quantize", {tq, mq, bytes_q}}, {"dequantize", {td, md, bytes_d}}, {"roundtrip", {tq + td, mq + md, bytes_q + bytes_d}}};
          for (const auto& [op, tv] : rows) {
            const std::string k = key(level, T, v.bits, v.bf16, op);
            t_of[k].push_back(tv[0]);
            ratio_of[k].push_back(tv[1] / tv[0]);
            bytes_of[k] = tv[2];
            t_of[k + "/memcpy"].push_back(tv[1]);
          }
        }
      }
    }
  }

  std::printf("\n%-7s %7s %5s %5s %-10s %10s %12s %8s %16s\n", "level", "threads", "bits", "in", "op", "GB/s",
              "memcpy GB/s", "ratio", "ratio min..max");
  std::vector<std::string> json;
  double worst_roundtrip = 1e9;
  for (int T : thread_counts)
    for (auto level : levels)
      for (const auto& v : variants)
        for (const char* op : {"quantize", "dequantize", "roundtrip"}) {
          const std::string k = key(level, T, v.bits, v.bf16, op);
          const Stats ts = stats(t_of[k]), ms = stats(t_of[k + "/memcpy"]), rs = stats(ratio_of[k]);
          const double gbps = bytes_of[k] / ts.median / 1e9, mgbps = bytes_of[k] / ms.median / 1e9;
          const char* dt = v.bf16 ? "bf16" : "fp32";
          std::printf("%-7s %7d %5s %5s %-10s %10.2f %12.2f %8.3f %9.3f..%.3f\n", zt::simd_level_name(level), T,
                      zt::quant::quant_bits_name(v.bits), dt, op, gbps, mgbps, rs.median, rs.min, rs.max);
          char buf[768];
          std::snprintf(buf, sizeof buf,
                        "{\"bench\":\"quant\",\"machine\":\"%s\",\"level\":\"%s\",\"threads\":%d,\"bits\":\"%s\","
                        "\"input\":\"%s\",\"op\":\"%s\",\"elements\":%zu,\"block\":%zu,\"rounds\":%d,"
                        "\"median_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,\"bytes\":%.0f,\"gbps\":%.3f,"
                        "\"memcpy_gbps\":%.3f,\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f,"
                        "\"ratio_to\":\"memcpy of the same bytes read+written, same round and thread count\","
                        "\"loadavg_start\":%.2f}",
                        machine.c_str(), zt::simd_level_name(level), T, zt::quant::quant_bits_name(v.bits), dt, op,
                        n, plan.block_size(), rounds, ts.median, ts.min, ts.max, bytes_of[k], gbps, mgbps, rs.median,
                        rs.min, rs.max, load_start);
          json.push_back(buf);
          if (std::string(op) == "roundtrip" && level == levels.front() && T == thread_counts.back())
            worst_roundtrip = std::min(worst_roundtrip, rs.median);
        }
  std::printf("\nworst round trip at %s, %d threads: %.1f%% of memcpy's bandwidth (goal >= 80%%): %s\n"
              "load average %.2f at start, %.2f at end (other work on the machine makes every ratio noisier)\n\n",
              zt::simd_level_name(levels.front()), thread_counts.back(), 100 * worst_roundtrip,
              worst_roundtrip >= 0.8 ? "met" : "NOT met", load_start, load_average());
  for (const auto& j : json) std::printf("%s\n", j.c_str());
  return 0;
}
