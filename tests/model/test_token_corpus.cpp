// Corpora of many shards: a folder or globs of llm.c-named shards in name order, both token widths,
// windows that never cross a shard's end (so shards that share their boundary token give the same
// windows as one shard), bad input naming the file, and a resident set that stays flat while a
// corpus far larger than a window is read.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/common/diagnostics.h"
#include "runtime/data/sampler.h"
#include "runtime/data/token_dataset.h"
#include "runtime/data/token_shard.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("zt_token_corpus_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& n) const { return (path / n).string(); }
};

std::vector<uint16_t> stream(size_t n, uint32_t seed) {
  std::vector<uint16_t> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = uint16_t((i * 2654435761u + seed) % 1000);
  return s;
}

std::string refusal(const std::string& dir, const std::string& train = "", const std::string& val = "") {
  try {
    load_token_dataset(dir, train, val);
  } catch (const UserError& e) {
    return e.diagnostics().format();
  }
  return "";
}

// One stream cut into shards that each hold k·T + 1 tokens and share their boundary token with the
// next: every window of the one-shard stream lies inside one shard, so both corpora have the same
// windows in the same order, and the sampler gives the same batches at any world size.
TEST(TokenCorpus, ShardsSharingTheirBoundaryTokenSampleLikeOneShard) {
  TempDir d;
  const int T = 16, k = 5, shards = 4;
  const auto all = stream(size_t(shards * k * T + 1), 3);
  fs::create_directories(d.file("one"));
  fs::create_directories(d.file("many"));
  write_token_shard(d.file("one/x_train_000000.bin"), all);
  write_token_shard(d.file("one/x_val_000000.bin"), stream(100, 9));
  for (int s = 0; s < shards; ++s) {
    std::vector<uint16_t> part(all.begin() + s * k * T, all.begin() + (s + 1) * k * T + 1);
    char name[64];
    std::snprintf(name, sizeof name, "many/x_train_%06d.bin", s);
    write_token_shard(d.file(name), part);
  }
  write_token_shard(d.file("many/x_val_000000.bin"), stream(100, 9));
  const TokenDataset one = load_token_dataset(d.file("one")), many = load_token_dataset(d.file("many"));
  EXPECT_EQ(many.train.shards(), shards);
  EXPECT_EQ(many.train_source, d.file("many") + "/*train*.bin (4 shards)");
  EXPECT_EQ(many.val_source, d.file("many/x_val_000000.bin"));
  BatchSampler a(one.train, T, 11), b(many.train, T, 11);
  ASSERT_EQ(a.num_windows(), shards * k);
  ASSERT_EQ(b.num_windows(), shards * k);
  for (int world : {1, 2, 4}) {
    const BatchGeometry g{world, 2, 2};
    std::vector<int32_t> ta(2 * T), ga(2 * T), tb(2 * T), gb(2 * T);
    for (int64_t step = 0; step < 12; ++step)  // several epochs
      for (int r = 0; r < world; ++r)
        for (int m = 0; m < 2; ++m) {
          a.fill(step, g, r, m, ta.data(), ga.data());
          b.fill(step, g, r, m, tb.data(), gb.data());
          ASSERT_EQ(ta, tb) << "step " << step << " rank " << r;
          ASSERT_EQ(ga, gb);
        }
  }
}

