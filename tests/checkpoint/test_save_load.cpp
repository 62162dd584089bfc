// Saves and loads with fake states: the on-disk layout, failed saves (disk full on one rank, the
// manifest write failing) leaving the previous checkpoint and `latest` as they were, re-saving a
// tag, stale staging folders, tag validation, the background writer and the loop's manager.
#include <gtest/gtest.h>

#include <cerrno>
#include <thread>

#include "runtime/checkpoint/checkpoint_manager.h"
#include "runtime/checkpoint/file_io.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

using test::FakeShardedState;
using test::TempDir;

LoadOptions at(const std::string& dir) {
  LoadOptions o;
  o.path = dir;
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> hidden_entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& n : list_directory(dir))
    if (n[0] == '.' || contains(n, ".tmp-")) out.push_back(n);
  return out;
}

RunFacts facts(const ModelConfig& m) {
  RunFacts f;
  f.model = m;
  f.seed = 3;
  f.global_batch = 4;
  return f;
}

struct NoFaults {
  ~NoFaults() { set_write_fault_hook(nullptr); }
};

TEST(CheckpointSave, WritesRankFilesManifestAndLatestLast) {
  TempDir dir;
  const auto m = test::small_model();
  const SaveResult r = test::save_fake(dir.path(), m, 3, 2, 5);
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(read_small_file(dir.sub("latest")), "global_step5");
  const auto names = list_directory(dir.sub("global_step5"));
  EXPECT_EQ(names, (std::vector<std::string>{"manifest.json", "rank00000.safetensors", "rank00001.safetensors",
                                             "rank00002.safetensors"}));
  EXPECT_TRUE(hidden_entries(dir.path()).empty());
  Manifest man;
  Diagnostics d;
  ASSERT_TRUE(read_manifest(dir.sub("global_step5"), man, d)) << d.format();
  EXPECT_EQ(man.world_size, 3);
  EXPECT_EQ(man.stage, 2);
  EXPECT_EQ(man.step(), 5);
  EXPECT_EQ(man.arrays, (std::vector<std::string>{"master", "exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(man.units.size(), size_t(m.units()));
  EXPECT_EQ(man.total_numel(), m.total_params());
  EXPECT_EQ(man.run.seed, 7u);
  EXPECT_EQ(man.run.global_batch, 8);
  EXPECT_TRUE(contains(r.message, "saved checkpoint")) << r.message;
  const auto c = test::load_fake(at(dir.path()), m, 3, 2, 5);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.commits, 3);
  EXPECT_TRUE(c.counters_equal);
}

// Each rank's private arrays go into its own file and come back to the same rank at the same world
// size, checked; at another world size the state is told why instead; a checkpoint without them
// says nothing.
TEST(CheckpointSave, PrivateArraysComeBackToTheirRankAtTheSameWorldSize) {
  TempDir dir;
  const auto m = test::small_model();
  SaveOptions so;
  so.dir = dir.path();
  so.warn = [](const std::string&) {};
  test::run_ranks(3, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, 3, rank, 0);
    st.with_private = true;
    st.fill(4);
    RankExchange ex(comm);
    CheckpointWriter w(ex, so);
    RunFacts f = facts(m);
    f.global_batch = 8;
    f.micro_batch = 2;
    f.grad_accum = 1;
    const auto r = w.save(st, f, "global_step4");
    EXPECT_TRUE(r.ok) << r.message;
  });
  Manifest man;
  Diagnostics d;
  ASSERT_TRUE(read_manifest(dir.sub("global_step4"), man, d)) << d.format();
  ASSERT_EQ(man.ranks.size(), 3u);
  EXPECT_EQ(man.ranks[2].private_arrays,
            (std::vector<ShardedState::PrivateArray>{{"errors_a", 1000 + 74}, {"errors_b", 64}}));
  for (int world : {3, 2}) {
    test::run_ranks(world, [&](int rank, Communicator& comm) {
      FakeShardedState st(m, world, rank, 0);
      st.with_private = true;
      RankExchange ex(comm);
      load_checkpoint(st, ex, at(dir.path()));
      EXPECT_EQ(st.mismatches(4, st.arrays()), 0);
      if (world == 3) {
        EXPECT_TRUE(st.private_why.empty()) << st.private_why;
        for (const auto& a : st.private_arrays(st.counters())) {
          const auto& got = st.loaded_private[a.name];
          ASSERT_EQ(int64_t(got.size()), a.n) << a.name;
          for (int64_t i = 0; i < a.n; ++i)
            ASSERT_EQ(got[size_t(i)], FakeShardedState::private_value(a.name, rank, i, 4)) << a.name << " at " << i;
        }
      } else {
        EXPECT_TRUE(st.loaded_private.empty());
        EXPECT_TRUE(contains(st.private_why, "saved at world size 3")) << st.private_why;
      }
    });
  }
  // A checkpoint saved without them loads without a word about them.
  TempDir plain;
  ASSERT_TRUE(test::save_fake(plain.path(), m, 3, 0, 2).ok);
  test::run_ranks(3, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, 3, rank, 0);
    st.with_private = true;
    RankExchange ex(comm);
    load_checkpoint(st, ex, at(plain.path()));
    EXPECT_TRUE(st.loaded_private.empty());
    EXPECT_TRUE(st.private_why.empty());
  });
}

