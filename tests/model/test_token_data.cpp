// Token data: .bin shards (good, truncated, wrong magic, wrong version, count larger than the file,
// trailing bytes), the sampler's world-size independence, prepare, and the built-in language.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <map>
#include <set>

#include "runtime/common/diagnostics.h"
#include "runtime/data/prepare.h"
#include "runtime/data/sampler.h"
#include "runtime/data/synthetic.h"
#include "runtime/data/token_dataset.h"
#include "runtime/data/token_shard.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("zt_token_data_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& n) const { return (path / n).string(); }
};

void write_raw(const std::string& path, const std::vector<int32_t>& header, size_t n_tokens) {
  std::ofstream f(path, std::ios::binary);
  std::vector<int32_t> h(256, 0);
  std::copy(header.begin(), header.end(), h.begin());
  f.write(reinterpret_cast<const char*>(h.data()), 1024);
  std::vector<uint16_t> t(n_tokens, 7);
  f.write(reinterpret_cast<const char*>(t.data()), std::streamsize(t.size() * 2));
}

// Returns the formatted diagnostics of the UserError read_token_shard throws ("" if none).
std::string refusal(const std::string& path) {
  try {
    read_token_shard(path);
  } catch (const UserError& e) {
    return e.diagnostics().format();
  }
  return "";
}

TEST(TokenShard, GoodFileRoundTrips) {
  TempDir d;
  std::vector<uint16_t> tokens = {1, 2, 65535, 0, 300};
  write_token_shard(d.file("a.bin"), tokens);
  EXPECT_EQ(fs::file_size(d.file("a.bin")), 1024u + 10u);
  EXPECT_EQ(read_token_shard(d.file("a.bin")), tokens);
}

TEST(TokenShard, RefusesBadFilesNamingFileOffsetAndExpectation) {
  TempDir d;
  write_raw(d.file("magic.bin"), {1234, 1, 3}, 3);
  write_raw(d.file("version.bin"), {20240520, 2, 3}, 3);
  write_raw(d.file("count.bin"), {20240520, 1, 10}, 3);
  write_raw(d.file("trailing.bin"), {20240520, 1, 2}, 3);
  {
    std::ofstream f(d.file("truncated.bin"), std::ios::binary);
    f << "short";
  }
  std::string m = refusal(d.file("magic.bin"));
  EXPECT_NE(m.find("magic.bin:byte 0"), std::string::npos) << m;
  EXPECT_NE(m.find("expected 20240520"), std::string::npos) << m;
  EXPECT_NE(m.find("1234"), std::string::npos) << m;
  m = refusal(d.file("version.bin"));
  EXPECT_NE(m.find("version.bin:byte 4"), std::string::npos) << m;
  EXPECT_NE(m.find("expected 1"), std::string::npos) << m;
  m = refusal(d.file("count.bin"));
  EXPECT_NE(m.find("count.bin:byte 1030"), std::string::npos) << m;  // where the file ends
  EXPECT_NE(m.find("promises 10 tokens (1044 bytes"), std::string::npos) << m;
  m = refusal(d.file("trailing.bin"));
  EXPECT_NE(m.find("trailing.bin:byte 1028"), std::string::npos) << m;
  m = refusal(d.file("truncated.bin"));
  EXPECT_NE(m.find("truncated.bin:byte 5"), std::string::npos) << m;
  EXPECT_NE(m.find("1024-byte header"), std::string::npos) << m;
  m = refusal(d.file("absent.bin"));
  EXPECT_NE(m.find("absent.bin"), std::string::npos) << m;
  EXPECT_NE(m.find("prepare"), std::string::npos) << m;
}

