// The checkpoint's bulk I/O: saves written O_DIRECT through io_uring where the file system takes
// it, the page-cache fallback where O_DIRECT is refused (at open on tmpfs, or by the first write)
// said once per writer, loads through the page cache and O_DIRECT (resharding, so ranges start
// and end off the 4096-byte grid) giving the saved values, the aio block's fault paths, and the
// data area starting on a 4096-byte boundary.
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "runtime/checkpoint/bulk_io.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/safetensors.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

using test::takes_direct;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Notes from every rank's writer, counted.
struct Notes {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& s) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(s);
    };
  }
};

int64_t data_start_of(const std::string& file) {
  Diagnostics d;
  auto f = SafetensorsFile::open(file, d, "");
  EXPECT_TRUE(f) << d.format();
  return f ? f->data_start() : -1;
}

LoadOptions at(const std::string& dir, bool direct) {
  LoadOptions o;
  o.path = dir;
  o.io.direct_reads = direct;
  return o;
}

// A save on the test folder, then loads at other world sizes through both read paths.
TEST(BulkIo, SavesDirectWhereTakenAndLoadsBothWaysAtAnyWorldSize) {
  test::TempDir dir;
  const auto m = test::small_model();
  Notes notes;
  SaveOptions so;
  so.block_bytes = 4096;
  so.warn = notes.sink();
  const SaveResult r = test::save_fake(dir.path(), m, 3, 1, 4, so);
  ASSERT_TRUE(r.ok) << r.message;
  const int64_t data = r.bytes - data_start_of(dir.sub("global_step4/rank00000.safetensors"));
  EXPECT_EQ(data_start_of(dir.sub("global_step4/rank00000.safetensors")) % 4096, 0);
  EXPECT_EQ(r.io.direct_bytes + r.io.buffered_bytes, data) << "every byte of the data area went one way or the other";
  if (takes_direct(dir.path())) {
    EXPECT_EQ(r.io.direct_bytes, data / 4096 * 4096) << "all but the last partial page O_DIRECT";
    EXPECT_TRUE(notes.lines.empty()) << notes.lines.front();
  } else {
    EXPECT_EQ(r.io.direct_bytes, 0);
    EXPECT_EQ(notes.lines.size(), 3u) << "one note per rank's writer";
  }
  for (int lanes : {0, 1, 3})  // page-cache reads on the default, one and three read lanes
    for (bool direct : {false, true})
      for (int world : {1, 2, 4})
        for (bool verify : {false, true}) {
        if (direct && lanes != 0) continue;  // O_DIRECT reads do not use the lanes
        SCOPED_TRACE(std::string(direct ? "O_DIRECT" : "page cache") + " load at world " + std::to_string(world) +
                     (verify ? ", verified" : "") + ", read_lanes " + std::to_string(lanes));
        LoadOptions o = at(dir.path(), direct);
        o.verify = verify;
        o.io.read_lanes = lanes;
        const auto c = test::load_fake(o, m, world, 3, 4);
        EXPECT_EQ(c.mismatches, 0);
        EXPECT_EQ(c.rewritten, 0);
        EXPECT_EQ(c.commits, world);
        EXPECT_GE(c.bytes_read - c.header_bytes, c.bytes_needed);
        for (const auto& res : c.results) {
          if (direct && takes_direct(dir.path())) {
            EXPECT_GT(res.io.direct_bytes, 0);
          }
          if (!direct) {
            EXPECT_EQ(res.io.direct_bytes, 0);
          }
        }
      }
}

// The switch: direct_writes off keeps every byte in the page cache, with nothing to say.
TEST(BulkIo, DirectWritesOffGoThroughThePageCache) {
  test::TempDir dir;
  const auto m = test::small_model();
  Notes notes;
  SaveOptions so;
  so.warn = notes.sink();
  so.io.direct_writes = false;
  const SaveResult r = test::save_fake(dir.path(), m, 2, 2, 1, so);
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.io.direct_bytes, 0);
  EXPECT_GT(r.io.buffered_bytes, 0);
  EXPECT_TRUE(notes.lines.empty());
  EXPECT_EQ(test::load_fake(at(dir.path(), false), m, 2, 2, 1).mismatches, 0);
}

