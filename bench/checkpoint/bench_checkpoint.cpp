// bench_checkpoint: save and load throughput of a checkpoint against the disk measured in the same
// run — a plain sequential write of as many bytes (8 MiB writes, then fsync) and reads of the
// checkpoint's own rank file, through the page cache (into a reused 8 MiB buffer, and into memory
// as large as the file on the load's read lanes) and with O_DIRECT (into a reused buffer, and into
// memory as large) — rounds interleaved, medians with min..max; ratio =
// checkpoint / peer (goals >= 0.8). Saves go both ways (O_DIRECT through io_uring; page cache with
// pwrite), loads both ways (page cache, warm as the peer's; O_DIRECT), each with where its time goes
// per MiB. Then the step-time cost of a background save: the ZeRO engine's train_step (CPU backend,
// one rank) timed alone and while its own checkpoint is written in the background; ratio =
// overlapped / alone (goal <= 1.10), the snapshot the step waits for and the writer's CPU seconds
// per GB beside it. The state and the peers' memory as large are the engine's kind of host memory
// (base/host_pages.h: huge pages where the kernel grants them), or 4 KiB pages with --small-pages,
// so that the two can be compared in the same hour.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/host_pages.h"
#include "collectives/single_communicator.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_threads.h"
#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/checkpoint_save.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/engine/engine.h"
#include "runtime/engine/engine_checkpoint.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Median, least and greatest of a figure's rounds (0 for none, which the printing skips).
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Host memory of `bytes` (whole pages): the engine's kind (huge pages from 2 MiB where the kernel
// grants them), or 4 KiB pages only (`small`: the kernel told not to back it with huge pages).
zt::HostPages bench_pages(size_t bytes, bool small) {
  if (!small) return zt::make_host_pages(bytes);
  bytes = (bytes + zt::kHostPageBytes - 1) / zt::kHostPageBytes * zt::kHostPageBytes;
  zt::HostPages p(static_cast<char*>(std::aligned_alloc(zt::kHostPageBytes, bytes)));
  if (!p) throw std::bad_alloc();
#if defined(MADV_NOHUGEPAGE)
  (void)madvise(p.get(), bytes, MADV_NOHUGEPAGE);
#endif
  return p;
}

// One rank holding every element of a model of `params` fp32 parameters, Adam's three arrays, each
// starting `misalign` bytes past a page boundary (0: page-aligned, as the engine's host arrays
// are; 16: where a large malloc puts it), which decides whether an O_DIRECT load can read into it
// in place; on 4 KiB pages with `small`, else on the engine's kind of host memory.
class HostState final : public zt::ShardedState {
 public:
  HostState(int64_t params, size_t misalign, bool small) : params_(params) {
    zt::UnitLayout u;
    u.name = "flat";
    zt::TensorView t;
    t.name = "w";
    t.numel = params;
    t.shape = {params};
    u.tensors = {t};
    u.numel = params;
    units_ = {u};
    const size_t bytes = (size_t(params) * 4 + misalign + 4095) / 4096 * 4096;
    for (size_t k = 0; k < 3; ++k) {
      mem_[k] = bench_pages(bytes, small);
      data_[k] = reinterpret_cast<float*>(mem_[k].get() + misalign);
      for (int64_t i = 0; i < params; ++i) data_[k][i] = float(i % 1000) * 1e-3f;
    }
  }
  const std::vector<zt::UnitLayout>& units() const override { return units_; }
  int world_size() const override { return 1; }
  int rank() const override { return 0; }
  int stage() const override { return 1; }
  zt::DType precision() const override { return zt::DType::F32; }
  zt::OptimizerType optimizer() const override { return zt::OptimizerType::AdamW; }
  std::vector<std::string> arrays() const override { return {"master", "exp_avg", "exp_avg_sq"}; }
  std::vector<zt::ElementRange> owned() const override { return {{0, 0, units_[0].numel}}; }
  std::vector<zt::ElementRange> needed() const override { return owned(); }
  void read(const std::string& a, const zt::ElementRange& r, float* out) override {
    std::memcpy(out, data_[idx(a)] + r.begin, size_t(r.n) * 4);
  }
  void write(const std::string& a, const zt::ElementRange& r, const float* in) override {
    std::memcpy(data_[idx(a)] + r.begin, in, size_t(r.n) * 4);
  }
  float* write_target(const std::string& a, const zt::ElementRange& r) override { return data_[idx(a)] + r.begin; }
  void commit() override {}
  nlohmann::json counters() const override { return {{"step", 1}, {"applied_steps", 1}, {"skipped_steps", 0}}; }
  void set_counters(const nlohmann::json&) override {}
  void clear() {
    for (auto* d : data_) std::memset(d, 0, size_t(params_) * 4);
  }
  // True when every array holds what the constructor put there (a load's result, checked).
  bool holds_initial_values() const {
    for (size_t k = 0; k < 3; ++k)
      for (int64_t i = 0; i < params_; ++i)
        if (data_[k][i] != float(i % 1000) * 1e-3f) return false;
    return true;
  }

