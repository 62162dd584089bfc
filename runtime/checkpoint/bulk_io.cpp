// BulkIo: the data area through the offload AioEngine (O_DIRECT or page cache) beside the caller's
// hash pass, plain pwrite/pread without io_uring, the read lanes' count, and the fallback where
// O_DIRECT is refused.
#include "runtime/checkpoint/bulk_io.h"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>

#include "base/clock.h"
#include "base/host_pages.h"

namespace zt::ckpt {

namespace {

bool aligned(const void* p, int64_t offset) {
  const auto a = offload::kDirectIoAlignment;
  return reinterpret_cast<uintptr_t>(p) % a == 0 && uint64_t(offset) % a == 0;
}

}  // namespace

IoBreakdown& IoBreakdown::operator+=(const IoBreakdown& o) {
  hash_s += o.hash_s;
  write_s += o.write_s;
  read_s += o.read_s;
  copy_s += o.copy_s;
  sync_s += o.sync_s;
  header_s += o.header_s;
  direct_bytes += o.direct_bytes;
  buffered_bytes += o.buffered_bytes;
  copied_bytes += o.copied_bytes;
  return *this;
}

BulkIo::BulkIo(CheckpointIoOptions o) : o_(std::move(o)) {
  offload::validate_aio_config(o_.aio);
  if (!o_.note) o_.note = [](const std::string& s) { std::fprintf(stderr, "note: %s\n", s.c_str()); };
}

BulkIo::~BulkIo() = default;

int BulkIo::read_lanes() const { return o_.read_lanes > 0 ? o_.read_lanes : std::max(1, omp_get_max_threads()); }

offload::AioEngine& BulkIo::engine() {
  if (!engine_) engine_ = std::make_unique<offload::AioEngine>(o_.aio);
  return *engine_;
}

char* BulkIo::scratch(int slot, size_t bytes) {
  if (slot < 0 || slot >= kScratchSlots) throw std::out_of_range("BulkIo::scratch: no slot " + std::to_string(slot));
  const size_t a = offload::kDirectIoAlignment;
  bytes = std::max<size_t>(a, (bytes + a - 1) / a * a);
  if (scratch_bytes_[slot] < bytes) {
    scratch_[slot].reset(static_cast<char*>(alloc_host_pages(bytes)));
    scratch_bytes_[slot] = bytes;
  }
  return scratch_[slot].get();
}

void BulkIo::say_refused(const std::string& path, int err, const char* what) {
  if (said_) return;
  said_ = true;
  o_.note("the file system of " + path + " refuses O_DIRECT (" + errno_text(err) + "): checkpoint " + what +
          " go through the page cache there (correct, but each byte is copied once more)");
}

void BulkIo::write(FileWriter& f, const void* data, size_t bytes, int64_t offset, const std::function<void()>& during,
                   IoBreakdown& t) {
  const char* p = static_cast<const char*>(data);
  const size_t a = offload::kDirectIoAlignment;
  const size_t head = bytes / a * a;  // the part O_DIRECT can take
  bool direct = o_.direct_writes && o_.uring && !write_refused_ && head > 0 && aligned(p, offset);
  int dfd = -1;
  if (direct) {
    dfd = f.direct_fd();
    if (dfd < 0) {
      say_refused(f.path(), errno, "writes");
      write_refused_ = true;
      direct = false;
    }
  }
  auto buffered_rest = [&](size_t from) {  // bytes [from, bytes) through the page cache
    if (from >= bytes) return;
    const auto t0 = Clock::now();
    f.pwrite(p + from, bytes - from, offset + int64_t(from));
    t.write_s += seconds_since(t0);
    t.buffered_bytes += int64_t(bytes - from);
  };
  if (!o_.uring) {  // hash, then write, on this thread
    const auto t0 = Clock::now();
    if (during) during();
    t.hash_s += seconds_since(t0);
    buffered_rest(0);
    return;
  }
  // The ring writes while this thread hashes the same bytes.
  const size_t ring_bytes = direct ? head : bytes;
  f.fault_check(offset, ring_bytes);
  auto h = engine().submit(offload::IoOp::Write, direct ? dfd : f.fd(), f.path(), const_cast<char*>(p), ring_bytes,
                           off_t(offset), direct);
  const auto t0 = Clock::now();
  if (during) during();
  t.hash_s += seconds_since(t0);
  const auto t1 = Clock::now();
  try {
    engine().wait(h);
  } catch (const offload::AioError& e) {
    if (direct && e.err() == EINVAL) {  // opened, but this file system takes no O_DIRECT writes at this alignment
      say_refused(f.path(), EINVAL, "writes");
      write_refused_ = true;
      t.write_s += seconds_since(t1);
      buffered_rest(0);
      return;
    }
    throw IoError("cannot write", f.path(), offset, e.err() != 0 ? e.err() : ENOSPC);
  }
  t.write_s += seconds_since(t1);
  (direct ? t.direct_bytes : t.buffered_bytes) += int64_t(ring_bytes);
  buffered_rest(ring_bytes);
}

BulkIo::Read BulkIo::start_read(const FileReader& f, void* out, size_t bytes, int64_t offset, bool direct) {
  Read r;
  r.file = &f;
  r.out = out;
  r.offset = offset;
  r.bytes = bytes;
  if (bytes == 0) return r;
  int fd = f.fd();
  direct = direct && o_.direct_reads && !read_refused_;
  if (direct) {
    const int d = f.direct_fd();
    if (d < 0) {
      say_refused(f.path(), errno, "reads");
      read_refused_ = true;
      direct = false;
    } else {
      fd = d;
    }
  }
  if (!o_.uring) {
    f.pread(out, bytes, offset);
    return r;
  }
  r.h = engine().submit(offload::IoOp::Read, fd, f.path(), out, bytes, off_t(offset), direct);
  r.direct = direct;
  return r;
}

void BulkIo::finish_read(Read& r, IoBreakdown& t) {
  if (!r.h) {
    t.buffered_bytes += int64_t(r.bytes);
    return;
  }
  const auto t0 = Clock::now();
  try {
    engine().wait(r.h);
  } catch (const offload::AioError& e) {
    r.h.reset();
    if (r.direct && e.err() == EINVAL) {  // opened, but no O_DIRECT reads at this alignment here
      say_refused(r.file->path(), EINVAL, "reads");
      read_refused_ = true;
      r.direct = false;
      r.file->pread(r.out, r.bytes, r.offset);
      t.read_s += seconds_since(t0);
      t.buffered_bytes += int64_t(r.bytes);
      return;
    }
    if (e.err() == 0) throw IoError("unexpected end of file reading", r.file->path(), r.offset, 0);
    throw IoError("cannot read", r.file->path(), r.offset, e.err());
  }
  t.read_s += seconds_since(t0);
  r.h.reset();
  r.file->count_read(r.bytes);
  (r.direct ? t.direct_bytes : t.buffered_bytes) += int64_t(r.bytes);
}

}  // namespace zt::ckpt
