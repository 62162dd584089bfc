// bench_cpu_adam: in one run, the Adam-shaped memory probes and every CPU Adam path at 1..all
// threads (interleaved rounds, median and min..max, ratio to the faster probe of the same round),
// then the fused step + bf16 copy against a step followed by a separate conversion pass.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/cpu_adam/stream_probe.h"
#include "offload/cpu_adam.h"
#include "offload/pinned_memory.h"

namespace {

using Clock = std::chrono::steady_clock;
using zt::SimdLevel;

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      return pos == std::string::npos ? line : line.substr(pos + 2);
    }
  }
  return "unknown";
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

template <class F>
double seconds(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The 1-minute load average (other processes on the machine skew every row; it is printed).
double load_average() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU Adam paths against the memory-bandwidth limit of the same access pattern"};
  size_t mparams = 64;
  int rounds = 9;
  int max_threads = omp_get_max_threads();
  std::vector<std::string> path_names;
  app.add_option("--mparams", mparams, "shard size in millions of fp32 params (>= 50 for the bar)")->check(CLI::Range(1, 4096));
  app.add_option("--rounds", rounds, "interleaved rounds (each runs every variant once)")->check(CLI::Range(1, 100));
  app.add_option("--max-threads", max_threads, "largest thread count measured")->check(CLI::Range(1, 1024));
  app.add_option("--paths", path_names, "paths to measure (default: every path this CPU supports)");
  CLI11_PARSE(app, argc, argv);

  std::vector<SimdLevel> paths;
  if (path_names.empty()) {
    for (SimdLevel p : {SimdLevel::Avx512, SimdLevel::Avx2, SimdLevel::Scalar})
      if (zt::simd_level_supported(p)) paths.push_back(p);
  } else {
    for (const auto& n : path_names) paths.push_back(zt::checked_simd_level(zt::parse_simd_level(n), "--paths " + n));
  }
  const size_t n = mparams * 1000000;
  const std::string machine = cpu_model();
  const double bytes_adam = 28.0 * double(n), bytes_fused = 30.0 * double(n);

  zt::offload::PinnedAllocator alloc({.pin_memory = false, .use_cuda = false, .warn = {}, .lock_fn = {}});
  auto p = alloc.allocate(n * 4), g = alloc.allocate(n * 4), m = alloc.allocate(n * 4), v = alloc.allocate(n * 4);
  auto low = alloc.allocate(n * 2);
  float *P = p.as<float>(), *G = g.as<float>(), *M = m.as<float>(), *V = v.as<float>();
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {  // first touch from the threads that will use the pages
    P[i] = 0.01f * float(i % 1000);
    G[i] = 1e-3f * float(int(i % 17) - 8);
    M[i] = 0.0f;
    V[i] = 0.0f;
  }
  const double load_start = load_average();
  std::printf("bench_cpu_adam: %zu params (%.2f GiB in p,g,m,v), %d rounds, machine: %s, load average %.2f\n", n,
              double(n) * 16 / (1 << 30), rounds, machine.c_str(), load_start);

  zt::AdamWHyper h;
  h.weight_decay = 0.01f;
  int step = 1;
  auto adam = [&](SimdLevel path, int threads, void* out) {
    h.step = step++;
    zt::offload::cpu_adam_step(P, G, M, V, n, h, {out, zt::DType::BF16}, {path, threads});
  };

  std::vector<int> thread_counts;
  for (int t = 1; t <= max_threads; ++t) thread_counts.push_back(t);
  // Warm-up: one pass of everything (page faults, frequency).
  zt::bench::stream_probe(P, G, M, V, n, max_threads);
  zt::bench::stream_probe(P, G, M, V, n, max_threads, zt::bench::ProbeKind::Prefetch);
  for (SimdLevel path : paths) adam(path, max_threads, nullptr);

  // time[variant][threads] per round; variant a probe or a path name. Two probes run every round
  // (the compiler's loop and the Adam's loop structure with prefetch); the ceiling of a round is
  // the faster of the two, and every ratio (the probes' own too) is ceiling time / variant time.
  const zt::bench::ProbeKind probes[] = {zt::bench::ProbeKind::Plain, zt::bench::ProbeKind::Prefetch};
  constexpr size_t kProbes = 2;
  std::map<std::string, std::map<int, std::vector<double>>> t_of;
  std::map<std::string, std::map<int, std::vector<double>>> ratio_of;
  for (int r = 0; r < rounds; ++r) {
    for (int T : thread_counts) {
      // The order rotates every round so no variant always runs first (A B C, B C A, ...).
      const size_t nv = paths.size() + kProbes;
      std::vector<double> t(nv);
      for (size_t j = 0; j < nv; ++j) {
        const size_t k = (j + static_cast<size_t>(r)) % nv;  // k < kProbes: probes[k], else paths[k-kProbes]
        if (k < kProbes) t[k] = seconds([&] { zt::bench::stream_probe(P, G, M, V, n, T, probes[k]); });
        else t[k] = seconds([&] { adam(paths[k - kProbes], T, nullptr); });
      }
      const double ceiling = std::min(t[0], t[1]);
      for (size_t k = 0; k < nv; ++k) {
        const std::string name = k < kProbes ? zt::bench::probe_kind_name(probes[k])
                                             : zt::simd_level_name(paths[k - kProbes]);
        t_of[name][T].push_back(t[k]);
        ratio_of[name][T].push_back(ceiling / t[k]);
      }
    }
  }

  // Fused step + bf16 copy vs step then a separate conversion pass, best path, all threads.
  const SimdLevel best = paths.front();
  const int T = max_threads;
  std::vector<double> t_fused, t_separate, fuse_ratio;
  for (int r = 0; r < rounds; ++r) {
    auto fused = [&] { return seconds([&] { adam(best, T, low.data()); }); };
    auto separate = [&] {
      return seconds([&] {
        adam(best, T, nullptr);
        zt::offload::convert_f32(low.data(), zt::DType::BF16, P, n, {best, T});
      });
    };
    double tf, ts;
    if (r % 2) {
      ts = separate();
      tf = fused();
    } else {
      tf = fused();
      ts = separate();
    }
    t_fused.push_back(tf);
    t_separate.push_back(ts);
    fuse_ratio.push_back(ts / tf);
  }

  std::printf("\n%-8s %7s %12s %18s %10s %18s\n", "variant", "threads", "Gparams/s", "GB/s (28 B/param)",
              "ratio", "ratio min..max");
  std::vector<std::string> json;
  double best_ratio = 0;
  std::string best_name;
  std::vector<std::string> order{zt::bench::probe_kind_name(probes[0]), zt::bench::probe_kind_name(probes[1])};
  for (SimdLevel path : paths) order.push_back(zt::simd_level_name(path));
  for (int Tn : thread_counts) {
    for (const auto& name : order) {
      const Stats ts = stats(t_of[name][Tn]);
      const Stats rs = stats(ratio_of[name][Tn]);
      const double pps = double(n) / ts.median, gbps = bytes_adam / ts.median / 1e9;
      std::printf("%-8s %7d %12.3f %18.2f %10.3f %11.3f..%.3f\n", name.c_str(), Tn, pps / 1e9, gbps, rs.median,
                  rs.min, rs.max);
      char buf[640];
      std::snprintf(buf, sizeof buf,
                    "{\"bench\":\"cpu_adam\",\"machine\":\"%s\",\"variant\":\"%s\",\"threads\":%d,\"params\":%zu,"
                    "\"rounds\":%d,\"median_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,\"params_per_s\":%.4g,"
                    "\"gbps\":%.3f,\"bytes_per_param\":28,\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f,"
                    "\"ratio_to\":\"faster of probe and probe_pf, same round and thread count\",\"loadavg_start\":%.2f}",
                    json_escape(machine).c_str(), name.c_str(), Tn, n, rounds, ts.median, ts.min, ts.max, pps, gbps,
                    rs.median, rs.min, rs.max, load_start);
      json.push_back(buf);
      if (name.rfind("probe", 0) != 0 && Tn == max_threads && rs.median > best_ratio) {
        best_ratio = rs.median;
        best_name = name;
      }
    }
  }
  const Stats fs = stats(t_fused), ss = stats(t_separate), fr = stats(fuse_ratio);
  std::printf("\nfused step + bf16 copy (%s, %d threads): %.2f GB/s (30 B/param), median %.4f s; step then "
              "convert: median %.4f s\n",
              zt::simd_level_name(best), T, bytes_fused / fs.median / 1e9, fs.median, ss.median);
  std::printf("fusing speed-up (separate / fused): %.3f (min..max %.3f..%.3f) -> %s\n", fr.median, fr.min, fr.max,
              fr.median > 1.0 ? "fused wins" : "FUSED DOES NOT WIN");
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "{\"bench\":\"cpu_adam\",\"machine\":\"%s\",\"variant\":\"fused_bf16\",\"path\":\"%s\",\"threads\":%d,"
                "\"params\":%zu,\"fused_median_s\":%.6f,\"separate_median_s\":%.6f,\"ratio\":%.4f,\"ratio_min\":%.4f,"
                "\"ratio_max\":%.4f,\"ratio_to\":\"step then separate conversion pass (>1: fused faster)\"}",
                json_escape(machine).c_str(), zt::simd_level_name(best), T, n, fs.median, ss.median,
                fr.median, fr.min, fr.max);
  json.push_back(buf);
  const double load_end = load_average();
  std::printf("\nbest path at %d threads: %s at %.1f%% of the faster probe (median; target >= 95%%): %s\n"
              "load average %.2f at start, %.2f at end (other work on the machine makes every ratio noisier)\n\n",
              max_threads, best_name.c_str(), 100 * best_ratio, best_ratio >= 0.95 ? "met" : "NOT met", load_start,
              load_end);
  for (const auto& j : json) std::printf("%s\n", j.c_str());
  return 0;
}