// The samples of a global batch, by slot, are the same at world sizes 1, 2 and 4 (micro batch and
// accumulation adjusted to keep the global batch at 8), and ranks read disjoint samples.
TEST(BatchSampler, GlobalBatchIndependentOfWorldSize) {
  std::vector<uint16_t> stream(16 * 50 + 1);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = uint16_t(i % 1000);
  const int T = 16;
  std::map<int, std::vector<std::vector<int32_t>>> by_world;  // world -> per step, tokens by slot
  for (auto [W, M, G] : std::vector<std::array<int, 3>>{{1, 4, 2}, {2, 2, 2}, {4, 1, 2}, {1, 8, 1}}) {
    BatchGeometry g{W, M, G};
    ASSERT_EQ(g.global_batch(), 8);
    std::vector<std::vector<int32_t>> steps;
    for (int64_t step = 0; step < 9; ++step) {  // 9 × 8 = 72 > 50 windows: crosses an epoch
      std::vector<int32_t> all(size_t(8) * T);
      for (int r = 0; r < W; ++r) {
        BatchSampler s(stream, T, 42);  // each rank has its own sampler, as in a real run
        std::set<int64_t> seen;
        for (int k = 0; k < G; ++k) {
          std::vector<int32_t> tok(size_t(M) * T), tgt(size_t(M) * T);
          s.fill(step, g, r, k, tok.data(), tgt.data());
          for (int row = 0; row < M; ++row) {
            const int64_t slot = BatchSampler::global_index(step, g, r, k, row) - step * 8;
            std::copy(tok.begin() + row * T, tok.begin() + (row + 1) * T, all.begin() + slot * T);
            EXPECT_EQ(tgt[size_t(row) * T], tok[size_t(row) * T + 1]);  // targets are shifted inputs
          }
        }
      }
      steps.push_back(all);
    }
    by_world[W * 10 + M] = steps;
  }
  const auto& ref = by_world.begin()->second;
  for (const auto& [key, steps] : by_world) EXPECT_EQ(steps, ref) << "world/micro " << key;
  // Within an epoch every window appears once: the first 48 samples (6 steps) are distinct windows.
  std::set<int32_t> starts;
  for (int step = 0; step < 6; ++step)
    for (int slot = 0; slot < 8; ++slot) starts.insert(ref[size_t(step)][size_t(slot) * T]);
  EXPECT_EQ(starts.size(), 48u);
  // A different seed gives a different order.
  BatchSampler a(stream, T, 42), b(stream, T, 43);
  int same = 0;
  for (int i = 0; i < 50; ++i) same += a.window_of(i) == b.window_of(i);
  EXPECT_LT(same, 10);
}

TEST(Prepare, TextBecomesByteShards) {
  TempDir d;
  {
    std::ofstream f(d.file("in.txt"), std::ios::binary);
    for (int i = 0; i < 100; ++i) f << "hello world\xff\n";  // 13 bytes each, one byte >= 128
  }
  const auto r = prepare_text(d.file("in.txt"), d.file("out"));
  EXPECT_EQ(r.train_tokens + r.val_tokens, 1300);
  EXPECT_EQ(r.val_tokens, 130);
  const auto train = read_token_shard(d.file("out") + "/train.bin");
  const auto val = read_token_shard(d.file("out") + "/val.bin");
  ASSERT_EQ(train.size(), 1170u);
  EXPECT_EQ(train[0], 'h');
  EXPECT_EQ(train[11], 0xff);
  EXPECT_EQ(val.back(), '\n');
  const auto ds = load_token_dataset(d.file("out"));
  EXPECT_EQ(ds.vocab, 256);
  EXPECT_THROW(prepare_text(d.file("missing.txt"), d.file("out2")), UserError);
}

