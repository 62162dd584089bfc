// bench_nvme: write and read GB/s at a path through the swapper (io_uring, O_DIRECT, the given aio
// settings) against a peer measured in the same run: synchronous O_DIRECT pwrite/pread of the
// same blocks on one thread. Rounds are interleaved; medians with min..max; ratio = aio / peer.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "offload/nvme_swapper.h"
#include "offload/pinned_memory.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace zt::offload;

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// What block device backs `path`, and whether it is an NVMe drive.
std::string storage_of(const std::string& path, bool& is_nvme) {
  is_nvme = false;
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return "unknown";
  if (major(st.st_dev) == 0) return "no block device (tmpfs or another memory/virtual file system)";
  char link[PATH_MAX] = {0};
  const std::string sys = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  const ssize_t len = readlink(sys.c_str(), link, sizeof link - 1);
  std::string name = len > 0 ? std::filesystem::path(std::string(link, static_cast<size_t>(len))).filename().string() : "?";
  is_nvme = name.rfind("nvme", 0) == 0;
  return name + (is_nvme ? " (NVMe)" : " (not an NVMe device: a virtual or other disk)");
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"NVMe swap throughput with the configured aio settings vs synchronous O_DIRECT"};
  std::string path = "/tmp";
  size_t size_mib = 512, chunk_mib = 64;
  int rounds = 3;
  AioConfig aio;
  size_t block_kib = aio.block_size / 1024;
  app.add_option("--path", path, "directory to test (the nvme_path)");
  app.add_option("--size-mib", size_mib, "bytes moved per measurement, MiB")->check(CLI::Range(1, 1 << 20));
  app.add_option("--subgroup-mib", chunk_mib, "sub-group size, MiB")->check(CLI::Range(1, 1 << 16));
  app.add_option("--rounds", rounds, "interleaved rounds")->check(CLI::Range(1, 50));
  app.add_option("--block-kib", block_kib, "aio.block_size in KiB")->check(CLI::Range(4, 1 << 20));
  app.add_option("--queue-depth", aio.queue_depth, "aio.queue_depth");
  app.add_option("--intra-op", aio.intra_op_parallelism, "aio.intra_op_parallelism");
  app.add_flag("--single-submit", aio.single_submit, "aio.single_submit");
  bool no_overlap = false;
  app.add_flag("--no-overlap", no_overlap, "aio.overlap_events = false");
  CLI11_PARSE(app, argc, argv);
  aio.block_size = block_kib * 1024;
  aio.overlap_events = !no_overlap;

  try {
    bool is_nvme = false;
    const std::string storage = storage_of(path, is_nvme);
    const size_t sub = chunk_mib << 20, K = std::max<size_t>(1, (size_mib << 20) / sub);
    const double total = double(K * sub);
    std::printf("bench_nvme: %s, %zu sub-groups x %zu MiB, block %zu KiB, queue_depth %d, intra_op %d, "
                "single_submit %d, overlap_events %d\nstorage at %s: %s\n",
                path.c_str(), K, chunk_mib, block_kib, aio.queue_depth, aio.intra_op_parallelism, aio.single_submit,
                aio.overlap_events, path.c_str(), storage.c_str());
    if (!is_nvme) std::printf("note: no NVMe device backs this path; absolute GB/s are this disk's, compare ratios\n");

    NvmeSwapper sw({path, 0, aio}, std::vector<size_t>(K, sub));
    PinnedAllocator alloc({.pin_memory = true, .use_cuda = false, .warn = {}, .lock_fn = {}});
    std::vector<PinnedBuffer> bufs;
    for (size_t k = 0; k < K; ++k) {
      bufs.push_back(alloc.allocate(sub));
      std::memset(bufs.back().data(), int(k + 1), sub);
    }
    // The peer's own file, same size, same O_DIRECT and block size, one synchronous call at a time.
    const std::string peer_path = sw.file_path() + ".peer";
    const int pfd = open(peer_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
    check(pfd >= 0, "open " + peer_path);
    struct Remover {
      std::string p;
      int fd;
      ~Remover() { close(fd); unlink(p.c_str()); }
    } remover{peer_path, pfd};
    check(fallocate(pfd, 0, 0, static_cast<off_t>(K * sub)) == 0, "fallocate " + peer_path);

    auto secs = [](auto&& f) {
      const auto t0 = Clock::now();
      f();
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    auto aio_write = [&] {
      std::vector<AioHandle> hs;
      for (size_t k = 0; k < K; ++k) hs.push_back(sw.write(k, bufs[k].data()));
      for (auto& h : hs) sw.wait(h);
    };
    auto aio_read = [&] {
      std::vector<AioHandle> hs;
      for (size_t k = 0; k < K; ++k) hs.push_back(sw.read(k, bufs[k].data()));
      for (auto& h : hs) sw.wait(h);
    };
    auto sync_io = [&](bool write) {
      for (size_t k = 0; k < K; ++k) {
        for (size_t off = 0; off < sub; off += aio.block_size) {
          const size_t len = std::min(aio.block_size, sub - off);
          char* b = bufs[k].as<char>() + off;
          const off_t at = static_cast<off_t>(k * sub + off);
          const ssize_t r = write ? pwrite(pfd, b, len, at) : pread(pfd, b, len, at);
          if (r != static_cast<ssize_t>(len))
            throw std::runtime_error(std::string(write ? "pwrite " : "pread ") + peer_path + ": " +
                                     (r < 0 ? std::strerror(errno) : "short transfer"));
        }
      }
    };
    // Mixed: half the sub-groups read while the other half are written (what the pipeline does).
    auto aio_mixed = [&] {
      std::vector<AioHandle> hs;
      for (size_t k = 0; k < K; ++k) hs.push_back(k % 2 ? sw.read(k, bufs[k].data()) : sw.write(k, bufs[k].data()));
      for (auto& h : hs) sw.wait(h);
    };
    auto sync_mixed = [&] {
      for (size_t k = 0; k < K; ++k) {
        const off_t at = static_cast<off_t>(k * sub);
        const ssize_t r = k % 2 ? pread(pfd, bufs[k].data(), sub, at) : pwrite(pfd, bufs[k].data(), sub, at);
        if (r != static_cast<ssize_t>(sub)) throw std::runtime_error("sync mixed I/O on " + peer_path + " failed");
      }
    };
    // Fill both files once so reads see written blocks.
    aio_write();
    sync_io(true);

    const char* names[] = {"write", "read", "read+write"};
    std::vector<double> ta[3], tp[3], ratio[3];
    for (int r = 0; r < rounds; ++r) {
      for (int op = 0; op < 3; ++op) {
        auto run_aio = [&] { return secs([&] { op == 0 ? aio_write() : op == 1 ? aio_read() : aio_mixed(); }); };
        auto run_peer = [&] { return secs([&] { op == 0 ? sync_io(true) : op == 1 ? sync_io(false) : sync_mixed(); }); };
        double a, p;
        if (r % 2) {
          p = run_peer();
          a = run_aio();
        } else {
          a = run_aio();
          p = run_peer();
        }
        ta[op].push_back(a);
        tp[op].push_back(p);
        ratio[op].push_back(p / a);
      }
    }
    std::printf("\n%-11s %14s %16s %8s %16s\n", "op", "aio GB/s", "sync O_DIRECT", "ratio", "ratio min..max");
    std::vector<std::string> json;
    for (int op = 0; op < 3; ++op) {
      const double ga = total / median(ta[op]) / 1e9, gp = total / median(tp[op]) / 1e9;
      const double rm = median(ratio[op]);
      const double rmin = *std::min_element(ratio[op].begin(), ratio[op].end());
      const double rmax = *std::max_element(ratio[op].begin(), ratio[op].end());
      std::printf("%-11s %14.3f %16.3f %8.3f %9.3f..%.3f\n", names[op], ga, gp, rm, rmin, rmax);
      char buf[768];
      std::snprintf(buf, sizeof buf,
                    "{\"bench\":\"nvme\",\"op\":\"%s\",\"path\":\"%s\",\"storage\":\"%s\",\"nvme\":%s,\"bytes\":%.0f,"
                    "\"block_size\":%zu,\"queue_depth\":%d,\"intra_op_parallelism\":%d,\"single_submit\":%s,"
                    "\"overlap_events\":%s,\"rounds\":%d,\"aio_gbps\":%.4f,\"peer_gbps\":%.4f,\"ratio\":%.4f,"
                    "\"ratio_min\":%.4f,\"ratio_max\":%.4f,\"ratio_to\":\"synchronous O_DIRECT pread/pwrite, same run\"}",
                    names[op], path.c_str(), storage.c_str(), is_nvme ? "true" : "false", total, aio.block_size,
                    aio.queue_depth, aio.intra_op_parallelism, aio.single_submit ? "true" : "false",
                    aio.overlap_events ? "true" : "false", rounds, ga, gp, rm, rmin, rmax);
      json.push_back(buf);
    }
    std::printf("\n");
    for (const auto& j : json) std::printf("%s\n", j.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nvme: %s\n", e.what());
    return 1;
  }
  return 0;
}
