// bench_checkpoint: save and load throughput of a checkpoint against the disk measured in the same
// run — a plain sequential write (8 MiB writes, then fsync) and read of the same number of bytes —
// rounds interleaved, medians with min..max; ratio = checkpoint / peer (save goal >= 0.8). Then the
// step-time cost of a background save: the ZeRO engine's train_step (CPU backend, one rank) timed
// alone and while its own checkpoint is written in the background; ratio = overlapped / alone
// (goal <= 1.10), with the snapshot the step waits for beside it.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// One rank holding every element of a model of `params` fp32 parameters, Adam's three arrays.
class HostState final : public zt::ShardedState {
 public:
  explicit HostState(int64_t params) {
    zt::UnitLayout u;
    u.name = "flat";
    zt::TensorView t;
    t.name = "w";
    t.numel = params;
    t.shape = {params};
    u.tensors = {t};
    u.numel = params;
    units_ = {u};
    for (auto& a : data_) {
      a.resize(size_t(params));
      for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 1000) * 1e-3f;
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
    std::memcpy(out, data_[idx(a)].data() + r.begin, size_t(r.n) * 4);
  }
  void write(const std::string& a, const zt::ElementRange& r, const float* in) override {
    std::memcpy(data_[idx(a)].data() + r.begin, in, size_t(r.n) * 4);
  }
  void commit() override {}
  nlohmann::json counters() const override { return {{"step", 1}, {"applied_steps", 1}, {"skipped_steps", 0}}; }
  void set_counters(const nlohmann::json&) override {}

 private:
  static size_t idx(const std::string& a) { return a == "master" ? 0 : a == "exp_avg" ? 1 : 2; }
  std::vector<zt::UnitLayout> units_;
  std::vector<float> data_[3];
};

// The peer: the same bytes, from a buffer as large (not cache-resident), written sequentially in
// 8 MiB writes, then fsync; and read back.
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

struct Stat {
  std::string name;
  std::vector<double> v = {};
};

