// Saving: agreement, snapshot, background write of the shard file, then the leader's manifest,
// folder rename and `latest`, with every rank told the outcome.
#include "runtime/checkpoint/checkpoint_save.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <regex>
#include <sstream>

#include "base/clock.h"
#include "build_info.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/common/diagnostics.h"

namespace zt::ckpt {

namespace {

std::string host_name() {
  char b[256] = {};
  ::gethostname(b, sizeof b - 1);
  return b;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

bool valid_tag(const std::string& t) {
  return !t.empty() && t.size() < 200 && t[0] != '.' && t.find('/') == std::string::npos && t != kLatestName;
}

// What `latest` names now, for the failure message.
std::string latest_now(const std::string& dir) {
  try {
    std::string t = read_small_file(join_path(dir, kLatestName));
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    return t;
  } catch (const IoError&) {
    return "";
  }
}

// Staging folders of saves that were killed before their rename: .<tag>.saving-<16 hex>.
void remove_stale_staging(const std::string& dir) {
  static const std::regex kStale("\\..+\\.saving-[0-9a-f]{16}|latest\\.tmp-[0-9]+");
  try {
    for (const auto& n : list_directory(dir))
      if (std::regex_match(n, kStale)) remove_tree(join_path(dir, n));
  } catch (const IoError&) {
  }
}

}  // namespace

std::string default_tag(int64_t step) { return "global_step" + std::to_string(step); }

struct CheckpointWriter::Pending {
  std::string tag, staging, final_dir;
  Manifest manifest;  // everything but the rank records
  ShardFileSpec spec;
  Clock::time_point started;
  double snapshot_s = 0;
  std::thread thread;
  std::atomic<bool> done{false};
  // Set by the thread before `done`.
  bool ok = false;
  std::string error;
  WrittenFile file;
  double cpu_s = 0;
  int nice_seen = 0;  // the writer thread's nice level, read back after setting it
};

// The options with their warning sink: the caller's, or rank 0's stderr.
static SaveOptions with_warn(SaveOptions o, int rank) {
  if (!o.warn) o.warn = [rank](const std::string& s) {
    if (rank == 0) std::fprintf(stderr, "warning: %s\n", s.c_str());
  };
  return o;
}

// The snapshot's allocator warns (pin_memory refused) through the same sink, so once for the job.
CheckpointWriter::CheckpointWriter(RankExchange& ex, SaveOptions o)
    : ex_(ex), o_(with_warn(std::move(o), ex.rank())),
      alloc_(offload::PinnedAllocatorOptions{o_.pin_memory, true, o_.warn, {}}) {
  // DeepSpeed compares the value case-insensitively; so does the config reader.
  std::string mode = o_.tag_validation;
  for (auto& c : mode) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (mode != "ignore" && mode != "warn" && mode != "fail")
    throw UserError("checkpoint.tag_validation", o_.tag_validation, "expected Ignore, Warn or Fail");
  o_.tag_validation = mode == "ignore" ? "Ignore" : mode == "warn" ? "Warn" : "Fail";
  if (!o_.io.note) o_.io.note = o_.warn;
  if (o_.writer_nice < 0 || o_.writer_nice > 19)
    throw UserError("checkpoint writer nice level", std::to_string(o_.writer_nice), "expected 0..19");
  if (!(o_.writer_cpu_share > 0 && o_.writer_cpu_share <= 1))
    throw UserError("checkpoint writer CPU share", std::to_string(o_.writer_cpu_share), "expected a fraction in (0, 1]");
  io_ = std::make_unique<BulkIo>(o_.io);
  leader_ = ex_.rank() == 0;
  if (o_.node_local_storage) {
    const auto hosts = ex_.all_gather(host_name());
    leader_ = true;
    for (int r = 0; r < ex_.rank(); ++r)
      if (hosts[size_t(r)] == hosts[size_t(ex_.rank())]) leader_ = false;
  }
}

CheckpointWriter::~CheckpointWriter() {
  if (pending_ && pending_->thread.joinable()) pending_->thread.join();
}

std::deque<SaveResult> CheckpointWriter::take_results() {
  std::deque<SaveResult> r;
  r.swap(results_);
  return r;
}

void CheckpointWriter::begin(ShardedState& state, const RunFacts& facts, const std::string& tag_in) {
  finish();
  const auto started = Clock::now();
  // Leaders prepare the directory first; the agreement below orders that before any rank writes.
  std::string prep_error;
  if (leader()) try {
      make_directories(o_.dir);
      remove_stale_staging(o_.dir);
    } catch (const IoError& e) {
      prep_error = e.what();
    }
  std::random_device rd;
  char nonce[20];
  std::snprintf(nonce, sizeof nonce, "%016" PRIx64, (uint64_t(rd()) << 32) ^ uint64_t(rd()) ^ uint64_t(::getpid()));
  const auto all = ex_.all_gather(tag_in + "\n" + nonce + "\n" + prep_error);
  const auto r0 = split(all[0], '\n');
  const std::string tag = r0.size() > 0 ? r0[0] : tag_in;
  std::string mismatch;
  for (int r = 1; r < int(all.size()); ++r) {
    const auto f = split(all[size_t(r)], '\n');
    if ((f.empty() ? "" : f[0]) != tag)
      mismatch += " rank " + std::to_string(r) + " '" + (f.empty() ? "" : f[0]) + "';";
  }
  if (!mismatch.empty()) {
    const std::string what = "the checkpoint tag is not the same on every rank: rank 0 '" + tag + "';" + mismatch;
    if (o_.tag_validation == "Fail")
      throw AgreedUserError("checkpoint.tag_validation", "\"Fail\"", what + " nothing was saved",
                      "give every rank the same tag (no rank-specific text in it)");
    if (o_.tag_validation == "Warn") o_.warn(what + " saving under rank 0's tag '" + tag + "'");
  }
  std::string failure;
  for (int r = 0; r < int(all.size()) && failure.empty(); ++r) {
    const auto f = split(all[size_t(r)], '\n');
    if (f.size() > 2 && !f[2].empty()) failure = "rank " + std::to_string(r) + ": " + f[2];
  }
  if (!valid_tag(tag)) failure = "the tag '" + tag + "' is not a plain folder name";
  auto p = std::make_unique<Pending>();
  p->tag = tag;
  p->final_dir = join_path(o_.dir, tag);
  p->staging = join_path(o_.dir, "." + tag + ".saving-" + (r0.size() > 1 ? r0[1] : std::string(nonce)));
  p->started = started;
  if (!failure.empty()) {
    SaveResult res;
    res.tag = tag;
    res.tag_dir = p->final_dir;
    const std::string prev = latest_now(o_.dir);
    res.message = "checkpoint " + tag + " was not saved: " + failure + "; " +
                  (prev.empty() ? "no previous checkpoint existed" : "`latest` still names " + prev + ", untouched");
    results_.push_back(std::move(res));
    return;
  }
  // Manifest skeleton (the leader completes it with every rank's record).
  Manifest& m = p->manifest;
  m.zerotrain_version = ZT_VERSION;
  m.zerotrain_commit = ZT_GIT_COMMIT;
  m.tag = tag;
  m.created_unix = int64_t(std::time(nullptr));
  m.world_size = state.world_size();
  m.stage = state.stage();
  m.precision = dtype_name(state.precision());
  m.optimizer = checkpoint_optimizer_name(state.optimizer());
  m.arrays = state.arrays();
  m.block_bytes = o_.block_bytes;
  m.model = facts.model;
  m.units = state.units();
  m.counters = state.counters();
  m.run = facts;
  // Snapshot: every array of every owned range, in file order, into pinned memory.
  p->spec.arrays = m.arrays;
  p->spec.owned = state.owned();
  p->spec.private_arrays = state.private_arrays(m.counters);
  hold_snapshot(size_t(p->spec.total_elements()) * 4);
  float* dst = snapshot_.as<float>();
  for (const auto& a : p->spec.arrays)
    for (const auto& r : p->spec.owned) {
      state.read(a, r, dst);
      dst += r.n;
    }
  for (const auto& a : p->spec.private_arrays) {
    state.read_private(a.name, dst);
    dst += a.n;
  }
  p->snapshot_s = seconds_since(started);
  const std::string path = join_path(p->staging, rank_file_name(ex_.rank()));
  const int rank = ex_.rank(), world = ex_.world_size();
  const int64_t block = o_.block_bytes;
  const float* data = snapshot_.as<float>();
  Pending* pp = p.get();
  BulkIo* io = io_.get();
  const int nice = o_.writer_nice;
  const double share = o_.writer_cpu_share;
  p->thread = std::thread([pp, path, rank, world, block, data, io, nice, share] {
    // Below the step's threads: the writer takes what they leave (the ring's I/O thread, made by
    // the first save's writer, inherits the level).
    const id_t tid = id_t(::syscall(SYS_gettid));
    if (nice > 0) ::setpriority(PRIO_PROCESS, tid, nice);
    pp->nice_seen = ::getpriority(PRIO_PROCESS, tid);
    timespec c0{}, c1{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    try {
      make_directories(pp->staging);
      WriterPacer pacer(share);
      pp->file = write_shard_file(path, pp->manifest.units, pp->spec, data, block,
                                  {{"zt.rank", std::to_string(rank)},
                                   {"zt.world_size", std::to_string(world)},
                                   {"zt.tag", pp->tag}},
                                  *io, &pacer);
      pp->ok = true;
    } catch (const std::exception& e) {
      pp->error = e.what();
      ::unlink(path.c_str());
    }
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    pp->cpu_s = double(c1.tv_sec - c0.tv_sec) + 1e-9 * double(c1.tv_nsec - c0.tv_nsec);
    pp->done.store(true);
  });
  pending_ = std::move(p);
}

bool CheckpointWriter::poll() {
  if (!pending_) return false;
  if (!ex_.all_true(pending_->done.load())) return false;
  complete();
  return true;
}

void CheckpointWriter::finish() {
  if (pending_) complete();
}

void CheckpointWriter::complete() {
  Pending& p = *pending_;
  if (p.thread.joinable()) p.thread.join();
  char rec[160];
  std::snprintf(rec, sizeof rec, "%" PRId64 "\n%016" PRIx64 "\n%016" PRIx64 "\n%.6f", p.file.bytes, p.file.checksum,
                p.file.header_checksum, p.file.seconds);
  const auto all = ex_.all_gather(p.ok ? std::string("ok\n") + rec : "fail\n" + p.error);
  std::string failure;
  Manifest& m = p.manifest;
  int64_t total = 0;
  for (int r = 0; r < int(all.size()); ++r) {
    const auto f = split(all[size_t(r)], '\n');
    if (f.empty() || f[0] != "ok") {
      if (failure.empty()) failure = "rank " + std::to_string(r) + ": " + (f.size() > 1 ? f[1] : std::string("no record"));
      continue;
    }
    RankFileRecord rr;
    rr.rank = r;
    rr.file = rank_file_name(r);
    rr.bytes = std::stoll(f.at(1));
    rr.checksum = std::stoull(f.at(2), nullptr, 16);
    rr.header_checksum = std::stoull(f.at(3), nullptr, 16);
    total += rr.bytes;
    m.ranks.push_back(std::move(rr));
  }
  // Owned ranges: every rank's, so that any later world size can plan its reads; and each rank's
  // private arrays ("name count" lines after a "private" line).
  if (failure.empty()) {
    std::string mine;
    for (const auto& e : p.spec.owned)
      mine += std::to_string(e.unit) + " " + std::to_string(e.begin) + " " + std::to_string(e.n) + "\n";
    mine += "private\n";
    for (const auto& a : p.spec.private_arrays) mine += a.name + " " + std::to_string(a.n) + "\n";
    const auto owned = ex_.all_gather(mine);
    for (int r = 0; r < int(owned.size()); ++r) {
      const std::string& text = owned[size_t(r)];
      const size_t cut = text.find("private\n");
      std::istringstream in(text.substr(0, cut));
      ElementRange e;
      while (in >> e.unit >> e.begin >> e.n) m.ranks[size_t(r)].owned.push_back(e);
      std::istringstream pin(text.substr(cut + 8));
      ShardedState::PrivateArray a;
      while (pin >> a.name >> a.n) m.ranks[size_t(r)].private_arrays.push_back(a);
    }
  }
  const std::string prev = latest_now(o_.dir);
  std::string leader_error;
  const auto commit_start = Clock::now();
  if (leader()) {
    if (failure.empty()) {
      try {
        const std::string text = m.to_json().dump(1) + "\n";
        total += int64_t(text.size());
        FileWriter w(join_path(p.staging, kManifestName), true);
        w.write(text.data(), text.size());
        w.sync();
        w.close();
        fsync_directory(p.staging);
        move_directory_into_place(p.staging, p.final_dir);
        replace_file_atomically(join_path(o_.dir, kLatestName), p.tag);
      } catch (const std::exception& e) {
        leader_error = e.what();
      }
    }
    if (!failure.empty() || !leader_error.empty()) remove_tree(p.staging);
  }
  const auto outcome = ex_.all_gather(leader_error);
  for (int r = 0; r < int(outcome.size()) && failure.empty(); ++r)
    if (!outcome[size_t(r)].empty()) failure = "rank " + std::to_string(r) + ": " + outcome[size_t(r)];
  if (!failure.empty() && !leader()) {
    ::unlink(join_path(p.staging, rank_file_name(ex_.rank())).c_str());
    ::rmdir(p.staging.c_str());
  }
  SaveResult res;
  res.ok = failure.empty();
  res.tag = p.tag;
  res.tag_dir = p.final_dir;
  res.step = m.step();
  res.bytes = p.file.bytes;
  res.total_bytes = total;
  res.snapshot_s = p.snapshot_s;
  res.write_s = p.file.seconds;
  res.total_s = seconds_since(p.started);
  res.commit_s = seconds_since(commit_start);
  res.writer_cpu_s = p.cpu_s;
  res.io = p.file.io;
  res.pace = p.file.pace;
  res.writer_nice = p.nice_seen;
  if (res.ok) {
    // Where this rank's seconds went, as a load's report says it: the snapshot the step waited for,
    // the writer's checksums (beside the O_DIRECT writes; with pacing, the sleeps between blocks are
    // said apart), the wait for the writes after them, the fsync, and the manifest, rename and
    // `latest` once every rank's file was down.
    char head[128], parts[320], pace[64] = "";
    std::snprintf(head, sizeof head, " (step %" PRId64 ", %d rank file%s, %.1f MiB) in %.2f s", res.step, m.world_size,
                  m.world_size == 1 ? "" : "s", double(total) / double(1 << 20), res.total_s);
    const double slept = res.pace.slept_s;
    if (slept > 0) std::snprintf(pace, sizeof pace, ", %.2f s paced sleep between them", slept);
    std::snprintf(parts, sizeof parts,
                  " (%.2f s snapshot, %.2f s checksums%s, %.2f s waiting for writes, %.2f s fsync, %.2f s manifest and rename)",
                  res.snapshot_s, std::max(0.0, res.io.hash_s - slept),
                  pace,
                  res.io.write_s + res.io.header_s, res.io.sync_s, res.commit_s);
    res.message = "saved checkpoint " + res.tag_dir + head + parts;
  } else {
    res.message = "checkpoint " + p.tag + " was not saved: " + failure + "; " +
                  (prev.empty() ? "no previous checkpoint existed" : "`latest` still names " + prev + ", untouched");
  }
  results_.push_back(std::move(res));
  pending_.reset();
}

// The snapshot buffer at `bytes` (at least 4): kept while the size is the same, else made anew.
void CheckpointWriter::hold_snapshot(size_t bytes) {
  bytes = std::max<size_t>(bytes, 4);
  if (snapshot_.size() >= bytes) return;  // reserved for the largest save at the start
  snapshot_ = offload::PinnedBuffer();
  snapshot_ = alloc_.allocate(bytes);
}

size_t CheckpointWriter::reserve(const ShardedState& state) {
  ShardFileSpec spec;
  spec.arrays = state.arrays();
  spec.owned = state.owned();
  spec.private_arrays = state.largest_private_arrays();
  const size_t bytes = size_t(spec.total_elements()) * 4;
  hold_snapshot(bytes);
  // Pinned memory is already resident; pageable memory (pin_memory refused) is touched here.
  if (!snapshot_.pinned()) std::memset(snapshot_.data(), 0, snapshot_.size());
  return bytes;
}

SaveResult CheckpointWriter::save(ShardedState& state, const RunFacts& facts, const std::string& tag) {
  begin(state, facts, tag);
  finish();
  auto r = results_.back();
  return r;
}

}  // namespace zt::ckpt
