// bench_collectives: time all-reduce, reduce-scatter and all-gather of our MPI communicator (and the
// NCCL one where a GPU is present) from 4 KiB up to --max-bytes, each next to the MPI library's own
// op on the same buffer (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather), interleaved; prints
// an nccl-tests-style table and JSON lines. Across nodes (ranks placed node by node) our communicator
// is told the layout, as the engine tells it, and runs its two-level collectives; with --link-rate
// (the inter-node link's measured bytes per second, bench/collectives/cluster_bench.sh) each row also
// gets the time the link needs for the bytes the op must send across it (each node's share, each
// direction apart) and the ratio of the measured time to it.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_common.h"
#include "collectives/factory.h"
#if ZT_HAVE_MPI
#include <mpi.h>

#include "base/mpi_check.h"
#include "collectives/mpi_communicator.h"
#include "collectives/topology.h"
#endif
#if ZT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#include "collectives/nccl_communicator.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

std::string machine_json(const zt::Bootstrap& boot) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string cpu = "unknown";
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  return "{\"host\":\"" + std::string(host) + "\",\"cpu\":\"" + cpu + "\",\"cores\":" +
         std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + ",\"ranks\":" + std::to_string(boot.world_size()) +
         ",\"nodes\":" + std::to_string(boot.node_count()) + "}";
}

double bus_factor(zt::CommOp op, int n) {
  if (op == zt::CommOp::AllReduce) return 2.0 * (n - 1) / n;
  return double(n - 1) / n;  // reduce-scatter, all-gather
}

struct Row {
  std::string impl, op;
  size_t bytes = 0;
  double seconds = 0;  // per call: median over rounds of the slowest rank's mean
  double link_s = 0;   // the time each node's link needs for the op's inter-node bytes (0: one node or no rate)
};