 private:
  static size_t idx(const std::string& a) { return a == "master" ? 0 : a == "exp_avg" ? 1 : 2; }
  int64_t params_;
  std::vector<zt::UnitLayout> units_;
  zt::HostPages mem_[3];
  float* data_[3] = {};
};

// The peers: the same number of bytes, from a buffer as large (not cache-resident), written
// sequentially in 8 MiB writes, then fsync; and the rank file read, through the page cache and with
// O_DIRECT.
double peer_write(const std::string& path, const std::vector<char>& src) {
  const auto t0 = Clock::now();
  const int64_t bytes = int64_t(src.size());
  zt::ckpt::FileWriter w(path, false);
  for (int64_t done = 0; done < bytes; done += int64_t(8) << 20)
    w.write(src.data() + done, size_t(std::min<int64_t>(int64_t(8) << 20, bytes - done)));
  w.sync();
  w.close();
  zt::ckpt::fsync_directory(path.substr(0, path.rfind('/')));
  return double(bytes) / since(t0);
}

double peer_read(const std::string& path, std::vector<char>& buf) {
  const auto t0 = Clock::now();
  zt::ckpt::FileReader r(path);
  for (int64_t off = 0; off < r.size(); off += int64_t(buf.size()))
    r.pread(buf.data(), size_t(std::min<int64_t>(int64_t(buf.size()), r.size() - off)), off);
  return double(r.size()) / since(t0);
}

// The same bytes read through the page cache into memory as large as the checkpoint (where a load
// must put them), 1 MiB preads on `lanes` threads side by side, nothing checked: the most any
// page-cache load can reach here. Above, the 8 MiB buffer is reused and stays in the CPU's cache,
// so that peer never writes to memory at all.
double peer_read_into(const std::string& path, char* dst, int lanes) {
  const auto t0 = Clock::now();
  zt::ckpt::FileReader r(path);
  const int64_t piece = int64_t(1) << 20, count = (r.size() + piece - 1) / piece;
#pragma omp parallel for schedule(dynamic, 1) num_threads(lanes)
  for (int64_t k = 0; k < count; ++k)
    r.pread(dst + k * piece, size_t(std::min(piece, r.size() - k * piece)), k * piece);
  return double(r.size()) / since(t0);
}

// Sequential O_DIRECT reads of `piece` bytes (one in flight) into an aligned buffer of that size
// (reused: `advance` false) or into successive pieces of memory as large as the file (`advance`
// true: where a load in place puts them); 0 where refused.
double peer_read_direct(const std::string& path, char* aligned_buf, size_t piece, bool advance) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return 0;
  const auto t0 = Clock::now();
  int64_t total = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, aligned_buf + (advance ? total : 0), piece, total);
    if (n <= 0) break;
    total += n;
  }
  ::close(fd);
  return double(total) / since(t0);
}

// Reads every file under `dir` once, so that a page-cache load finds it there as the peer does.
void warm(const std::string& dir, std::vector<char>& buf) {
  for (const auto& n : zt::ckpt::list_directory(dir)) peer_read(zt::ckpt::join_path(dir, n), buf);
}

struct Stat {
  std::string name;
  std::vector<double> v = {};
};