// Shards in name order (a glob's order), uint32 shards read like uint16 ones, and a shard's last
// tokens that do not make a window are not read.
TEST(TokenCorpus, GlobsBothWidthsAndWindowsInsideShards) {
  TempDir d;
  const int T = 8;
  std::vector<uint32_t> wide_a = {70000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, wide_b(20);  // 11 tokens: 1 window, 2 spare
  for (size_t i = 0; i < wide_b.size(); ++i) wide_b[i] = uint32_t(100000 + i);
  write_token_shard(d.file("w_train_000001.bin"), wide_b);  // written first, named second
  write_token_shard(d.file("w_train_000000.bin"), wide_a);
  write_token_shard(d.file("w_val_000000.bin"), wide_b);
  const TokenDataset ds = load_token_dataset("", d.file("w_train_*.bin"), d.file("w_val_*.bin"));
  EXPECT_EQ(ds.train.token_bytes(), 4);
  EXPECT_EQ(ds.train.source(0), d.file("w_train_000000.bin"));
  EXPECT_EQ(ds.vocab, 100020);
  EXPECT_EQ(corpus_windows(ds.train, T), 1 + 2);
  const BatchSampler s(ds.train, T, 1);
  std::vector<int32_t> tok(3 * T), tgt(3 * T);
  s.fill_sequential(0, 3, tok.data(), tgt.data());
  EXPECT_EQ(tok[0], 70000);
  EXPECT_EQ(tgt[T - 1], 8);            // window 0: tokens 0..8 of the first shard
  EXPECT_EQ(tok[T], 100000);           // window 1 starts the second shard: tokens 9, 10 are skipped
  EXPECT_EQ(tok[2 * T], 100000 + T);   // window 2
  EXPECT_EQ(tgt[3 * T - 1], 100000 + 2 * T);
  // The vocabulary check names the shard and byte offset of the first id that does not fit.
  const Diagnostics big = check_dataset(ds, T, 100000);
  ASSERT_EQ(big.error_count(), 2u) << big.format();
  EXPECT_EQ(big.all()[0].path, d.file("w_train_000001.bin") + ":byte " + std::to_string(1024 + 4 * 0));
  EXPECT_NE(big.all()[0].fix.find("--vocab 100020"), std::string::npos) << big.format();
}

TEST(TokenCorpus, BadInputNamesTheFile) {
  TempDir d;
  fs::create_directories(d.file("empty"));
  write_token_shard(d.file("empty/a_train_000000.bin"), stream(100, 1));
  write_token_shard(d.file("empty/a_train_000001.bin"), std::vector<uint16_t>{});
  write_token_shard(d.file("empty/a_val_000000.bin"), stream(100, 1));
  std::string m = refusal(d.file("empty"));
  EXPECT_NE(m.find("error: " + d.file("empty/a_train_000001.bin") + " = 0 tokens: empty token shard"), std::string::npos) << m;

  fs::create_directories(d.file("mixed"));
  write_token_shard(d.file("mixed/a_train_000000.bin"), stream(100, 1));
  write_token_shard(d.file("mixed/a_train_000001.bin"), std::vector<uint32_t>(100, 5));
  write_token_shard(d.file("mixed/a_val_000000.bin"), stream(100, 1));
  m = refusal(d.file("mixed"));
  EXPECT_NE(m.find("error: " + d.file("mixed/a_train_000001.bin") + " = 32-bit tokens: mixed token widths in the train "
                   "shards: " + d.file("mixed/a_train_000000.bin") + " holds 16-bit tokens"),
            std::string::npos) << m;

  m = refusal("", d.file("nothing_*.bin"), d.file("mixed/*val*.bin"));
  EXPECT_NE(m.find("error: --data-train = " + d.file("nothing_*.bin") + ": the pattern matches no file"), std::string::npos) << m;
  m = refusal(d.file("nowhere"));
  EXPECT_NE(m.find("error: --data = " + d.file("nowhere") + ": cannot read the folder: No such file"), std::string::npos) << m;
  fs::create_directories(d.file("noval"));
  write_token_shard(d.file("noval/train.bin"), stream(100, 1));
  m = refusal(d.file("noval"));
  EXPECT_NE(m.find("no validation shard (*val*.bin) in the folder"), std::string::npos) << m;
  write_token_shard(d.file("noval/train_val.bin"), stream(100, 1));
  m = refusal(d.file("noval"));
  EXPECT_NE(m.find(d.file("noval/train_val.bin") + ": the shard's name matches both"), std::string::npos) << m;
  m = refusal(d.file("noval"), d.file("x"), "");
  EXPECT_NE(m.find("--data DIR and --data-train/--data-val choose the data two ways"), std::string::npos) << m;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// A 64 MiB corpus, 32,000 windows: opening it (which reads every token for the vocabulary) and then
// reading every window leaves the resident set within a few MiB of where it was; a copy would add
// 64 MiB.
TEST(TokenCorpus, ResidentMemoryStaysFlatWhileReadingACorpusManyWindowsLong) {
  TempDir d;
  const int T = 1024;
  const size_t n = size_t(32) << 20;
  {
    std::vector<uint16_t> big(n);
    for (size_t i = 0; i < n; ++i) big[i] = uint16_t(i % 50000);
    write_token_shard(d.file("train.bin"), big);
    write_token_shard(d.file("val.bin"), stream(5000, 2));
  }
  const long before = rss_kib();
  ASSERT_GT(before, 0);
  const TokenDataset ds = load_token_dataset(d.path.string());
  const long opened = rss_kib();
  BatchSampler s(ds.train, T, 5);
  ASSERT_GT(s.num_windows(), 50 * 600);  // far more than 50 windows' worth
  std::vector<int32_t> tok(T), tgt(T);
  long peak = opened;
  int64_t checksum = 0;
  for (int64_t g = 0; g < s.num_windows(); ++g) {
    s.fill(g, BatchGeometry{1, 1, 1}, 0, 0, tok.data(), tgt.data());
    checksum += tok[0];
    if (g % 1024 == 0) peak = std::max(peak, rss_kib());
  }
  EXPECT_GT(checksum, 0);
  const long limit_kib = 8 << 10;  // generous: the corpus is 64 MiB
  EXPECT_LT(opened - before, limit_kib) << "opening the corpus made " << (opened - before) << " KiB resident";
  EXPECT_LT(peak - before, limit_kib) << "reading every window made " << (peak - before) << " KiB resident";
}

}  // namespace
}  // namespace zt