// Runs fn `iters` times between barriers and returns the slowest rank's mean seconds per call.
double time_block(const zt::Bootstrap& boot, const std::function<void()>& fn, const std::function<void()>& sync,
                  int iters) {
  fn();  // untimed: whichever op ran before left the caches and the library's queues its own way
  sync();
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  sync();
  double s = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
#if ZT_HAVE_MPI
  if (boot.mpi_active()) ZT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
#endif
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  zt::Bootstrap boot(&argc, &argv);
  CLI::App app{"Collective bus bandwidth (nccl-tests definitions) vs the MPI library's MPI_Allreduce"};
  size_t min_bytes = 4 << 10, max_bytes = size_t(256) << 20;
  int rounds = 5, step = 4;
  bool no_nccl = false;
  double link_rate = 0, link_latency_us = 0;
  app.add_option("--link-rate", link_rate, "the inter-node link's measured rate, bytes/s (each direction): adds the "
                                           "time the link needs for each op's inter-node bytes");
  app.add_option("--link-latency-us", link_latency_us, "the inter-node link's one-way latency, us: the link's time "
                                                       "for an op gains one trip")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-bytes", min_bytes, "smallest buffer (bytes, full un-sharded size)");
  app.add_option("--max-bytes", max_bytes, "largest buffer (bytes); default 256 MiB");
  app.add_option("--step", step, "size multiplier between rows")->check(CLI::Range(2, 16));
  app.add_option("--rounds", rounds, "interleaved rounds per size; the median is reported")->check(CLI::Range(1, 50));
  app.add_flag("--no-nccl", no_nccl, "skip the NCCL communicator even when a GPU is present");
  CLI11_PARSE(app, argc, argv);

  const int w = boot.world_size(), me = boot.rank();
  const std::string machine = machine_json(boot);
  std::vector<Row> rows;
  const zt::CommOp ops[] = {zt::CommOp::AllReduce, zt::CommOp::ReduceScatter, zt::CommOp::AllGather};
  auto iters_for = [](size_t bytes) { return int(std::clamp<size_t>((size_t(16) << 20) / bytes, 2, 50)); };

#if ZT_HAVE_MPI
  if (boot.mpi_active()) {
    zt::MpiCommunicator comm(boot);
    // Several hosts of as many ranks each, ranks node by node: the layout the engine gives the world
    // (node = rank / n); every rank decides alike (the hosts' sizes compared job-wide).
    int sizes[2] = {boot.local_size(), -boot.local_size()};
    ZT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    const int n = sizes[0], nodes = w / std::max(1, n);
    const bool layered = boot.node_count() > 1 && boot.hosts_hold_consecutive_ranks() && sizes[0] == -sizes[1] &&
                         w % n == 0;
    zt::NodeTopology topo{w, layered ? n : w};
    if (layered) comm.set_node_layout(topo.node_of_each_rank());
    std::vector<int> all(static_cast<size_t>(w));
    for (int r = 0; r < w; ++r) all[size_t(r)] = r;
    const zt::LinkModel links(topo, all);
    // Seconds each node's link needs for a call's inter-node bytes (the job's, spread over the nodes).
    auto link_s = [&](zt::CommOp op, size_t bytes) {
      if (!layered || link_rate <= 0) return 0.0;
      return double(links.split(op, bytes).inter) / double(nodes) / link_rate + link_latency_us * 1e-6;
    };
    MPI_Comm peer;
    ZT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &peer));
    auto sync = [&] { comm.barrier(); };
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= size_t(step)) {
      const size_t count = bytes / 4 / size_t(w) * size_t(w);
      std::vector<float> a(count, 1.0f + float(me)), b(count, 0.0f);
      const int iters = iters_for(bytes);
      const int shard = int(count / size_t(w));
      std::vector<double> t_ours[3], t_peer[3];
      for (int r = 0; r < rounds; ++r) {
        // Interleaved: each of our ops and the library's own op of the same buffer in every round,
        // which goes first alternating between rounds.
        for (int k = 0; k < 3; ++k) {
          std::function<void()> fn, lib;
          if (k == 0) {
            fn = [&] { comm.all_reduce(a.data(), b.data(), count, zt::DType::F32, zt::ReduceOp::Sum); };
            lib = [&] { ZT_MPI_CHECK(MPI_Allreduce(a.data(), b.data(), int(count), MPI_FLOAT, MPI_SUM, peer)); };
          }
          if (k == 1) {
            fn = [&] { comm.reduce_scatter(a.data(), b.data(), count, zt::DType::F32, zt::ReduceOp::Sum); };
            lib = [&] { ZT_MPI_CHECK(MPI_Reduce_scatter_block(a.data(), b.data(), shard, MPI_FLOAT, MPI_SUM, peer)); };
          }
          if (k == 2) {
            fn = [&] { comm.all_gather(a.data(), b.data(), count, zt::DType::F32); };
            lib = [&] { ZT_MPI_CHECK(MPI_Allgather(a.data(), shard, MPI_FLOAT, b.data(), shard, MPI_FLOAT, peer)); };
          }
          if (r % 2 == 0) t_ours[k].push_back(time_block(boot, fn, sync, iters));
          t_peer[k].push_back(time_block(boot, lib, sync, iters));
          if (r % 2 == 1) t_ours[k].push_back(time_block(boot, fn, sync, iters));
        }
      }
      const char* lib_name[3] = {"MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather"};
      for (int k = 0; k < 3; ++k) {
        const double need = link_s(ops[k], count * 4);
        rows.push_back({"mpi", zt::comm_op_name(ops[k]), count * 4, median(t_ours[k]), need});
        rows.push_back({lib_name[k], zt::comm_op_name(ops[k]), count * 4, median(t_peer[k]), need});
      }
    }
    ZT_MPI_CHECK(MPI_Comm_free(&peer));
  }
#endif
#if ZT_HAVE_CUDA
  if (!no_nccl && zt::cuda_device_count_or_zero() > 0) {
    zt::NcclCommunicator comm(boot);
    auto sync = [&] { ZT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(comm.comm_stream()))); };
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= size_t(step)) {
      const size_t count = bytes / 4 / size_t(w) * size_t(w);
      void *a, *b;
      ZT_CUDA_CHECK(cudaMalloc(&a, count * 4 + 4));
      ZT_CUDA_CHECK(cudaMalloc(&b, count * 4 + 4));
      ZT_CUDA_CHECK(cudaMemset(a, 0, count * 4));
      ZT_CUDA_CHECK(cudaDeviceSynchronize());  // set-up only, outside the timed loops
      const int iters = iters_for(bytes) * 4;
      std::vector<double> t[3];
      for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < 3; ++k) {
          std::function<void()> fn;
          if (k == 0) fn = [&] { comm.all_reduce_async(a, b, count, zt::DType::F32, zt::ReduceOp::Sum); };
          if (k == 1) fn = [&] { comm.reduce_scatter_async(a, b, count, zt::DType::F32, zt::ReduceOp::Sum); };
          if (k == 2) fn = [&] { comm.all_gather_async(a, b, count, zt::DType::F32); };
          t[k].push_back(time_block(boot, fn, sync, iters));
        }
      for (int k = 0; k < 3; ++k) rows.push_back({"nccl", zt::comm_op_name(ops[k]), count * 4, median(t[k])});
      ZT_CUDA_CHECK(cudaFree(a));
      ZT_CUDA_CHECK(cudaFree(b));
    }
  }