TEST(CheckpointSave, DiskFullOnOneRankLeavesThePreviousCheckpointAndLatest) {
  NoFaults guard;
  TempDir dir;
  const auto m = test::small_model();
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 1, 1).ok);
  const std::string before = test::tree_fingerprint(dir.path());
  set_write_fault_hook([](const std::string& path, int64_t offset, size_t) {
    return contains(path, "rank00001") && offset > 100 ? ENOSPC : 0;
  });
  const SaveResult r = test::save_fake(dir.path(), m, 2, 1, 2);
  set_write_fault_hook(nullptr);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.message, "checkpoint global_step2 was not saved: rank 1")) << r.message;
  EXPECT_TRUE(contains(r.message, "No space left on device")) << r.message;
  EXPECT_TRUE(contains(r.message, "`latest` still names global_step1, untouched")) << r.message;
  EXPECT_EQ(test::tree_fingerprint(dir.path()), before) << "the failed save left something behind or changed the old one";
  EXPECT_EQ(test::load_fake(at(dir.path()), m, 2, 1, 1).mismatches, 0);
}

TEST(CheckpointSave, FailedManifestWriteLeavesLatestUntouched) {
  NoFaults guard;
  TempDir dir;
  const auto m = test::small_model();
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 3, 1).ok);
  const std::string before = test::tree_fingerprint(dir.path());
  set_write_fault_hook([](const std::string& path, int64_t, size_t) { return contains(path, "manifest.json") ? EIO : 0; });
  const SaveResult r = test::save_fake(dir.path(), m, 2, 3, 2);
  set_write_fault_hook(nullptr);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.message, "rank 0: cannot write")) << r.message;
  EXPECT_TRUE(contains(r.message, "global_step1, untouched")) << r.message;
  EXPECT_EQ(test::tree_fingerprint(dir.path()), before);
}

TEST(CheckpointSave, FirstSaveFailingSaysThereWasNoPreviousOne) {
  NoFaults guard;
  TempDir dir;
  set_write_fault_hook([](const std::string& path, int64_t, size_t) { return contains(path, "rank00000") ? ENOSPC : 0; });
  const SaveResult r = test::save_fake(dir.path(), test::small_model(), 1, 0, 1);
  set_write_fault_hook(nullptr);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.message, "no previous checkpoint existed")) << r.message;
  EXPECT_TRUE(list_directory(dir.path()).empty());
}

