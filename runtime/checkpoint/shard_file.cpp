// Shard files: writing with block checksums, reading element ranges with or without verification.
#include "runtime/checkpoint/shard_file.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>

namespace zt::ckpt {

namespace {

constexpr const char* kBlocksPrefix = "zt.blocks/";

std::string hex16(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

bool parse_blocks(const std::string& s, std::vector<uint64_t>& out) {
  if (s.size() % 16 != 0) return false;
  for (size_t i = 0; i < s.size(); i += 16) {
    const auto v = parse_checksum_text("xxh3:" + s.substr(i, 16));
    if (!v) return false;
    out.push_back(*v);
  }
  return true;
}

const std::string kFixDamaged = "the file is damaged: copy the checkpoint again from where it was written, or load another tag";

}  // namespace

std::string shard_tensor_name(const std::string& array, const std::string& unit, int64_t begin) {
  return array + "/" + unit + "/" + std::to_string(begin);
}

int64_t ShardFileSpec::range_elements() const {
  int64_t n = 0;
  for (const auto& r : owned) n += r.n;
  return n;
}

int64_t ShardFileSpec::private_elements() const {
  int64_t n = 0;
  for (const auto& a : private_arrays) n += a.n;
  return n;
}

namespace {
std::string private_tensor_name(const std::string& name) { return "private/" + name; }
}  // namespace

WrittenFile write_shard_file(const std::string& path, const std::vector<UnitLayout>& units, const ShardFileSpec& spec,
                             const float* data, int64_t block_bytes, const StMetadata& extra, BulkIo& io,
                             WriterPacer* pacer) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::vector<StTensor> tensors;
  StMetadata meta = extra;
  meta["format"] = "zerotrain-shard";
  meta["zt.block_bytes"] = std::to_string(block_bytes);
  for (const auto& a : spec.arrays)
    for (const auto& r : spec.owned) {
      StTensor t;
      t.name = shard_tensor_name(a, units.at(size_t(r.unit)).name, r.begin);
      t.dtype = StDType::F32;
      t.shape = {r.n};
      // Placeholders of the final length: the header is rewritten in place once the data is out.
      meta[kBlocksPrefix + t.name] = std::string(size_t((r.n * 4 + block_bytes - 1) / block_bytes) * 16, '0');
      tensors.push_back(std::move(t));
    }
  for (const auto& a : spec.private_arrays) {
    StTensor t;
    t.name = private_tensor_name(a.name);
    t.dtype = StDType::F32;
    t.shape = {a.n};
    meta[kBlocksPrefix + t.name] = std::string(size_t((a.n * 4 + block_bytes - 1) / block_bytes) * 16, '0');
    tensors.push_back(std::move(t));
  }
  FileWriter out(path, true);
  SafetensorsWriter w(out, std::move(tensors), meta, int64_t(offload::kDirectIoAlignment));
  out.preallocate(w.file_bytes());
  // The data area is the snapshot as it is, in file order: the ring writes it while this thread
  // hashes each block (for the header) and the whole area (for the manifest).
  auto hash_pass = [&] {
    if (pacer) pacer->start();
    const char* p = reinterpret_cast<const char*>(data);
    for (const auto& t : w.tensors()) {
      std::string& hashes = meta[kBlocksPrefix + t.name];
      hashes.clear();
      for (int64_t b = 0; b < t.bytes(); b += block_bytes) {
        const size_t n = size_t(std::min(block_bytes, t.bytes() - b));
        hashes += hex16(xxh3(p + b, n));
        w.account(p + b, n);
        if (pacer) pacer->after(int64_t(n));
      }
      p += t.bytes();
    }
    if (pacer) pacer->finish();
  };
  WrittenFile f;
  io.write(out, data, size_t(w.file_bytes() - w.header_bytes()), w.header_bytes(), hash_pass, f.io);
  w.finish();
  auto t1 = Clock::now();
  w.rewrite_header(meta);
  f.io.header_s += std::chrono::duration<double>(Clock::now() - t1).count();
  t1 = Clock::now();
  out.sync();
  f.io.sync_s += std::chrono::duration<double>(Clock::now() - t1).count();
  out.close();
  f.path = path;
  if (pacer) f.pace = pacer->account();
  f.bytes = w.file_bytes();
  f.checksum = w.data_checksum();
  f.header_checksum = w.header_checksum();
  f.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return f;
}

std::unique_ptr<ShardFileReader> ShardFileReader::open(const std::string& tag_dir, const Manifest& m, int rank,
                                                        Diagnostics& d) {
  const RankFileRecord& rec = m.ranks.at(size_t(rank));
  const std::string path = join_path(tag_dir, rec.file);
  const size_t before = d.error_count();
  if (!path_exists(path)) {
    d.error(path, "", "rank " + std::to_string(rank) + "'s shard file is missing (the manifest lists " +
                          std::to_string(m.world_size) + " rank files)",
            "copy every rank file of the tag into " + tag_dir + " (with node-local storage each node wrote its own), or load another tag");
    return nullptr;
  }
  {
    FileReader probe(path);
    if (probe.size() != rec.bytes) {
      d.error(path + " (byte " + std::to_string(probe.size()) + ")", std::to_string(probe.size()) + " bytes",
              probe.size() < rec.bytes ? "the file is truncated: the manifest recorded " + std::to_string(rec.bytes) +
                                             " bytes, it ends " + std::to_string(rec.bytes - probe.size()) + " bytes early"
                                       : "the manifest recorded " + std::to_string(rec.bytes) + " bytes",
              kFixDamaged);
      return nullptr;
    }
  }
  auto file = SafetensorsFile::open(path, d, kFixDamaged);
  if (!file) return nullptr;
  if (file->header_checksum() != rec.header_checksum) {
    d.error(path + " (bytes 0.." + std::to_string(file->data_start()) + ")", checksum_text(file->header_checksum()),
            "the header does not match the manifest's record (" + checksum_text(rec.header_checksum) +
                "): the file is damaged or comes from another save",
            kFixDamaged);
    return nullptr;
  }
  std::unique_ptr<ShardFileReader> r(new ShardFileReader());
  r->manifest_ = &m;
  r->rank_ = rank;
  r->block_bytes_ = m.block_bytes;
  const auto bb = file->metadata().find("zt.block_bytes");
  if (bb == file->metadata().end() || bb->second != std::to_string(m.block_bytes))
    d.error(path + " (header key \"__metadata__.zt.block_bytes\")", bb == file->metadata().end() ? "" : bb->second,
            "expected " + std::to_string(m.block_bytes) + " as the manifest records", kFixDamaged);
  // Each tensor the manifest says the file holds: F32 [n], with its block checksums.
  size_t expected = 0;
  auto expect = [&](const std::string& name, int64_t n, const std::string& why) {
    ++expected;
    const StTensor* t = file->find(name);
    if (!t || t->dtype != StDType::F32 || t->shape != std::vector<int64_t>{n}) {
      d.error(path + " (header key \"" + name + "\")", t ? std::string(st_dtype_name(t->dtype)) + " " + shape_text(t->shape) : "",
              t ? "expected F32 [" + std::to_string(n) + "]" : "missing: " + why, kFixDamaged);
      return;
    }
    const auto it = file->metadata().find(kBlocksPrefix + name);
    std::vector<uint64_t> hashes;
    const int64_t nblocks = (t->bytes() + m.block_bytes - 1) / m.block_bytes;
    if (it == file->metadata().end() || !parse_blocks(it->second, hashes) || int64_t(hashes.size()) != nblocks)
      d.error(path + " (header key \"__metadata__." + kBlocksPrefix + name + "\")", "",
              "expected " + std::to_string(nblocks) + " block checksums", kFixDamaged);
    r->blocks_[name] = std::move(hashes);
  };
  for (const auto& a : m.arrays)
    for (const auto& e : rec.owned)
      expect(shard_tensor_name(a, m.units.at(size_t(e.unit)).name, e.begin), e.n,
             "the manifest says rank " + std::to_string(rank) + " owns it");
  for (const auto& a : rec.private_arrays)
    expect(private_tensor_name(a.name), a.n, "the manifest lists it for rank " + std::to_string(rank));
  if (file->tensors().size() != expected)
    d.error(path, std::to_string(file->tensors().size()) + " tensors",
            "expected " + std::to_string(expected) + " (one per array and owned range, and each private array)", kFixDamaged);
  if (d.error_count() != before) return nullptr;
  r->file_ = std::move(file);
  return r;
}

const StTensor& ShardFileReader::tensor(const std::string& array, const ElementRange& owned) const {
  const StTensor* t = file_->find(shard_tensor_name(array, manifest_->units.at(size_t(owned.unit)).name, owned.begin));
  if (!t) throw std::logic_error("shard file " + path() + " has no tensor for array " + array);
  return *t;
}

bool ShardFileReader::check_blocks(const StTensor& t, int64_t first_block, const char* bytes, int64_t nbytes,
                                   std::string* problem) const {
  const auto& hashes = blocks_.at(t.name);
  for (int64_t off = 0, b = first_block; off < nbytes; off += block_bytes_, ++b) {
    const int64_t n = std::min(block_bytes_, nbytes - off);
    const uint64_t h = xxh3(bytes + off, size_t(n));
    if (h != hashes.at(size_t(b))) {
      *problem = "block " + std::to_string(b) + " of tensor \"" + t.name + "\" (file bytes " +
                 std::to_string(file_->data_start() + t.begin + b * block_bytes_) + ".." +
                 std::to_string(file_->data_start() + t.begin + b * block_bytes_ + n) + ") has checksum " + checksum_text(h) +
                 ", the header recorded " + checksum_text(hashes.at(size_t(b)));
      return false;
    }
  }
  return true;
}

void ShardFileReader::read(const std::string& array, const ElementRange& owned, int64_t offset, int64_t n, float* out,
                           bool verify) const {
  read_elements(tensor(array, owned), offset, n, out, verify);
}

void ShardFileReader::read_private(const std::string& name, int64_t n, float* out) const {
  const StTensor* t = file_->find(private_tensor_name(name));
  if (!t || t->shape != std::vector<int64_t>{n})
    throw std::logic_error("shard file " + path() + " has no private array " + name + " of " + std::to_string(n));
  read_elements(*t, 0, n, out, true);
}

void ShardFileReader::read_elements(const StTensor& t, int64_t offset, int64_t n, float* out, bool verify) const {
  const int64_t b0 = offset * 4, b1 = (offset + n) * 4;
  if (n <= 0) return;
  if (!verify) {
    file_->read(t, b0, size_t(b1 - b0), out);
    return;
  }
  // Whole blocks, at most kChunk blocks at a time, each checked before its bytes are used.
  constexpr int64_t kChunkBlocks = 16;
  std::vector<char> buf;
  char* dst = reinterpret_cast<char*>(out);
  for (int64_t blk = b0 / block_bytes_; blk * block_bytes_ < b1; blk += kChunkBlocks) {
    const int64_t s = blk * block_bytes_;
    const int64_t last = (b1 + block_bytes_ - 1) / block_bytes_ * block_bytes_;  // end of the block holding b1 - 1
    const int64_t e = std::min({(blk + kChunkBlocks) * block_bytes_, last, t.bytes()});
    buf.resize(size_t(e - s));
    file_->read(t, s, size_t(e - s), buf.data());
    std::string problem;
    if (!check_blocks(t, blk, buf.data(), e - s, &problem)) throw UserError(path(), "", problem, kFixDamaged);
    const int64_t from = std::max(s, b0), to = std::min(e, b1);
    std::memcpy(dst + (from - b0), buf.data() + (from - s), size_t(to - from));
  }
}

void ShardFileReader::read(const std::string& array, const ElementRange& owned, int64_t offset, int64_t n, float* out,
                           bool verify, BulkIo& io, IoBreakdown& times) const {
  if (n <= 0) return;
  const StTensor& t = tensor(array, owned);
  const int64_t b0 = offset * 4, b1 = (offset + n) * 4;
  if (b0 < 0 || b1 > t.bytes()) throw std::out_of_range("shard read outside tensor '" + t.name + "' in " + path());
  if (!io.direct_reads()) {
    const std::string problem = scan_cached(t, b0, b1, verify, reinterpret_cast<char*>(out), io.read_lanes(), times);
    if (!problem.empty()) throw UserError(path(), "", problem, kFixDamaged);
    return;
  }
  const int64_t base = file_->data_start() + t.begin;  // file offset of the tensor's first byte
  const int64_t file_end = file_->file_bytes();
  const int64_t bb = block_bytes_;
  // The bytes to read: whole blocks when verifying, exactly [b0, b1) otherwise; in runs of whole
  // blocks of about kRunBytes, up to BulkIo::kScratchSlots runs in flight while the oldest is checked.
  constexpr int64_t kRunBytes = int64_t(4) << 20;
  constexpr int kInFlight = BulkIo::kScratchSlots;
  const int64_t S = verify ? b0 / bb * bb : b0;
  const int64_t E = verify ? std::min((b1 + bb - 1) / bb * bb, t.bytes()) : b1;
  const int64_t run = std::max<int64_t>(1, kRunBytes / bb) * bb;
  const int64_t a = int64_t(offload::kDirectIoAlignment);
  char* dst = reinterpret_cast<char*>(out);
  // O_DIRECT can land in the destination itself where its address and the file offset share their
  // place in a page (then only a range's first and last partial pages go through the page cache).
  const bool dst_congruent = (reinterpret_cast<uintptr_t>(dst) - uintptr_t(b0 + base)) % uintptr_t(a) == 0;
  struct Run {
    int64_t s = 0, e = 0;   // tensor bytes [s, e)
    char* into = nullptr;   // where the bytes of s land
    bool scratch = false;   // into is alignment scratch: copy [b0, b1) out of it once checked
    BulkIo::Read head, body, tail;
  };
  auto start = [&](int64_t s, int slot) {
    Run x;
    x.s = s;
    x.e = std::min(E, s + run - (s % bb));  // runs end on block boundaries
    const bool inside = x.s >= b0 && x.e <= b1;
    const int64_t f0 = base + x.s, f1 = base + x.e;  // the file bytes of the run
    if (inside && dst_congruent) {  // straight into the destination
      x.into = dst + (x.s - b0);
      const int64_t m0 = (f0 + a - 1) / a * a, m1 = f1 / a * a;
      if (m1 <= m0) {  // no whole page inside: the page cache takes it all
        x.body = io.start_read(file_->file(), x.into, size_t(f1 - f0), f0, false);
        return x;
      }
      if (m0 > f0) x.head = io.start_read(file_->file(), x.into, size_t(m0 - f0), f0, false);
      x.body = io.start_read(file_->file(), x.into + (m0 - f0), size_t(m1 - m0), m0, true);
      if (f1 > m1) x.tail = io.start_read(file_->file(), x.into + (m1 - f0), size_t(f1 - m1), m1, false);
      return x;
    }
    x.scratch = true;
    // O_DIRECT into scratch: the aligned window around the run; the file's last partial page
    // through the page cache.
    const int64_t w0 = f0 / a * a;
    const int64_t w1 = std::min((f1 + a - 1) / a * a, file_end / a * a);
    char* buf = io.scratch(slot, size_t((f1 - w0 + a - 1) / a * a));
    x.into = buf + (f0 - w0);
    if (w1 > w0) x.body = io.start_read(file_->file(), buf, size_t(w1 - w0), w0, true);
    if (f1 > std::max(w1, w0))
      x.tail = io.start_read(file_->file(), buf + (std::max(w1, w0) - w0), size_t(f1 - std::max(w1, w0)),
                             std::max(w1, w0), false);
    return x;
  };
  std::deque<Run> window;
  int64_t next_s = S;
  int next_slot = 0;
  auto fill = [&] {
    while (int(window.size()) < kInFlight && next_s < E) {
      window.push_back(start(next_s, next_slot));
      next_s = window.back().e;
      next_slot = (next_slot + 1) % kInFlight;
    }
  };
  // Whatever is still in flight when a check or a read fails is waited for before the buffers go.
  struct Drain {
    std::deque<Run>& w;
    BulkIo& io;
    ~Drain() {
      IoBreakdown ignored;
      for (auto& x : w)
        for (BulkIo::Read* r : {&x.head, &x.body, &x.tail}) try {
            io.finish_read(*r, ignored);
          } catch (...) {
          }
    }
  } drain{window, io};
  fill();
  while (!window.empty()) {
    Run& cur = window.front();
    io.finish_read(cur.head, times);
    io.finish_read(cur.body, times);
    io.finish_read(cur.tail, times);
    if (verify) {
      const auto h0 = std::chrono::steady_clock::now();
      std::string problem;
      if (!check_blocks(t, cur.s / bb, cur.into, cur.e - cur.s, &problem)) throw UserError(path(), "", problem, kFixDamaged);
      times.hash_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    }
    if (cur.scratch) {
      const auto c0 = std::chrono::steady_clock::now();
      const int64_t from = std::max(cur.s, b0), to = std::min(cur.e, b1);
      if (to > from) std::memcpy(dst + (from - b0), cur.into + (from - cur.s), size_t(to - from));
      times.copied_bytes += std::max<int64_t>(0, to - from);
      times.copy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    }
    window.pop_front();  // its slot is free again: the next run takes it
    fill();
  }
}

std::string ShardFileReader::scan_cached(const StTensor& t, int64_t b0, int64_t b1, bool verify, char* dst, int lanes,
                                         IoBreakdown& times) const {
  // Runs of whole blocks of about kRunBytes (one block at the default 1 MiB), handed to the lanes
  // one at a time; a run that is not all inside [b0, b1) (a partial first or last block, read
  // whole to be checked), or every run without `dst`, goes through a buffer of the lane's own.
  constexpr int64_t kRunBytes = int64_t(1) << 20;
  const int64_t bb = block_bytes_;
  const int64_t S = verify ? b0 / bb * bb : b0;
  const int64_t E = verify ? std::min((b1 + bb - 1) / bb * bb, t.bytes()) : b1;
  const int64_t run = std::max<int64_t>(1, kRunBytes / bb) * bb;
  const int64_t first = S / run, count = E > S ? (E - 1) / run - first + 1 : 0;
  const int n = int(std::max<int64_t>(1, std::min<int64_t>(lanes, count)));
  std::vector<IoBreakdown> lane(static_cast<size_t>(n));
  std::vector<std::vector<char>> own(static_cast<size_t>(n));
  // The first failing run (by position, so the outcome is the one a single thread gives); runs
  // after it are skipped, runs before it still run, so that the lowest one is found. It failed
  // with an exception (a read error) or a problem (a block's checksum).
  std::atomic<int64_t> failed_at{count};
  std::exception_ptr failure;
  std::string problem;
  std::mutex mu;
  auto fail = [&](int64_t k, std::exception_ptr e, std::string p) {
    std::lock_guard<std::mutex> lk(mu);
    if (k >= failed_at.load()) return;
    failed_at = k;
    failure = std::move(e);
    problem = std::move(p);
  };
#pragma omp parallel for schedule(dynamic, 1) num_threads(n)
  for (int64_t k = 0; k < count; ++k) {
    if (k > failed_at.load()) continue;
    IoBreakdown& mine = lane[size_t(omp_get_thread_num())];
    std::vector<char>& buf = own[size_t(omp_get_thread_num())];
    try {
      const int64_t s = std::max(S, (first + k) * run), e = std::min(E, (first + k + 1) * run);
      const bool inside = dst && s >= b0 && e <= b1;
      if (!inside) buf.resize(size_t(e - s));
      char* into = inside ? dst + (s - b0) : buf.data();
      const auto r0 = std::chrono::steady_clock::now();
      file_->read(t, s, size_t(e - s), into);
      const auto r1 = std::chrono::steady_clock::now();
      mine.read_s += std::chrono::duration<double>(r1 - r0).count();
      mine.buffered_bytes += e - s;
      if (verify) {
        std::string bad;
        if (!check_blocks(t, s / bb, into, e - s, &bad)) {
          fail(k, nullptr, std::move(bad));
          continue;
        }
        mine.hash_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - r1).count();
      }
      if (!inside && dst) {
        const auto c0 = std::chrono::steady_clock::now();
        const int64_t from = std::max(s, b0), to = std::min(e, b1);
        std::memcpy(dst + (from - b0), into + (from - s), size_t(to - from));
        mine.copied_bytes += to - from;
        mine.copy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      }
    } catch (...) {
      fail(k, std::current_exception(), {});
    }
  }
  if (failure) std::rethrow_exception(failure);
  // Each part's seconds as the lanes' total over their count: the share of the wall they took.
  for (const IoBreakdown& l : lane) {
    times.read_s += l.read_s / n;
    times.hash_s += l.hash_s / n;
    times.copy_s += l.copy_s / n;
    times.buffered_bytes += l.buffered_bytes;
    times.copied_bytes += l.copied_bytes;
  }
  return problem;
}

bool ShardFileReader::verify(const std::string& array, const ElementRange& owned, int64_t offset, int64_t n,
                             std::string* problem) const {
  if (n <= 0) return true;
  IoBreakdown ignored;
  *problem = scan_cached(tensor(array, owned), offset * 4, (offset + n) * 4, true, nullptr, std::max(1, omp_get_max_threads()),
                         ignored);
  return problem->empty();
}

int ShardFileReader::verify_all(Diagnostics& d) const {
  int bad = 0;
  std::vector<char> buf;
  for (const auto& t : file_->tensors())
    for (int64_t s = 0; s < t.bytes(); s += block_bytes_) {
      const int64_t n = std::min(block_bytes_, t.bytes() - s);
      buf.resize(size_t(n));
      file_->read(t, s, size_t(n), buf.data());
      std::string problem;
      if (!check_blocks(t, s / block_bytes_, buf.data(), n, &problem)) {
        d.error(path(), "", problem, kFixDamaged);
        ++bad;
      }
    }
  return bad;
}

}  // namespace zt::ckpt