double lowest(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
double highest(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

void print_json(const char* what, const Stat& s, const char* unit, const std::string& path, double mib) {
  if (s.v.empty()) return;
  std::printf("{\"bench\":\"checkpoint\",\"metric\":\"%s\",\"median\":%.4f,\"min\":%.4f,\"max\":%.4f,\"unit\":\"%s\","
              "\"rounds\":%zu,\"path\":\"%s\",\"mib\":%.0f}\n",
              what, median(s.v), lowest(s.v), highest(s.v), unit,
              s.v.size(), path.c_str(), mib);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Checkpoint save/load throughput vs the disk's sequential bandwidth, and the cost of a background save"};
  std::string path = "/tmp";
  int64_t mib = 256;
  int rounds = 3, steps = 8, overlap_rounds = 6, threads = 0;
  zt::ModelConfig model = *zt::model_preset("small");  // 4 blocks, 4 heads, context 64 ...
  model.dim = 256;                                    // ... wider, with a larger vocabulary: a
  model.vocab = 8192;                                 // 64 MiB checkpoint that takes steps to write
  int micro_batch = 4, stage = 1, nice = 19, queue_depth = 8, read_lanes = 0;
  int64_t block_kib = 1024;
  bool small_pages = false;
  app.add_option("--path", path, "Folder to write into (the disk under test)")->capture_default_str();
  app.add_option("--mib", mib, "Checkpoint size in MiB (master + two Adam moments)")->capture_default_str();
  app.add_option("--rounds", rounds, "Interleaved rounds")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--steps", steps, "Engine steps timed alone per overlap round")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--overlap-rounds", overlap_rounds, "Background saves of the engine's state (0: no engine part)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--layers", model.layers, "Engine model: blocks")->capture_default_str();
  app.add_option("--dim", model.dim, "Engine model: width")->capture_default_str();
  app.add_option("--heads", model.heads, "Engine model: heads")->capture_default_str();
  app.add_option("--vocab", model.vocab, "Engine model: vocabulary")->capture_default_str();
  app.add_option("--seq-len", model.seq_len, "Engine model: context")->capture_default_str();
  app.add_option("--micro-batch", micro_batch, "Engine rows per step")->capture_default_str();
  app.add_option("--stage", stage, "ZeRO stage of the engine")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads of the engine (default: all)");
  app.add_option("--writer-nice", nice, "Nice level of the background writer during the engine's steps")->capture_default_str();
  app.add_option("--block-kib", block_kib, "aio.block_size of the checkpoint I/O, KiB")->capture_default_str();
  app.add_option("--queue-depth", queue_depth, "aio.queue_depth of the checkpoint I/O")->capture_default_str();
  app.add_option("--read-lanes", read_lanes, "Read lanes of page-cache loads (0: the OpenMP team's size)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_flag("--small-pages", small_pages,
               "The state and the peers' memory as large on 4 KiB pages (default: the engine's host memory, on huge "
               "pages where the kernel grants them)");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = path + "/zt_bench_ckpt_" + std::to_string(::getpid());
  zt::ckpt::make_directories(dir);
  // Whole pages per array, so that every array of the rank file starts on a page as well.
  const int64_t params = std::max<int64_t>(1024, mib * (1 << 20) / 12 / 1024 * 1024);
  HostState state(params, 0, small_pages), unaligned(params, 16, small_pages);
  zt::SingleCommunicator comm;
  zt::RankExchange ex(comm);
  zt::ckpt::SaveOptions so;  // the write path: O_DIRECT through io_uring, hashing beside it
  so.dir = dir + "/c";
  so.writer_nice = 0;        // nothing else runs here: the rounds measure the disk, not the scheduler
  so.io.aio.block_size = size_t(block_kib) << 10;
  so.io.aio.queue_depth = queue_depth;
  zt::ckpt::CheckpointWriter writer(ex, so);
  zt::ckpt::SaveOptions po = so;  // the page-cache path: hash, then pwrite, on the writer thread
  po.dir = dir + "/p";
  po.io.direct_writes = false;
  po.io.uring = false;
  zt::ckpt::CheckpointWriter writer_pc(ex, po);
  zt::ckpt::RunFacts facts;
  facts.model.name = "bench";
  std::vector<char> buf(size_t(8) << 20, 'z'), src(size_t(params) * 12, 'z');
  std::unique_ptr<char, decltype(&std::free)> dbuf(static_cast<char*>(std::aligned_alloc(4096, size_t(8) << 20)), &std::free);
  const size_t big_bytes = (src.size() + (size_t(16) << 20)) / 4096 * 4096;  // a rank file's pages, and a piece past them
  zt::HostPages big = bench_pages(big_bytes, small_pages);  // the same kind of memory as the state's
  if (!dbuf) throw std::bad_alloc();
  std::memset(big.get(), 0, big_bytes);  // touched, as a state's memory is
  // What the kernel granted: the two states and the peer's memory as large are touched by now, about
  // 3 x the checkpoint: that much on huge pages where it granted them, near 0 on 4 KiB pages.
  const double huge_mib = double(zt::process_huge_page_bytes()) / double(1 << 20);
  Stat disk_w{"disk write"}, save{"save (O_DIRECT, io_uring)"}, save_pc{"save (page cache, pwrite)"},
      save_write{"  its rank file alone"}, disk_r{"disk read (page cache)"},
      disk_ri{"disk read into memory (page cache, lanes)"}, load{"load (page cache)"},
      disk_rd{"disk read (O_DIRECT)"}, disk_rdi{"disk read into memory (O_DIRECT)"}, load_d{"load (O_DIRECT, in place)"},
      load_ds{"load (O_DIRECT, unaligned state)"};
  // Per-MiB breakdowns of each save path and load path (medians over rounds).
  std::vector<std::pair<std::string, Stat>> parts;
  auto part = [&](const std::string& name, double seconds, int64_t bytes) {
    for (auto& [n, st] : parts)
      if (n == name) return st.v.push_back(1e3 * seconds / (double(bytes) / double(1 << 20)));
    parts.push_back({name, Stat{name, {1e3 * seconds / (double(bytes) / double(1 << 20))}}});
  };
  auto save_parts = [&](const char* path_name, const zt::ckpt::SaveResult& r) {
    const std::string p = path_name;
    part(p + " snapshot (state.read copy)", r.snapshot_s, r.bytes);
    part(p + " hash (blocks + data area)", r.io.hash_s, r.bytes);
    part(p + " write (after the hash)", r.io.write_s, r.bytes);
    part(p + " header", r.io.header_s, r.bytes);
    part(p + " fsync", r.io.sync_s, r.bytes);
    part(p + " manifest, rename, latest", r.commit_s, r.bytes);
    part(p + " total", r.total_s, r.bytes);
  };
  auto load_parts = [&](const char* path_name, const zt::ckpt::LoadResult& r) {
    const std::string p = path_name;
    const int64_t b = int64_t(r.bytes_read);
    part(p + " wait for reads (after hashing)", r.io.read_s, b);
    part(p + " hash (verify blocks)", r.io.hash_s, b);
    part(p + " copy out of aligned scratch", r.io.copy_s, b);
    part(p + " total (open and check included)", r.seconds, b);
  };
  int64_t file_bytes = 0;
  bool direct_refused = false;
  for (int r = 0; r < rounds; ++r) {
    const std::string peer = dir + "/peer.bin";
    ::unlink(peer.c_str());
    disk_w.v.push_back(peer_write(peer, src) / 1e9);
    const std::string tag = "round" + std::to_string(r);
    auto t0 = Clock::now();
    auto res = writer_pc.save(state, facts, tag);
    double s = since(t0);
    if (!res.ok) {
      std::fprintf(stderr, "save failed: %s\n", res.message.c_str());
      return 1;
    }
    save_pc.v.push_back(double(res.total_bytes) / s / 1e9);
    save_parts("save, page cache:", res);
    zt::ckpt::remove_tree(po.dir);
    t0 = Clock::now();
    res = writer.save(state, facts, tag);
    s = since(t0);
    if (!res.ok) {
      std::fprintf(stderr, "save failed: %s\n", res.message.c_str());
      return 1;
    }
    direct_refused = direct_refused || res.io.direct_bytes == 0;
    file_bytes = res.total_bytes;
    save.v.push_back(double(res.total_bytes) / s / 1e9);
    save_write.v.push_back(double(res.bytes) / res.write_s / 1e9);
    save_parts("save, O_DIRECT:", res);
    // The read peers read the rank file the loads read (the same blocks of the disk, which a virtual
    // disk may serve at other speeds than a file written at another time).
    const std::string rank_file = so.dir + "/" + tag + "/rank00000.safetensors";
    warm(so.dir + "/" + tag, buf);
    disk_r.v.push_back(peer_read(rank_file, buf) / 1e9);
    zt::ckpt::LoadOptions lo;
    lo.path = so.dir;
    lo.io.aio = so.io.aio;
    lo.io.read_lanes = read_lanes;
    disk_ri.v.push_back(peer_read_into(rank_file, big.get(), zt::ckpt::BulkIo(lo.io).read_lanes()) / 1e9);
    auto lr = zt::ckpt::load_checkpoint(state, ex, lo);
    load.v.push_back(double(lr.bytes_read) / lr.seconds / 1e9);
    load_parts("load, page cache:", lr);
    disk_rd.v.push_back(peer_read_direct(rank_file, dbuf.get(), size_t(8) << 20, false) / 1e9);
    disk_rdi.v.push_back(peer_read_direct(rank_file, big.get(), size_t(8) << 20, true) / 1e9);
    lo.io.direct_reads = true;
    // O_DIRECT into the page-aligned state (in place) and into one 16 bytes off the page grid
    // (through aligned scratch and a copy out), the order alternating between rounds; each state
    // cleared first and checked after (the saved values are the constructor's).
    for (int k = 0; k < 2; ++k) {
      const bool in_place = (k == 0) == (r % 2 == 0);
      HostState& into = in_place ? state : unaligned;
      into.clear();
      lr = zt::ckpt::load_checkpoint(into, ex, lo);
      if (!into.holds_initial_values()) {
        std::fprintf(stderr, "the O_DIRECT load (%s) gave other values than were saved\n", in_place ? "in place" : "unaligned");
        return 1;
      }
      (in_place ? load_d : load_ds).v.push_back(double(lr.bytes_read) / lr.seconds / 1e9);
      load_parts(in_place ? "load, O_DIRECT:" : "load, O_DIRECT, unaligned state:", lr);
    }
    zt::ckpt::remove_tree(so.dir + "/round" + std::to_string(r - 1));
  }

  // Step-time cost of a background save: the engine's steps alone, then with a save of its own
  // state in flight (begin() snapshots it; the steps run while the file is written; poll() after
  // each step completes the save once written, as the training loop does).
  if (threads > 0) zt::set_cpu_threads(threads);
  std::unique_ptr<zt::Backend> backend;
  std::unique_ptr<zt::Engine> engine;
  std::unique_ptr<zt::EngineCheckpoint> engine_state;
  zt::EngineOptions eo;
  eo.zero.stage = stage;
  eo.micro_batch = micro_batch;
  if (overlap_rounds > 0) {
    backend = zt::make_cpu_backend();
    engine = std::make_unique<zt::Engine>(model, eo, *backend, comm);
    engine_state = std::make_unique<zt::EngineCheckpoint>(*engine, model);
  }
  std::vector<int32_t> tok(size_t(micro_batch) * model.seq_len), tgt(tok.size());
  for (size_t i = 0; i < tok.size(); ++i) {
    tok[i] = int32_t((i * 7919) % size_t(model.vocab));
    tgt[i] = int32_t((i * 7919 + 1) % size_t(model.vocab));
  }
  auto step = [&] {
    const auto t = Clock::now();
    engine->train_step([&](int, int32_t* t_out, int32_t* g_out) {
      std::copy(tok.begin(), tok.end(), t_out);
      std::copy(tgt.begin(), tgt.end(), g_out);
    });
    return since(t);
  };
  if (engine) step();  // first-touch of the buffers
  zt::ckpt::SaveOptions eso;
  eso.dir = dir + "/engine";
  eso.io = so.io;
  eso.writer_nice = nice;
  zt::ckpt::CheckpointWriter engine_writer(ex, eso);
  zt::ckpt::RunFacts engine_facts;
  engine_facts.model = model;
  Stat alone{"step alone"}, overlapped{"step overlapped"}, snapshot{"snapshot"}, writer_cpu{"writer CPU s/GB"};
  int64_t engine_bytes = 0;
  for (int r = 0; r < overlap_rounds; ++r) {
    for (int i = 0; i < steps; ++i) alone.v.push_back(step());
    const auto t0 = Clock::now();
    engine_writer.begin(*engine_state, engine_facts, "bg" + std::to_string(r));
    snapshot.v.push_back(since(t0));
    while (engine_writer.pending()) {
      overlapped.v.push_back(step());
      engine_writer.poll();
    }
    for (const auto& res : engine_writer.take_results()) {
      if (!res.ok) {
        std::fprintf(stderr, "engine save failed: %s\n", res.message.c_str());
        return 1;
      }
      engine_bytes = res.total_bytes;
      writer_cpu.v.push_back(res.writer_cpu_s / (double(res.bytes) / 1e9));
    }
    zt::ckpt::remove_tree(eso.dir + "/bg" + std::to_string(r - 1));
  }
  zt::ckpt::remove_tree(dir);

  const double mb = double(file_bytes) / double(1 << 20);
  print_json("disk_write_GBps", disk_w, "GB/s", path, mb);
  print_json("save_GBps", save, "GB/s", path, mb);
  print_json("save_page_cache_GBps", save_pc, "GB/s", path, mb);
  print_json("save_file_write_GBps", save_write, "GB/s", path, mb);
  print_json("disk_read_GBps", disk_r, "GB/s", path, mb);
  print_json("disk_read_into_memory_GBps", disk_ri, "GB/s", path, mb);
  print_json("load_GBps", load, "GB/s", path, mb);
  print_json("disk_read_direct_GBps", disk_rd, "GB/s", path, mb);
  print_json("disk_read_direct_into_memory_GBps", disk_rdi, "GB/s", path, mb);
  print_json("load_direct_GBps", load_d, "GB/s", path, mb);
  print_json("load_direct_unaligned_GBps", load_ds, "GB/s", path, mb);
  // The engine's figures exist only with --overlap-rounds >= 1.
  const bool engine_run = !alone.v.empty() && !overlapped.v.empty();
  if (engine_run) {
    print_json("step_alone_s", alone, "s", path, mb);
    print_json("step_overlapped_s", overlapped, "s", path, mb);
    print_json("snapshot_s", snapshot, "s", path, mb);
    print_json("writer_cpu_s_per_GB", writer_cpu, "s/GB", path, mb);
  }
  const double save_ratio = median(save.v) / median(disk_w.v), load_ratio = median(load.v) / median(disk_r.v);
  const double load_mem_ratio = median(load.v) / median(disk_ri.v);
  zt::ckpt::CheckpointIoOptions lanes_io;
  lanes_io.read_lanes = read_lanes;
  const int lanes = zt::ckpt::BulkIo(lanes_io).read_lanes();
  const double load_d_ratio = median(disk_rd.v) > 0 ? median(load_d.v) / median(disk_rd.v) : 0;
  const double load_ds_ratio = median(disk_rd.v) > 0 ? median(load_ds.v) / median(disk_rd.v) : 0;
  const double load_d_mem_ratio = median(disk_rdi.v) > 0 ? median(load_d.v) / median(disk_rdi.v) : 0;
  auto ratio_text = [](bool have, double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v);
    return have ? std::string(b) : std::string("null");
  };
  const double step_ratio = engine_run ? median(overlapped.v) / median(alone.v) : 0;
  const double snapshot_ratio = engine_run ? median(snapshot.v) / median(alone.v) : 0;
  std::printf("{\"bench\":\"checkpoint\",\"metric\":\"ratios\",\"save_vs_disk_write\":%.3f,\"save_page_cache_vs_disk_write\":%.3f,"
              "\"load_vs_disk_read\":%.3f,\"load_vs_disk_read_into_memory\":%.3f,\"read_lanes\":%d,"
              "\"load_direct_vs_disk_read_direct\":%.3f,\"load_direct_vs_disk_read_direct_into_memory\":%.3f,"
              "\"load_direct_unaligned_vs_disk_read_direct\":%.3f,"
              "\"overlapped_vs_alone_step\":%s,\"snapshot_vs_step\":%s,\"save_goal\":0.8,\"load_goal\":0.8,\"step_goal\":1.10,"
              "\"overlapped_steps\":%zu,\"engine_params\":%lld,\"engine_checkpoint_mib\":%.1f,\"writer_nice\":%d,"
              "\"direct_refused\":%s,\"pages\":\"%s\",\"huge_pages_mode\":\"%s\",\"huge_page_mib\":%.0f}\n",
              save_ratio, median(save_pc.v) / median(disk_w.v), load_ratio, load_mem_ratio, lanes, load_d_ratio, load_d_mem_ratio,
              load_ds_ratio, ratio_text(engine_run, step_ratio).c_str(), ratio_text(engine_run, snapshot_ratio).c_str(), overlapped.v.size(),
              (long long)(engine ? engine->params() : 0), double(engine_bytes) / double(1 << 20), nice,
              direct_refused ? "true" : "false", small_pages ? "4k" : "host_pages", zt::huge_pages_mode().c_str(), huge_mib);
  const std::string title = "checkpoint (" + std::to_string(int(mb)) + " MiB at " + path + ")";
  std::printf("\n%-44s %10s %10s %10s\n", title.c_str(), "median", "min", "max");
  for (const Stat* s : {&disk_w, &save, &save_write, &save_pc, &disk_r, &disk_ri, &load, &disk_rd, &disk_rdi, &load_d, &load_ds})
    std::printf("%-44s %8.3f GB/s %7.3f %10.3f\n", s->name.c_str(), median(s->v), lowest(s->v), highest(s->v));
  std::printf("\n%-44s %10s %10s %10s\n", "where the time goes (ms per MiB)", "median", "min", "max");
  for (const auto& [n, st] : parts)
    std::printf("%-44s %10.4f %10.4f %10.4f\n", n.c_str(), median(st.v), lowest(st.v), highest(st.v));
  std::printf("\n");
  if (engine_run) {
    const std::string step_title = "engine step alone (" + std::to_string(engine->params() / 1000000) + "M params)";
    std::printf("%-44s %8.1f ms %8.1f %10.1f\n", step_title.c_str(), 1e3 * median(alone.v), 1e3 * lowest(alone.v),
                1e3 * highest(alone.v));
    std::printf("%-44s %8.1f ms %8.1f %10.1f\n", "engine step, its save in flight", 1e3 * median(overlapped.v),
                1e3 * lowest(overlapped.v), 1e3 * highest(overlapped.v));
    std::printf("%-44s %8.1f ms\n", "snapshot (training waits for it)", 1e3 * median(snapshot.v));
    std::printf("%-44s %8.3f s/GB %7.3f %10.3f\n", "background writer CPU", median(writer_cpu.v), lowest(writer_cpu.v),
                highest(writer_cpu.v));
  } else {
    std::printf("engine step: not measured (--overlap-rounds 0)\n");
  }
  std::printf("save / disk write %.2f (goal >= 0.8; page-cache path %.2f), load / disk read %.2f page cache (%.2f of a "
              "read into memory as large on %d lanes), %.2f O_DIRECT in place (%.2f of an O_DIRECT read into memory as "
              "large), %.2f O_DIRECT into an unaligned state (goal >= 0.8)",
              save_ratio, median(save_pc.v) / median(disk_w.v), load_ratio, load_mem_ratio, lanes, load_d_ratio,
              load_d_mem_ratio, load_ds_ratio);
  if (engine_run)
    std::printf(", engine step with a save in flight / alone %.2f over %zu overlapped steps (goal <= 1.10, writer nice %d), "
                "snapshot / step %.2f",
                step_ratio, overlapped.v.size(), nice, snapshot_ratio);
  std::printf("%s\n", direct_refused ? "; O_DIRECT was refused here: every figure is the page-cache path" : "");
  std::printf("memory of the state and the peers: %s (transparent huge pages: %s; %.0f MiB of this process on huge pages)\n",
              small_pages ? "4 KiB pages (--small-pages)" : "the engine's host pages", zt::huge_pages_mode().c_str(), huge_mib);
  return 0;
}