TEST(CheckpointSave, ResavingATagReplacesItWhole) {
  TempDir dir;
  const auto m = test::small_model();
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 2, 1, {}, "best").ok);
  ASSERT_TRUE(test::save_fake(dir.path(), m, 3, 2, 9, {}, "best").ok);  // other world size, same tag
  EXPECT_EQ(list_directory(dir.sub("best")).size(), 4u) << "no rank file of the old save may remain";
  EXPECT_TRUE(hidden_entries(dir.path()).empty());
  EXPECT_EQ(test::load_fake(at(dir.path()), m, 2, 2, 9).mismatches, 0);
}

TEST(CheckpointSave, RemovesStagingFoldersOfKilledSaves) {
  TempDir dir;
  const auto m = test::small_model();
  make_directories(dir.sub(".global_step3.saving-0123456789abcdef"));
  replace_file_atomically(dir.sub(".global_step3.saving-0123456789abcdef/rank00000.safetensors"), "partial");
  replace_file_atomically(dir.sub("latest.tmp-4242"), "x");
  ASSERT_TRUE(test::save_fake(dir.path(), m, 1, 0, 4).ok);
  EXPECT_TRUE(hidden_entries(dir.path()).empty());
}

TEST(CheckpointSave, TagValidation) {
  TempDir dir;
  const auto m = test::small_model();
  for (const std::string mode : {"Fail", "Warn", "Ignore"}) {
    std::vector<std::string> warnings;
    std::mutex mu;
    auto errors = test::run_ranks_collect(2, [&](int rank, Communicator& comm) {
      FakeShardedState st(m, 2, rank, 1);
      st.fill(3);
      RankExchange ex(comm);
      SaveOptions o;
      o.dir = dir.sub(mode);
      o.tag_validation = mode;
      o.warn = [&](const std::string& w) {
        std::lock_guard<std::mutex> lock(mu);
        warnings.push_back(w);
      };
      CheckpointWriter w(ex, o);
      RunFacts f;
      f.model = m;
      w.save(st, f, "run-rank" + std::to_string(rank));
    });
    if (mode == "Fail") {
      for (auto& e : errors) {
        ASSERT_TRUE(e);
        try {
          std::rethrow_exception(e);
        } catch (const UserError& u) {
          EXPECT_TRUE(contains(u.what(), "rank 0 'run-rank0'; rank 1 'run-rank1'")) << u.what();
        }
      }
      EXPECT_FALSE(is_directory(dir.sub("Fail/run-rank0")));
      continue;
    }
    for (auto& e : errors) EXPECT_FALSE(e);
    EXPECT_TRUE(is_directory(dir.sub(mode + "/run-rank0"))) << "saved under rank 0's tag";
    EXPECT_FALSE(is_directory(dir.sub(mode + "/run-rank1")));
    EXPECT_EQ(warnings.empty(), mode == "Ignore") << mode;
  }
}

TEST(CheckpointSave, TagValidationIsCaseInsensitiveAndChecked) {
  test::run_ranks(1, [&](int, Communicator& comm) {
    RankExchange ex(comm);
    SaveOptions o;
    o.dir = "unused";
    o.tag_validation = "fail";
    EXPECT_NO_THROW(CheckpointWriter(ex, o));
    o.tag_validation = "Sometimes";
    EXPECT_THROW(CheckpointWriter(ex, o), UserError);
  });
}

TEST(CheckpointSave, BackgroundWriteSavesTheSnapshotNotLaterValues) {
  TempDir dir;
  const auto m = test::small_model();
  test::run_ranks(2, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, 2, rank, 3);
    st.fill(4);
    RankExchange ex(comm);
    SaveOptions o;
    o.dir = dir.path();
    CheckpointWriter w(ex, o);
    RunFacts f;
    f.model = m;
    w.begin(st, f, "global_step4");
    st.fill(99);  // training goes on while the file is written
    int polls = 0;
    while (!w.poll()) {
      ++polls;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_FALSE(w.pending());
    auto results = w.take_results();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].ok) << results[0].message;
    EXPECT_GT(results[0].snapshot_s, 0.0);
    // The next save waits for (and completes) the one in flight.
    w.begin(st, f, "global_step99");
    w.begin(st, f, "global_step100");
    w.finish();
    results = w.take_results();
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].tag, "global_step99");
    EXPECT_EQ(results[1].tag, "global_step100");
  });
  EXPECT_EQ(test::load_fake([&] { auto o = at(dir.path()); o.tag = "global_step4"; return o; }(), m, 2, 3, 4).mismatches, 0);
  EXPECT_EQ(read_small_file(dir.sub("latest")), "global_step100");
}