// O_DIRECT refused by the first write (EINVAL, as some file systems answer at this alignment):
// the file is written through the page cache instead, said once per writer over several saves.
TEST(BulkIo, RefusedDirectWriteFallsBackToThePageCacheAndSaysSoOnce) {
  test::TempDir dir;
  if (!takes_direct(dir.path())) GTEST_SKIP() << "O_DIRECT is refused at open here; the tmpfs test covers that";
  const auto m = test::small_model();
  Notes notes;
  SaveOptions so;
  so.warn = notes.sink();
  so.io.aio.fault_on_write_piece = 1;
  so.io.aio.fault_errno = EINVAL;
  std::vector<SaveResult> results;
  test::run_ranks(1, [&](int, Communicator& comm) {
    test::FakeShardedState st(m, 1, 0, 1, OptimizerType::AdamW);
    RankExchange ex(comm);
    so.dir = dir.path();
    CheckpointWriter w(ex, so);
    RunFacts facts;
    facts.model = m;
    for (int64_t g : {1, 2}) {
      st.fill(g);
      results.push_back(w.save(st, facts, default_tag(g)));
    }
  });
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_EQ(r.io.direct_bytes, 0);
  }
  ASSERT_EQ(notes.lines.size(), 1u) << "said once for the writer, not once per save";
  EXPECT_TRUE(contains(notes.lines[0], "refuses O_DIRECT")) << notes.lines[0];
  EXPECT_TRUE(contains(notes.lines[0], "Invalid argument")) << notes.lines[0];
  EXPECT_TRUE(contains(notes.lines[0], "page cache")) << notes.lines[0];
  LoadOptions o = at(dir.path(), false);
  o.tag = "global_step2";
  EXPECT_EQ(test::load_fake(o, m, 2, 1, 2).mismatches, 0);
}

// tmpfs refuses O_DIRECT at open (kernels without shmem O_DIRECT): saves and O_DIRECT loads
// there take the page cache and say so once.
TEST(BulkIo, TmpfsFallsBackToThePageCache) {
  struct statfs fs {};
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994 /* TMPFS_MAGIC */)
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  if (takes_direct("/dev/shm")) GTEST_SKIP() << "this kernel's tmpfs takes O_DIRECT; the injected refusal covers the fallback";
  const std::string dir = "/dev/shm/zt_ckpt_bulk_io_" + std::to_string(::getpid());
  remove_tree(dir);
  make_directories(dir);
  const auto m = test::small_model();
  Notes notes;
  SaveOptions so;
  so.warn = notes.sink();
  const SaveResult r = test::save_fake(dir, m, 1, 1, 3, so);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.io.direct_bytes, 0);
  ASSERT_EQ(notes.lines.size(), 1u);
  EXPECT_TRUE(contains(notes.lines[0], dir)) << notes.lines[0];
  const auto c = test::load_fake(at(dir, true), m, 2, 0, 3);
  EXPECT_EQ(c.mismatches, 0);
  for (const auto& res : c.results) {
    EXPECT_EQ(res.io.direct_bytes, 0);
    bool noted = false;
    for (const auto& w : res.warnings.all()) noted = noted || contains(w.message, "refuses O_DIRECT");
    EXPECT_TRUE(noted) << "the load says once that its reads took the page cache";
  }
  remove_tree(dir);
}

// A failing ring write (a full disk) fails the save with the errno, the previous tag untouched.
TEST(BulkIo, FailedRingWriteFailsTheSaveNamingTheError) {
  test::TempDir dir;
  const auto m = test::small_model();
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 1, 1).ok);
  const std::string before = test::tree_fingerprint(dir.path());
  SaveOptions so;
  so.io.aio.fault_on_write_piece = 1;
  so.io.aio.fault_errno = ENOSPC;
  so.io.direct_writes = false;  // the ring's buffered writes: the same path on every file system
  const SaveResult r = test::save_fake(dir.path(), m, 2, 1, 2, so);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.message, "No space left on device")) << r.message;
  EXPECT_TRUE(contains(r.message, "`latest` still names global_step1, untouched")) << r.message;
  EXPECT_EQ(test::tree_fingerprint(dir.path()), before);
}

// Without io_uring (uring = false): plain pwrite and pread, same files, same values.
TEST(BulkIo, PlainSystemCallsWithoutTheRing) {
  test::TempDir dir;
  const auto m = test::small_model();
  SaveOptions so;
  so.io.uring = false;
  const SaveResult r = test::save_fake(dir.path(), m, 2, 3, 6, so);
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.io.direct_bytes, 0);
  LoadOptions o = at(dir.path(), true);
  o.io.uring = false;
  const auto c = test::load_fake(o, m, 3, 1, 6);
  EXPECT_EQ(c.mismatches, 0);
  for (const auto& res : c.results) EXPECT_EQ(res.io.direct_bytes, 0);
}