#endif
  if (me != 0) return 0;
  if (rows.empty()) {
    std::printf("nothing to measure: world size %d without MPI and no GPU (run under mpirun -np 2 or more)\n", w);
    return 0;
  }
  // The peer for a row of ours: the library's own op at the same size (its time; 0 if none).
  auto peer_of = [&](const Row& mine) -> const Row* {
    if (mine.impl != "mpi") return nullptr;
    for (const Row& r : rows)
      if (r.impl.rfind("MPI_", 0) == 0 && r.op == mine.op && r.bytes == mine.bytes) return &r;
    return nullptr;
  };
  std::printf("# %s, %d ranks on %d node(s); %s\n", "collectives", w, boot.node_count(), zt::collectives_versions().c_str());
  std::printf("# busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (reduce_scatter, all_gather); time = median of %d "
              "interleaved rounds of the slowest rank\n",
              rounds);
  std::printf("# vs MPI: the library's op time over ours (>= 1: ours is as fast); vs link: our time over the time the\n"
              "# inter-node link needs for the op's bytes across it at --link-rate (each node's share), plus one\n"
              "# one-way trip of %.0f us (--link-latency-us)\n",
              link_latency_us);
  std::printf("%-25s %-15s %12s %11s %11s %10s %10s %8s %12s %8s\n", "impl", "op", "size(B)", "count", "time(us)",
              "algbw", "busbw", "vs MPI", "link(us)", "vs link");
  auto op_of = [](const Row& r) {
    return r.op == "all_reduce" ? zt::CommOp::AllReduce : r.op == "reduce_scatter" ? zt::CommOp::ReduceScatter : zt::CommOp::AllGather;
  };
  for (const Row& r : rows) {
    const double algbw = double(r.bytes) / r.seconds / 1e9, busbw = algbw * bus_factor(op_of(r), w);
    const Row* p = peer_of(r);
    char vs[32] = "-", link[32] = "-", vl[32] = "-";
    if (p) std::snprintf(vs, sizeof vs, "%.2f", p->seconds / r.seconds);
    if (r.link_s > 0) {
      std::snprintf(link, sizeof link, "%.1f", r.link_s * 1e6);
      std::snprintf(vl, sizeof vl, "%.2f", r.seconds / r.link_s);
    }
    std::printf("%-25s %-15s %12zu %11zu %11.1f %10.3f %10.3f %8s %12s %8s\n", r.impl.c_str(), r.op.c_str(), r.bytes,
                r.bytes / 4, r.seconds * 1e6, algbw, busbw, vs, link, vl);
  }
  for (const Row& r : rows) {
    const double algbw = double(r.bytes) / r.seconds / 1e9, busbw = algbw * bus_factor(op_of(r), w);
    const Row* p = peer_of(r);
    std::printf("{\"bench\":\"collectives\",\"machine\":%s,\"impl\":\"%s\",\"op\":\"%s\",\"dtype\":\"f32\",\"bytes\":%zu,"
                "\"count\":%zu,\"time_us\":%.3f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f,\"peer\":%s,"
                "\"ratio_vs_peer\":%s,\"link_rate_Bps\":%.0f,\"link_us\":%.3f,\"ratio_vs_link\":%s}\n",
                machine.c_str(), r.impl.c_str(), r.op.c_str(), r.bytes, r.bytes / 4, r.seconds * 1e6, algbw, busbw,
                p ? ("\"" + p->impl + "\"").c_str() : "null", p ? std::to_string(p->seconds / r.seconds).c_str() : "null",
                link_rate, r.link_s * 1e6, r.link_s > 0 ? std::to_string(r.seconds / r.link_s).c_str() : "null");
  }
  return 0;
}
