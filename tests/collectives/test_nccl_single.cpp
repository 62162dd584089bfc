// GPU test of NcclCommunicator at world size 1 (no MPI): every op and dtype on device buffers,
// ordering after the compute stream, grouped launches, stats. Exits 77 (skip) without a GPU.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_common.h"
#include "base/cuda_check.h"
#include "collectives/nccl_communicator.h"
#include "tests/collectives/coll_test_data.h"

namespace {

int g_failures = 0;
#define EXPECT(cond, what)                                                  \
  do {                                                                      \
    if (!(cond)) {                                                          \
      ++g_failures;                                                         \
      std::fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, (what).c_str()); \
    }                                                                       \
  } while (0)

std::vector<char> download(const void* d, size_t bytes, cudaStream_t s) {
  std::vector<char> h(bytes);
  if (bytes) ZT_CUDA_CHECK(cudaMemcpyAsync(h.data(), d, bytes, cudaMemcpyDeviceToHost, s));
  ZT_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace zt;
  if (cuda_device_count_or_zero() == 0) {
    std::printf("SKIP: no CUDA device visible (NCCL tests need a GPU)\n");
    return 77;
  }
  Bootstrap boot(&argc, &argv);
  if (argc > 1 && std::string(argv[1]) == "--watchdog") {
    // The compute stream is held by a 30 s host callback; the collective queued after it cannot
    // finish, so the watchdog (2 s) must abort the communicator and the process with its message.
    CommOptions o;
    o.timeout_s = 2;
    NcclCommunicator comm(boot, o);
    cudaStream_t compute;
    ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    comm.set_compute_stream(compute);
    ZT_CUDA_CHECK(cudaLaunchHostFunc(compute, [](void*) { sleep(30); }, nullptr));
    void* a;
    ZT_CUDA_CHECK(cudaMalloc(&a, 4096));
    comm.all_reduce_async(a, a, 1024, DType::F32, ReduceOp::Sum);
    sleep(20);
    std::printf("FAIL: watchdog did not fire within 20 s\n");
    return 0;
  }
  int failures_before_stats = 0;
  {
    NcclCommunicator comm(boot);
    std::printf("nccl %s on device %d, world size %d\n", nccl_version_string().c_str(), comm.device(), comm.world_size());
    cudaStream_t compute;
    ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    comm.set_compute_stream(compute);
    const size_t n = 1 << 20;
    void *a, *b;
    ZT_CUDA_CHECK(cudaMalloc(&a, n * 8));
    ZT_CUDA_CHECK(cudaMalloc(&b, n * 8));
    uint64_t salt = 1;
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I64}) {
      const size_t es = dtype_size(t);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        if (t == DType::I64 && op == ReduceOp::Avg) continue;
        for (bool in_place : {false, true}) {
          std::vector<char> in;
          test::fill_input(in, t, 0, n, 0, ++salt);
          // Upload on the compute stream; the collective must wait for it through the event.
          ZT_CUDA_CHECK(cudaMemcpyAsync(a, in.data(), n * es, cudaMemcpyHostToDevice, compute));
          ZT_CUDA_CHECK(cudaMemsetAsync(b, 0x5a, n * es, compute));
          void* dst = in_place ? a : b;
          auto h = comm.all_reduce_async(a, dst, n, t, op);
          comm.compute_wait(h);
          std::vector<char> got = download(dst, n * es, compute);
          std::vector<char> ref = test::reference_reduce(t, op, 0, n, 1, salt);
          EXPECT(got == ref, std::string("all_reduce ") + dtype_name(t) + " " + reduce_op_name(op) +
                                 (in_place ? " in-place" : ""));
          h = comm.reduce_scatter_async(a, b, n, t, op);
          h->wait();
          EXPECT(download(b, n * es, compute) == ref, std::string("reduce_scatter ") + dtype_name(t));
        }
      }
      std::vector<char> in;
      test::fill_input(in, t, 0, n, 0, ++salt);
      ZT_CUDA_CHECK(cudaMemcpyAsync(a, in.data(), n * es, cudaMemcpyHostToDevice, compute));
      auto h = comm.all_gather_async(a, b, n, t);
      comm.compute_wait(h);
      EXPECT(download(b, n * es, compute) == in, std::string("all_gather ") + dtype_name(t));
      comm.broadcast(a, n, t, 0);
      EXPECT(download(a, n * es, compute) == in, std::string("broadcast ") + dtype_name(t));
    }
    // Grouped buckets: two all-reduces fused, completing together.
    std::vector<char> x, y;
    test::fill_input(x, DType::F32, 0, 1000, 0, 91);
    test::fill_input(y, DType::F32, 0, 1000, 0, 92);
    ZT_CUDA_CHECK(cudaMemcpyAsync(a, x.data(), 4000, cudaMemcpyHostToDevice, compute));
    ZT_CUDA_CHECK(cudaMemcpyAsync(b, y.data(), 4000, cudaMemcpyHostToDevice, compute));
    comm.group_start();
    auto h1 = comm.all_reduce_async(a, a, 1000, DType::F32, ReduceOp::Sum);
    auto h2 = comm.all_reduce_async(b, b, 1000, DType::F32, ReduceOp::Avg);
    comm.group_end();
    h2->wait();
    EXPECT(h1->done(), std::string("grouped op 1 done with op 2"));
    EXPECT(download(a, 4000, compute) == x && download(b, 4000, compute) == y, std::string("grouped all_reduce"));
    comm.barrier();
    const std::string wrong = "uneven count accepted";
    bool threw = false;
    try {
      comm.reduce_scatter(a, b, 3, DType::F32, ReduceOp::Sum);  // W = 1 divides everything
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    EXPECT(!threw, std::string("reduce_scatter at world 1 must accept any count"));
    CommStats s = comm.stats();
    EXPECT(s[CommOp::AllReduce].calls == 4 + 4 + 4 + 2 + 2,  // f32, bf16, f16: 2 ops x 2 placements; i64: sum only; group: 2
           "all_reduce calls = " + std::to_string(s[CommOp::AllReduce].calls));
    EXPECT(s[CommOp::AllGather].bytes == n * (4 + 2 + 2 + 8), std::string("all_gather bytes"));
    EXPECT(s[CommOp::AllReduce].busy_seconds > 0, std::string("busy time recorded"));
    EXPECT(s[CommOp::Barrier].calls == 1, std::string("barrier counted"));
    failures_before_stats = g_failures;
    ZT_CUDA_CHECK(cudaFree(a));
    ZT_CUDA_CHECK(cudaFree(b));
    ZT_CUDA_CHECK(cudaStreamDestroy(compute));
  }
  std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", failures_before_stats);
  return g_failures ? 1 : 0;
}