// Every setting of the aio block (small pieces, queue depth 1, requests split into ranges, one
// submit per piece, one request at a time) saves and loads, O_DIRECT and through the page cache,
// giving the saved values: the block shapes how the bytes move, never which bytes.
TEST(BulkIo, EveryAioSettingSavesAndLoadsTheSameValues) {
  struct Setting {
    const char* name;
    offload::AioConfig aio;
  };
  std::vector<Setting> settings(4);
  settings[0].name = "8 KiB pieces, queue depth 1";
  settings[0].aio.block_size = 8192;
  settings[0].aio.queue_depth = 1;
  settings[1].name = "intra_op_parallelism 3";
  settings[1].aio.intra_op_parallelism = 3;
  settings[2].name = "single_submit";
  settings[2].aio.single_submit = true;
  settings[3].name = "overlap_events off";
  settings[3].aio.overlap_events = false;
  const auto m = test::small_model();
  for (const auto& st : settings) {
    SCOPED_TRACE(st.name);
    test::TempDir dir;
    SaveOptions so;
    so.block_bytes = 4096;
    so.warn = [](const std::string&) {};
    so.io.aio = st.aio;
    const SaveResult r = test::save_fake(dir.path(), m, 2, 1, 3, so);
    ASSERT_TRUE(r.ok) << r.message;
    for (bool direct : {false, true}) {
      LoadOptions o = at(dir.path(), direct);
      o.io.aio = st.aio;
      const auto c = test::load_fake(o, m, 3, 2, 3);
      EXPECT_EQ(c.mismatches, 0) << (direct ? "O_DIRECT" : "page cache");
      EXPECT_EQ(c.commits, 3);
    }
  }
}

// Where a FlatState's arrays sit: each at the place in a page its bytes have in the rank file
// (whose data area starts on a page), so that an O_DIRECT load can read into them in place, or 16
// bytes past that (as a large malloc puts an array), so that it cannot.
enum class Placement { OffPage, PageCongruent };

// One rank holding a flat unit of Adam's three arrays in host memory, which it may offer to a load
// to fill in place.
class FlatState final : public ShardedState {
 public:
  FlatState(int64_t n, bool targets, Placement place = Placement::OffPage) : targets_(targets) {
    UnitLayout u;
    u.name = "flat";
    TensorView t;
    t.name = "w";
    t.numel = n;
    t.shape = {n};
    u.tensors = {t};
    u.numel = n;
    units_ = {u};
    for (size_t k = 0; k < 3; ++k) {
      // Array k's place in its file page (the arrays follow each other in the data area), or past it.
      const size_t lead = size_t(k) * size_t(n) * 4 % 4096 + (place == Placement::OffPage ? 16 : 0);
      page_[k].reset(static_cast<char*>(std::aligned_alloc(4096, (lead + size_t(n) * 4 + 4095) / 4096 * 4096)));
      data_[k] = reinterpret_cast<float*>(page_[k].get() + lead);
      std::fill_n(data_[k], n, 0.0f);
    }
  }
  void fill(float g) {
    for (size_t k = 0; k < 3; ++k)
      for (int64_t i = 0; i < n_(); ++i) data_[k][i] = g + float(k) + float(i % 977) * 1e-3f;
  }
  const std::vector<UnitLayout>& units() const override { return units_; }
  int world_size() const override { return 1; }
  int rank() const override { return 0; }
  int stage() const override { return 1; }
  DType precision() const override { return DType::F32; }
  OptimizerType optimizer() const override { return OptimizerType::AdamW; }
  std::vector<std::string> arrays() const override { return {"master", "exp_avg", "exp_avg_sq"}; }
  std::vector<ElementRange> owned() const override { return {{0, 0, units_[0].numel}}; }
  std::vector<ElementRange> needed() const override { return owned(); }
  void read(const std::string& a, const ElementRange& r, float* out) override {
    std::copy_n(data_[idx(a)] + r.begin, r.n, out);
  }
  void write(const std::string& a, const ElementRange& r, const float* in) override {
    ++writes;
    std::copy_n(in, r.n, data_[idx(a)] + r.begin);
  }
  float* write_target(const std::string& a, const ElementRange& r) override {
    return targets_ ? data_[idx(a)] + r.begin : nullptr;
  }
  void commit() override { ++commits; }
  nlohmann::json counters() const override { return {{"step", 1}, {"applied_steps", 1}, {"skipped_steps", 0}}; }
  void set_counters(const nlohmann::json&) override {}
  std::vector<float> array(size_t k) const { return std::vector<float>(data_[k], data_[k] + n_()); }
  int writes = 0, commits = 0;

