// Bad checkpoints: a truncated shard, a corrupted header, corrupted data, a manifest from another
// model shape, a missing rank file, a newer format version, a folder without `latest`. Each is a
// UserError naming the file, the byte offset or key, what was expected and the fix; no state is
// written before the header checks pass, commit() never runs, and the checkpoint is not modified;
// the pre-start check (verify_needed) reads the blocks a rank will load and finds damage in them.
#include <gtest/gtest.h>

#include <fstream>

#include "runtime/checkpoint/file_io.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

using test::FakeShardedState;

struct Attempt {
  std::string errors;  // every diagnostic of every rank
  int64_t written = 0;
  int commits = 0;
};

// Loads `o` at world `world` (stage 2, small model unless `m` given), expecting every rank to fail.
Attempt load_expecting_failure(const LoadOptions& o, int world, ModelConfig m = test::small_model()) {
  Attempt a;
  std::mutex mu;
  auto errors = test::run_ranks_collect(world, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, world, rank, 2);
    RankExchange ex(comm);
    try {
      load_checkpoint(st, ex, o);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      a.written += st.elements_written;
      a.commits += st.commits;
      throw;
    }
  });
  for (auto& e : errors) {
    EXPECT_TRUE(e) << "a rank loaded a bad checkpoint";
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const UserError& u) {
      a.errors += u.diagnostics().format();
    } catch (const std::exception& x) {
      ADD_FAILURE() << "not a UserError: " << x.what();
    }
  }
  return a;
}

class BadCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto r = test::save_fake(dir.path(), test::small_model(), 2, 1, 3);
    ASSERT_TRUE(r.ok) << r.message;
    tag = dir.sub("global_step3");
    o.path = dir.path();
  }
  // Asserts the error text has every part, nothing was written or committed, and nothing changed.
  void expect(const std::vector<std::string>& parts, int world = 2, ModelConfig m = test::small_model()) {
    const std::string before = test::tree_fingerprint(dir.path());
    const Attempt a = load_expecting_failure(o, world, m);
    for (const auto& p : parts) EXPECT_NE(a.errors.find(p), std::string::npos) << "missing '" << p << "' in:\n" << a.errors;
    EXPECT_NE(a.errors.find("Fix: "), std::string::npos) << a.errors;
    EXPECT_EQ(a.written, 0) << "state written before the checkpoint was known good";
    EXPECT_EQ(a.commits, 0);
    EXPECT_EQ(test::tree_fingerprint(dir.path()), before) << "loading modified the checkpoint";
  }
  void patch(const std::string& path, int64_t offset, char c) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.put(c);
  }
  test::TempDir dir;
  std::string tag;
  LoadOptions o;
};

TEST_F(BadCheckpoint, TruncatedShard) {
  const std::string f = tag + "/rank00001.safetensors";
  const int64_t size = FileReader(f).size();
  ASSERT_EQ(::truncate(f.c_str(), size - 100), 0);
  expect({f, "(byte " + std::to_string(size - 100) + ")", "truncated", "ends 100 bytes early"});
}

TEST_F(BadCheckpoint, CorruptedHeader) {
  const std::string f = tag + "/rank00000.safetensors";
  patch(f, 40, '#');
  expect({f, "the header does not match the manifest's record"});
}

TEST_F(BadCheckpoint, CorruptedDataIsCaughtByItsBlockChecksum) {
  const std::string f = tag + "/rank00000.safetensors";
  const int64_t size = FileReader(f).size();
  patch(f, size - 10, '\x7f');
  const std::string before = test::tree_fingerprint(dir.path());
  const Attempt a = load_expecting_failure(o, 2);
  EXPECT_NE(a.errors.find(f), std::string::npos) << a.errors;
  EXPECT_NE(a.errors.find("has checksum xxh3:"), std::string::npos) << a.errors;
  EXPECT_NE(a.errors.find("file bytes "), std::string::npos) << a.errors;
  EXPECT_EQ(a.commits, 0) << "a load that found bad data must not commit";
  EXPECT_EQ(test::tree_fingerprint(dir.path()), before);
  // Without verification the same load goes through: the check is what catches it.
  o.verify = false;
  EXPECT_EQ(test::load_fake(o, test::small_model(), 2, 1, 3).commits, 2);
}

TEST_F(BadCheckpoint, ManifestOfAnotherModelShape) {
  ModelConfig other = test::small_model();
  other.dim = 32;
  expect({tag + "/manifest.json: units[0] (embedding).tensors[0]", "wte [61, 24]", "this run's model has wte [61, 32]",
          "2 layers, 2 heads, dim 24"},
         2, other);
}