void print_json(const char* what, const Stat& s, const char* unit, const std::string& path, double mib) {
  std::printf("{\"bench\":\"checkpoint\",\"metric\":\"%s\",\"median\":%.4f,\"min\":%.4f,\"max\":%.4f,\"unit\":\"%s\","
              "\"rounds\":%zu,\"path\":\"%s\",\"mib\":%.0f}\n",
              what, median(s.v), *std::min_element(s.v.begin(), s.v.end()), *std::max_element(s.v.begin(), s.v.end()), unit,
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
  int micro_batch = 4, stage = 1;
  app.add_option("--path", path, "Folder to write into (the disk under test)")->capture_default_str();
  app.add_option("--mib", mib, "Checkpoint size in MiB (master + two Adam moments)")->capture_default_str();
  app.add_option("--rounds", rounds, "Interleaved rounds")->capture_default_str();
  app.add_option("--steps", steps, "Engine steps timed alone per overlap round")->capture_default_str();
  app.add_option("--overlap-rounds", overlap_rounds, "Background saves of the engine's state")->capture_default_str();
  app.add_option("--layers", model.layers, "Engine model: blocks")->capture_default_str();
  app.add_option("--dim", model.dim, "Engine model: width")->capture_default_str();
  app.add_option("--heads", model.heads, "Engine model: heads")->capture_default_str();
  app.add_option("--vocab", model.vocab, "Engine model: vocabulary")->capture_default_str();
  app.add_option("--seq-len", model.seq_len, "Engine model: context")->capture_default_str();
  app.add_option("--micro-batch", micro_batch, "Engine rows per step")->capture_default_str();
  app.add_option("--stage", stage, "ZeRO stage of the engine")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads of the engine (default: all)");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = path + "/zt_bench_ckpt_" + std::to_string(::getpid());
  zt::ckpt::make_directories(dir);
  const int64_t params = mib * (1 << 20) / 12;
  HostState state(params);
  zt::SingleCommunicator comm;
  zt::ckpt::RankExchange ex(comm);
  zt::ckpt::SaveOptions so;
  so.dir = dir + "/c";
  zt::ckpt::CheckpointWriter writer(ex, so);
  zt::ckpt::RunFacts facts;
  facts.model.name = "bench";
  std::vector<char> buf(size_t(8) << 20, 'z'), src(size_t(params) * 12, 'z');
  Stat disk_w{"disk write"}, save{"save"}, save_write{"save write"}, disk_r{"disk read"}, load{"load"};
  int64_t file_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    const std::string peer = dir + "/peer.bin";
    ::unlink(peer.c_str());
    disk_w.v.push_back(peer_write(peer, src) / 1e9);
    const auto t0 = Clock::now();
    const auto res = writer.save(state, facts, "round" + std::to_string(r));
    const double s = since(t0);
    if (!res.ok) {
      std::fprintf(stderr, "save failed: %s\n", res.message.c_str());
      return 1;
    }
    file_bytes = res.total_bytes;
    save.v.push_back(double(res.total_bytes) / s / 1e9);
    save_write.v.push_back(double(res.bytes) / res.write_s / 1e9);
    disk_r.v.push_back(peer_read(peer, buf) / 1e9);
    zt::ckpt::LoadOptions lo;
    lo.path = so.dir;
    const auto lr = zt::ckpt::load_checkpoint(state, ex, lo);
    load.v.push_back(double(lr.bytes_read) / lr.seconds / 1e9);
    zt::ckpt::remove_tree(so.dir + "/round" + std::to_string(r - 1));
  }

  // Step-time cost of a background save: the engine's steps alone, then with a save of its own
  // state in flight (begin() snapshots it; the steps run while the file is written; poll() after
  // each step completes the save once written, as the training loop does).
  if (threads > 0) zt::set_cpu_threads(threads);
  auto backend = zt::make_cpu_backend();
  zt::EngineOptions eo;
  eo.stage = stage;
  eo.micro_batch = micro_batch;
  zt::Engine engine(model, eo, *backend, comm);
  zt::EngineCheckpoint engine_state(engine, model);
  std::vector<int32_t> tok(size_t(micro_batch) * model.seq_len), tgt(tok.size());
  for (size_t i = 0; i < tok.size(); ++i) {
    tok[i] = int32_t((i * 7919) % size_t(model.vocab));
    tgt[i] = int32_t((i * 7919 + 1) % size_t(model.vocab));
  }
  auto step = [&] {
    const auto t = Clock::now();
    engine.train_step([&](int, int32_t* t_out, int32_t* g_out) {
      std::copy(tok.begin(), tok.end(), t_out);
      std::copy(tgt.begin(), tgt.end(), g_out);
    });
    return since(t);
  };
  step();  // first-touch of the buffers
  zt::ckpt::SaveOptions eso;
  eso.dir = dir + "/engine";
  zt::ckpt::CheckpointWriter engine_writer(ex, eso);
  zt::ckpt::RunFacts engine_facts;
  engine_facts.model = model;
  Stat alone{"step alone"}, overlapped{"step overlapped"}, snapshot{"snapshot"};
  int64_t engine_bytes = 0;
  for (int r = 0; r < overlap_rounds; ++r) {
    for (int i = 0; i < steps; ++i) alone.v.push_back(step());
    const auto t0 = Clock::now();
    engine_writer.begin(engine_state, engine_facts, "bg" + std::to_string(r));
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
    }
    zt::ckpt::remove_tree(eso.dir + "/bg" + std::to_string(r - 1));
  }
  zt::ckpt::remove_tree(dir);

  const double mb = double(file_bytes) / double(1 << 20);
  print_json("disk_write_GBps", disk_w, "GB/s", path, mb);
  print_json("save_GBps", save, "GB/s", path, mb);
  print_json("save_file_write_GBps", save_write, "GB/s", path, mb);
  print_json("disk_read_GBps", disk_r, "GB/s", path, mb);
  print_json("load_GBps", load, "GB/s", path, mb);
  print_json("step_alone_s", alone, "s", path, mb);
  print_json("step_overlapped_s", overlapped, "s", path, mb);
  print_json("snapshot_s", snapshot, "s", path, mb);
  const double save_ratio = median(save.v) / median(disk_w.v), load_ratio = median(load.v) / median(disk_r.v);
  const double step_ratio = median(overlapped.v) / median(alone.v);
  std::printf("{\"bench\":\"checkpoint\",\"metric\":\"ratios\",\"save_vs_disk_write\":%.3f,\"load_vs_disk_read\":%.3f,"
              "\"overlapped_vs_alone_step\":%.3f,\"snapshot_vs_step\":%.3f,\"save_goal\":0.8,\"step_goal\":1.10,"
              "\"overlapped_steps\":%zu,\"engine_params\":%lld,\"engine_checkpoint_mib\":%.1f}\n",
              save_ratio, load_ratio, step_ratio, median(snapshot.v) / median(alone.v), overlapped.v.size(),
              (long long)engine.params(), double(engine_bytes) / double(1 << 20));
  const std::string title = "checkpoint (" + std::to_string(int(mb)) + " MiB at " + path + ")";
  std::printf("\n%-34s %10s %10s %10s\n", title.c_str(), "median", "min", "max");
  for (const Stat* s : {&disk_w, &save, &save_write, &disk_r, &load})
    std::printf("%-34s %8.3f GB/s %7.3f %10.3f\n", s->name.c_str(), median(s->v), *std::min_element(s->v.begin(), s->v.end()),
                *std::max_element(s->v.begin(), s->v.end()));
  const std::string step_title = "engine step alone (" + std::to_string(engine.params() / 1000000) + "M params)";
  std::printf("%-34s %8.1f ms %8.1f %10.1f\n", step_title.c_str(), 1e3 * median(alone.v),
              1e3 * *std::min_element(alone.v.begin(), alone.v.end()), 1e3 * *std::max_element(alone.v.begin(), alone.v.end()));
  std::printf("%-34s %8.1f ms %8.1f %10.1f\n", "engine step, its save in flight", 1e3 * median(overlapped.v),
              1e3 * *std::min_element(overlapped.v.begin(), overlapped.v.end()),
              1e3 * *std::max_element(overlapped.v.begin(), overlapped.v.end()));
  std::printf("%-34s %8.1f ms\n", "snapshot (training waits for it)", 1e3 * median(snapshot.v));
  std::printf("save / disk write %.2f (goal >= 0.8), load / disk read %.2f (both from the page cache here), "
              "engine step with a save in flight / alone %.2f over %zu overlapped steps (goal <= 1.10), "
              "snapshot / step %.2f\n",
              save_ratio, load_ratio, step_ratio, overlapped.v.size(), median(snapshot.v) / median(alone.v));
  return 0;
}