// Data that does not fit the model names the file and, for an id out of range, its byte offset;
// the vocabulary compared is the largest id actually present (issue 15).
TEST(TokenDataset, ChecksNameTheFileTheOffsetAndTheFix) {
  TempDir d;
  std::vector<uint16_t> train(5000, 7), val(10, 7);
  train[17] = 300;  // the largest id: 300
  write_token_shard(d.file("train.bin"), train);
  write_token_shard(d.file("val.bin"), val);
  const TokenDataset ds = load_token_dataset(d.path.string());
  EXPECT_EQ(ds.vocab, 301);
  EXPECT_TRUE(ds.from_files);
  EXPECT_EQ(ds.train_source, d.file("train.bin"));

  // --vocab 301 fits data whose largest id is 300 (it used to be rounded up to 512 and refused).
  Diagnostics ok = check_dataset(ds, 8, 301);
  EXPECT_EQ(ok.error_count(), 0u) << ok.format();

  // Too short for one window of seq_len + 1 tokens: the file, its token count and the fix.
  Diagnostics shortd = check_dataset(ds, 16, 301);
  ASSERT_EQ(shortd.error_count(), 1u) << shortd.format();
  EXPECT_EQ(shortd.all()[0].path, d.file("val.bin"));
  EXPECT_EQ(shortd.all()[0].value, "10 tokens");
  EXPECT_NE(shortd.all()[0].message.find("seq_len + 1 = 17"), std::string::npos) << shortd.format();
  EXPECT_NE(shortd.all()[0].fix.find("--seq-len 9"), std::string::npos) << shortd.format();

  // An id >= vocab: the file and byte offset of the first one (header + 2 × 17), and --vocab 301.
  Diagnostics big = check_dataset(ds, 8, 300);
  ASSERT_EQ(big.error_count(), 1u) << big.format();
  EXPECT_EQ(big.all()[0].path, d.file("train.bin") + ":byte " + std::to_string(1024 + 2 * 17));
  EXPECT_EQ(big.all()[0].value, "token id 300");
  EXPECT_NE(big.all()[0].message.find("vocabulary of 300"), std::string::npos) << big.format();
  EXPECT_NE(big.all()[0].fix.find("--vocab 301"), std::string::npos) << big.format();

  // The sampler's own refusal names the stream too.
  try {
    BatchSampler s(ds.val, 16, 1, ds.val_source);
    ADD_FAILURE() << "a 10-token stream was accepted for seq_len 16";
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostics().all()[0].path, d.file("val.bin"));
  }
}

// A directory, a FIFO or a device is refused as input with what it is, as a user error (exit 2),
// and a FIFO without a writer does not block.
TEST(TokenDataset, NonRegularInputsAreUserErrors) {
  TempDir d;
  const std::string fifo = d.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {d.path.string(), "a directory"}, {fifo, "a FIFO"}, {"/dev/zero", "a character device"}}) {
    try {
      prepare_text(path, d.file("out"));
      ADD_FAILURE() << path << " was accepted as --text";
    } catch (const UserError& e) {
      EXPECT_EQ(e.diagnostics().all()[0].path, path);
      EXPECT_EQ(e.diagnostics().all()[0].value, kind) << e.diagnostics().format();
    }
    const std::string m = refusal(path);
    EXPECT_NE(m.find(kind), std::string::npos) << m;
  }
}

TEST(SyntheticLanguage, DeterministicAndLowEntropy) {
  const auto a = make_synthetic_dataset(7, 200000, 1000), b = make_synthetic_dataset(7, 200000, 1000);
  const auto c = make_synthetic_dataset(8, 200000, 1000);
  const auto train = a.train.tokens(0, a.train.size());
  EXPECT_EQ(train, b.train.tokens(0, b.train.size()));
  EXPECT_NE(train, c.train.tokens(0, c.train.size()));
  EXPECT_NE(a.train.tokens(0, 1000), a.val.tokens(0, a.val.size()));
  for (uint32_t t : train) ASSERT_LT(t, 256u);
  // Unigram entropy near ln 32 = 3.47 nats; the chain's entropy rate is 0.94 nats: a model that
  // uses the context can go far below the unigram entropy.
  const double hu = unigram_entropy(a.train);
  EXPECT_GT(hu, 3.0);
  EXPECT_LT(hu, 3.4657 + 1e-9);
  EXPECT_NEAR(synthetic_conditional_entropy(), 0.9376, 1e-3);
  // Empirical check of the entropy rate: plug-in H(X | two previous symbols).
  std::map<uint32_t, std::map<uint16_t, int>> ctx;
  for (size_t i = 2; i < train.size(); ++i) ctx[train[i - 2] * 256u + train[i - 1]][uint16_t(train[i])]++;
  double h = 0;
  for (auto& [k, m] : ctx) {
    double n = 0;
    for (auto& [t, c2] : m) n += c2;
    for (auto& [t, c2] : m) h -= c2 / double(train.size() - 2) * std::log(c2 / n);
  }
  EXPECT_NEAR(h, synthetic_conditional_entropy(), 0.05);
}

}  // namespace
}  // namespace zt