TEST_F(BadCheckpoint, ManifestWithAnotherLayerCount) {
  ModelConfig other = test::small_model();
  other.layers = 3;
  expect({"manifest.json: units", "4 units", "this run's model has 5 units"}, 2, other);
}

TEST_F(BadCheckpoint, MissingRankFile) {
  ASSERT_EQ(::unlink((tag + "/rank00001.safetensors").c_str()), 0);
  expect({tag + "/rank00001.safetensors", "rank 1's shard file is missing"});
}

TEST_F(BadCheckpoint, NewerFormatVersion) {
  std::string text = read_small_file(tag + "/manifest.json");
  const auto at = text.find("\"format_version\": 1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 19, "\"format_version\": 7");
  replace_file_atomically(tag + "/manifest.json", text);
  expect({tag + "/manifest.json: format_version", "= 7", "format version 7", "reads format versions up to 2",
          "Fix: load it with zerotrain"});
}

TEST_F(BadCheckpoint, FolderWithoutLatest) {
  ASSERT_EQ(::unlink(dir.sub("latest").c_str()), 0);
  expect({dir.sub("latest"), "has no `latest` file", "global_step3"});
}

TEST_F(BadCheckpoint, LatestNamingAMissingTag) {
  replace_file_atomically(dir.sub("latest"), "global_step9");
  expect({"names a tag that is not in", "the complete tags in " + dir.path() + ": global_step3"});
}

TEST_F(BadCheckpoint, ManifestOwnedRangesWithAHole) {
  std::string text = read_small_file(tag + "/manifest.json");
  Manifest m;
  Diagnostics d;
  ASSERT_TRUE(parse_manifest(text, "m", m, d));
  m.ranks[1].owned[0].begin += 1;
  m.ranks[1].owned[0].n -= 1;
  replace_file_atomically(tag + "/manifest.json", m.to_json().dump(1));
  expect({"manifest.json: ranks", "owned by no rank"});
}

TEST_F(BadCheckpoint, EveryErrorOfARankIsReportedTogether) {
  ASSERT_EQ(::unlink((tag + "/rank00000.safetensors").c_str()), 0);
  ASSERT_EQ(::unlink((tag + "/rank00001.safetensors").c_str()), 0);
  // At world 1 the one rank needs both files: both are named in one report.
  expect({"rank00000.safetensors", "rank00001.safetensors"}, 1);
}

// What a run checks before its engine exists (check_before_start): only the files holding this
// rank's needed ranges are read, every block of them checked; damage elsewhere is another rank's.
TEST_F(BadCheckpoint, VerifyNeededReadsWhatTheRankLoadsAndFindsDamageThere) {
  const ModelConfig m = test::small_model();
  const std::string f1 = tag + "/rank00001.safetensors";
  const int64_t size0 = FileReader(tag + "/rank00000.safetensors").size(), size1 = FileReader(f1).size();
  patch(f1, size1 - 10, '\x7f');
  auto verify = [&](int rank, int stage, Diagnostics& d) {
    FakeShardedState st(m, 2, rank, stage);
    LoadPlan plan;
    EXPECT_TRUE(prepare_manifest(st.units(), st.arrays(), st.optimizer(), o, plan, d)) << d.format();
    return verify_needed(plan, st.needed(), "load an earlier tag with --load-tag", d);
  };
  Diagnostics d0;
  const uint64_t bytes0 = verify(0, 1, d0);  // rank 0's shard lies in rank 0's file alone
  EXPECT_FALSE(d0.has_errors()) << d0.format();
  EXPECT_GE(bytes0, uint64_t(size0) - 4096) << "every block of its ranges is read";
  EXPECT_LE(bytes0, uint64_t(size0)) << "the other rank's file is not read";
  for (int stage : {1, 0}) {  // rank 1's shard, or (stage 0) everything
    Diagnostics d;
    verify(stage == 0 ? 0 : 1, stage, d);
    const std::string e = d.format();
    EXPECT_NE(e.find(f1 + ": block 0 of tensor \"exp_avg_sq/"), std::string::npos) << e;
    EXPECT_NE(e.find("has checksum xxh3:"), std::string::npos) << e;
    EXPECT_NE(e.find("load an earlier tag with --load-tag (the complete tags in " + dir.path() + ": global_step3)"),
              std::string::npos)
        << e;
  }
}

}  // namespace
}  // namespace zt::ckpt
