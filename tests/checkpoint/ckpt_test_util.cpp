// Checkpoint test helpers.
#include "tests/checkpoint/ckpt_test_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "runtime/checkpoint/checksum.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/safetensors.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/zt_ckpt_XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() { ckpt::remove_tree(path_); }

std::string tree_fingerprint(const std::string& dir) {
  std::vector<std::string> lines;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    char stamp[96];
    std::snprintf(stamp, sizeof stamp, " %lld %lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                  (long)st.st_mtim.tv_nsec);
    std::string line = e.path().string().substr(dir.size());
    line += stamp;
    if (e.is_regular_file()) {
      const std::string content = ckpt::read_small_file(e.path().string());
      line += ' ';
      line += ckpt::checksum_text(ckpt::xxh3(content.data(), content.size()));
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

ModelConfig small_model() {
  ModelConfig m;
  m.name = "ckpt-test";
  m.layers = 2;
  m.heads = 2;
  m.dim = 24;
  m.vocab = 61;
  m.seq_len = 10;
  return m;
}

ModelConfig kill_driver_model() {
  ModelConfig m;
  m.layers = 4;
  m.heads = 4;
  m.dim = 96;
  m.vocab = 509;
  m.seq_len = 32;
  return m;
}

ckpt::SaveResult save_fake(const std::string& dir, const ModelConfig& m, int world, int stage, int64_t gen,
                           ckpt::SaveOptions opt, const std::string& tag, OptimizerType optimizer) {
  opt.dir = dir;
  if (!opt.warn) opt.warn = [](const std::string&) {};
  ckpt::SaveResult r0;
  run_ranks(world, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, world, rank, stage, optimizer);
    st.fill(gen);
    RankExchange ex(comm);
    ckpt::CheckpointWriter w(ex, opt);
    ckpt::RunFacts facts;
    facts.model = m;
    facts.seed = 7;
    facts.global_batch = 8;
    facts.micro_batch = 8 / world > 0 ? 8 / world : 1;
    facts.grad_accum = 1;
    facts.data = "test";
    auto r = w.save(st, facts, tag.empty() ? ckpt::default_tag(gen) : tag);
    if (rank == 0) r0 = r;
  });
  return r0;
}

LoadCheck load_fake(const ckpt::LoadOptions& o, const ModelConfig& m, int world, int stage, int64_t gen,
                    OptimizerType optimizer, int64_t prefill) {
  LoadCheck c;
  std::mutex mu;
  FakeShardedState expect(m, 1, 0, 0, optimizer);
  expect.fill(gen);
  run_ranks(world, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, world, rank, stage, optimizer);
    if (prefill >= 0) st.fill(prefill);
    RankExchange ex(comm);
    auto res = ckpt::load_checkpoint(st, ex, o);
    const auto arrays = o.load_optimizer_states ? st.arrays() : std::vector<std::string>{"master"};
    std::vector<std::string> unloaded;
    for (const auto& a : st.arrays())
      if (std::find(arrays.begin(), arrays.end(), a) == arrays.end()) unloaded.push_back(a);
    uint64_t headers = 0;
    for (int r : res.files_read) {
      Diagnostics d;
      auto f = ckpt::SafetensorsFile::open(res.tag_dir + "/" + res.manifest.ranks[size_t(r)].file, d, "");
      if (f) headers += uint64_t(f->data_start());
    }
    std::lock_guard<std::mutex> lock(mu);
    c.mismatches += st.mismatches(gen, arrays);
    if (prefill >= 0) c.unloaded_changed += st.mismatches(prefill, unloaded);
    c.rewritten += st.rewritten;
    c.commits += st.commits;
    c.counters_equal = c.counters_equal && (!o.load_counters || st.counters() == expect.counters());
    c.bytes_read += res.bytes_read;
    c.bytes_needed += res.bytes_needed;
    c.header_bytes += headers;
    c.results.push_back(std::move(res));
  });
  return c;
}

bool takes_direct(const std::string& dir) {
  const std::string p = dir + "/.direct_probe";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  const bool ok = fd >= 0;
  if (ok) ::close(fd);
  ::unlink(p.c_str());
  return ok;
}

}  // namespace zt::test