 private:
  struct FreeAligned {
    void operator()(char* p) const { std::free(p); }
  };
  static size_t idx(const std::string& a) { return a == "master" ? 0 : a == "exp_avg" ? 1 : 2; }
  int64_t n_() const { return units_[0].numel; }
  bool targets_;
  std::vector<UnitLayout> units_;
  std::unique_ptr<char, FreeAligned> page_[3];
  float* data_[3] = {};
};

// Saves a FlatState of n elements filled with `g` into `dir` (tag "t"); returns its arrays.
std::vector<std::vector<float>> save_flat(const std::string& dir, int64_t n, float g, RankExchange& ex) {
  FlatState st(n, false);
  st.fill(g);
  SaveOptions so;
  so.dir = dir;
  so.warn = [](const std::string&) {};
  CheckpointWriter w(ex, so);
  RunFacts facts;
  facts.model.name = "flat";
  EXPECT_TRUE(w.save(st, facts, "t").ok);
  return {st.array(0), st.array(1), st.array(2)};
}

// A state that offers its memory is filled in place (no write() call), one that does not through
// write(); both end with the saved values, through the page cache and O_DIRECT.
TEST(BulkIo, LoadsStraightIntoTheStateWhereItOffersItsMemory) {
  test::TempDir dir;
  const int64_t n = 300001;  // a data area that ends off the 4096-byte grid
  test::run_ranks(1, [&](int, Communicator& comm) {
    RankExchange ex(comm);
    const auto saved = save_flat(dir.path(), n, 5, ex);
    for (bool targets : {false, true})
      for (bool direct : {false, true}) {
        SCOPED_TRACE(std::string(targets ? "in place" : "through write()") + (direct ? ", O_DIRECT" : ", page cache"));
        FlatState back(n, targets);
        const auto r = load_checkpoint(back, ex, at(dir.path(), direct));
        EXPECT_EQ(back.writes, targets ? 0 : 3);
        EXPECT_EQ(back.commits, 1);
        for (size_t k = 0; k < 3; ++k) EXPECT_EQ(back.array(k), saved[k]) << "array " << k;
        EXPECT_EQ(r.bytes_needed, uint64_t(n) * 12);
      }
  });
}

// O_DIRECT reads land in the state's own memory where its address and the file offset share their
// place in a page (the first and last partial pages of each array through the page cache), and go
// through aligned scratch and a copy where they do not; the values are the saved ones either way.
TEST(BulkIo, DirectLoadsLandInPlaceWhereAddressAndFileOffsetSharePages) {
  test::TempDir dir;
  const int64_t n = 300001;  // arrays 2 and 3 start off the page grid of the file (and end off it)
  test::run_ranks(1, [&](int, Communicator& comm) {
    RankExchange ex(comm);
    const auto saved = save_flat(dir.path(), n, 7, ex);
    for (Placement place : {Placement::PageCongruent, Placement::OffPage})
      for (bool direct : {false, true}) {
        SCOPED_TRACE(std::string(place == Placement::OffPage ? "off the page" : "page-congruent") + (direct ? ", O_DIRECT" : ", page cache"));
        FlatState back(n, true, place);
        const auto r = load_checkpoint(back, ex, at(dir.path(), direct));
        for (size_t k = 0; k < 3; ++k) EXPECT_EQ(back.array(k), saved[k]) << "array " << k;
        const int64_t read = r.io.direct_bytes + r.io.buffered_bytes;
        if (!direct || !takes_direct(dir.path())) {
          EXPECT_EQ(read, int64_t(n) * 12) << "each byte read once";
          EXPECT_EQ(r.io.copied_bytes, 0) << "page-cache reads land in place";
          continue;
        }
        if (place == Placement::PageCongruent) {
          EXPECT_EQ(read, int64_t(n) * 12) << "each byte read once";
          EXPECT_EQ(r.io.copied_bytes, 0) << "every run in place";
          EXPECT_LT(r.io.buffered_bytes, 3 * 2 * 4096) << "only partial pages at the arrays' ends through the page cache";
        } else {
          EXPECT_EQ(r.io.copied_bytes, int64_t(n) * 12) << "through scratch";
          EXPECT_GE(read, int64_t(n) * 12) << "whole pages around each run";
        }
        EXPECT_GT(r.io.direct_bytes, int64_t(n) * 12 - 3 * 2 * 4096);
      }
  });
}