TEST(CheckpointManager, SavesEveryNStepsAndAtTheEndThenResumes) {
  TempDir dir;
  const auto m = test::small_model();
  test::run_ranks(2, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, 2, rank, 2);
    const RunFacts f = facts(m);
    CheckpointSettings s;
    s.save_dir = dir.path();
    s.save_every = 2;
    CheckpointManager mgr(st, comm, nullptr, f, s, nullptr);
    EXPECT_EQ(mgr.start(), 0);
    for (int64_t step = 1; step <= 5; ++step) {
      st.fill(step);
      mgr.after_step(step);
    }
    mgr.at_end(5);
    std::vector<std::string> tags;
    for (const auto& r : mgr.saves()) tags.push_back(r.tag);
    EXPECT_EQ(tags, (std::vector<std::string>{"global_step2", "global_step4", "global_step5"}));
  });
  EXPECT_EQ(read_small_file(dir.sub("latest")), "global_step5");
  test::run_ranks(3, [&](int rank, Communicator& comm) {
    FakeShardedState st(m, 3, rank, 1);
    const RunFacts f = facts(m);
    CheckpointSettings s;
    s.load_dir = dir.path();
    CheckpointManager mgr(st, comm, nullptr, f, s, nullptr);
    EXPECT_EQ(mgr.start(), 5);
    EXPECT_EQ(st.mismatches(5, st.arrays()), 0);
    ASSERT_TRUE(mgr.loaded());
    EXPECT_FALSE(mgr.loaded()->warnings.has_errors());
  });
}

TEST(CheckpointManager, RefusesContradictorySettings) {
  const auto m = test::small_model();
  test::run_ranks(1, [&](int, Communicator& comm) {
    FakeShardedState st(m, 1, 0, 0);
    CheckpointSettings s;
    s.save_every = 10;
    s.load_dir = "a";
    s.init_from = "b.safetensors";
    RunFacts facts;
    facts.model = m;
    try {
      CheckpointManager mgr(st, comm, nullptr, facts, s, nullptr);
      ADD_FAILURE() << "accepted";
    } catch (const UserError& e) {
      EXPECT_EQ(e.diagnostics().error_count(), 2u) << e.diagnostics().format();
    }
  });
}

TEST(CheckpointManager, RefusesAnotherGlobalBatchOrSeed) {
  Manifest m;
  m.tag = "global_step3";
  m.run.seed = 1;
  m.run.global_batch = 16;
  m.precision = "fp32";
  RunFacts now;
  now.seed = 1;
  now.global_batch = 8;
  Diagnostics w = compare_run(m, now, "fp32");
  ASSERT_EQ(w.error_count(), 1u);
  EXPECT_EQ(w.warning_count(), 0u);
  EXPECT_TRUE(contains(w.format(), "global batch 16, this run's global batch is 8")) << w.format();
  now.global_batch = 16;
  now.seed = 2;
  w = compare_run(m, now, "bf16");
  ASSERT_EQ(w.error_count(), 1u);
  EXPECT_TRUE(contains(w.format(), "seed 1, this run's seed is 2")) << w.format();
  EXPECT_TRUE(contains(w.format(), "--seed 1")) << w.format();
  EXPECT_EQ(w.warning_count(), 1u) << w.format();  // fp32 saved, bf16 now
}

}  // namespace
}  // namespace zt::ckpt