// O_DIRECT refused by the first read (EINVAL, as a file system that opens O_DIRECT but not at this
// alignment answers): that read and every later one go through the page cache, said once, and the
// load gives the saved values.
TEST(BulkIo, RefusedDirectReadFallsBackToThePageCacheAndSaysSoOnce) {
  test::TempDir dir;
  const int64_t n = 1 << 20;  // several runs, so that some are in flight when the first is refused
  test::run_ranks(1, [&](int, Communicator& comm) {
    RankExchange ex(comm);
    const auto saved = save_flat(dir.path(), n, 3, ex);
    LoadOptions o = at(dir.path(), true);
    o.io.aio.fault_on_read_piece = 1;
    o.io.aio.fault_errno = EINVAL;
    FlatState back(n, true);
    const auto r = load_checkpoint(back, ex, o);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(back.array(k), saved[k]) << "array " << k;
    int notes = 0;
    for (const auto& w : r.warnings.all())
      if (contains(w.message, "refuses O_DIRECT")) {
        ++notes;
        EXPECT_TRUE(contains(w.message, "reads go through the page cache")) << w.message;
      }
    EXPECT_EQ(notes, 1) << "said once for the load";
    EXPECT_EQ(r.io.direct_bytes + r.io.buffered_bytes, int64_t(n) * 12);
    EXPECT_GE(r.io.buffered_bytes, int64_t(n) * 12 - int64_t(BulkIo::kScratchSlots) * (int64_t(4) << 20))
        << "after the refusal only the runs already in flight read O_DIRECT";
  });
}

// A page-cache load on several read lanes gives the values one lane gives, and where two blocks
// are damaged it names the first, as one lane does (a lane that finds the later one first does
// not decide the message); nothing is committed.
TEST(BulkIo, ReadLanesGiveOneLanesValuesAndNameTheFirstDamagedBlock) {
  test::TempDir dir;
  const int64_t n = int64_t(1) << 20;  // 4 MiB an array: four 1 MiB blocks, four runs for the lanes
  test::run_ranks(1, [&](int, Communicator& comm) {
    RankExchange ex(comm);
    const auto saved = save_flat(dir.path(), n, 9, ex);
    for (int lanes : {1, 2, 4, 7}) {
      SCOPED_TRACE("read_lanes " + std::to_string(lanes));
      LoadOptions o = at(dir.path(), false);
      o.io.read_lanes = lanes;
      FlatState back(n, lanes % 2 == 0);  // in place, and through write()
      const auto r = load_checkpoint(back, ex, o);
      for (size_t k = 0; k < 3; ++k) EXPECT_EQ(back.array(k), saved[k]) << "array " << k;
      EXPECT_EQ(r.io.buffered_bytes, n * 12) << "each byte read once";
      EXPECT_EQ(back.commits, 1);
    }
    // Damage blocks 1 and 3 of exp_avg (the second array: its blocks start 4 MiB into the data).
    const std::string file = dir.sub("t/rank00000.safetensors");
    const int64_t data = data_start_of(file);
    const int fd = ::open(file.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    for (int64_t block : {1, 3}) {
      const char bad = 0x5a;
      ASSERT_EQ(::pwrite(fd, &bad, 1, data + n * 4 + block * (int64_t(1) << 20) + 100), 1);
    }
    ::close(fd);
    std::string first_message;
    for (int lanes : {1, 4}) {
      SCOPED_TRACE("damaged, read_lanes " + std::to_string(lanes));
      LoadOptions o = at(dir.path(), false);
      o.io.read_lanes = lanes;
      FlatState back(n, true);
      std::string message;
      try {
        load_checkpoint(back, ex, o);
      } catch (const UserError& e) {
        message = e.what();
      }
      EXPECT_TRUE(contains(message, "block 1 of tensor \"exp_avg/flat/0\"")) << message;
      EXPECT_FALSE(contains(message, "block 3")) << message;
      EXPECT_EQ(back.commits, 0) << "a damaged load commits nothing";
      if (first_message.empty()) first_message = message;
      EXPECT_EQ(message, first_message) << "the same message on one lane and on four";
    }
  });
}

TEST(BulkIo, BadAioBlockIsRefusedNamingTheKey) {
  CheckpointIoOptions o;
  o.aio.block_size = 1000;
  try {
    BulkIo io(o);
    FAIL() << "accepted aio.block_size = 1000";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "aio.block_size = 1000")) << e.what();
  }
}

}  // namespace
}  // namespace zt::ckpt
