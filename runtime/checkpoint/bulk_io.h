// BulkIo: how a checkpoint's data area reaches the disk and comes back. Writes go O_DIRECT through
// io_uring (the offload AioEngine: block_size pieces, queue_depth in flight, intra_op_parallelism,
// single_submit, overlap_events) straight from the pinned snapshot while the caller hashes the same
// bytes; O_DIRECT reads go through the same ring. Reads through the page cache are plain preads on
// read lanes (threads side by side): a cached read is a memory copy done by the thread that asks
// for it, so a ring or a deeper queue adds nothing there and more threads do. Where O_DIRECT is
// refused (tmpfs, some network file systems: at open, or EINVAL from the first transfer) the bytes
// go through the page cache instead and that is said once.
// Each part's seconds are kept (IoBreakdown) for the save's report and the bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "offload/aio_uring.h"
#include "runtime/checkpoint/file_io.h"

namespace zt::ckpt {

struct CheckpointIoOptions {
  offload::AioConfig aio;        // the ds_config's aio block, as NVMe offload reads it
  bool direct_writes = true;     // O_DIRECT for the data area of a shard file (false: page cache)
  bool direct_reads = false;     // O_DIRECT for loads (false: page cache, which a resume right
                                 // after a save, or a second rank on the node, finds warm)
  bool uring = true;             // false: plain pwrite on the calling thread, loads through the page cache
  int read_lanes = 0;            // threads reading and checking a page-cache load side by side
                                 // (0: the OpenMP team's size, the rank's share of the cores)
  // The one line saying O_DIRECT was refused and writes go through the page cache.
  std::function<void(const std::string&)> note;
};

// Where the time of one file (or a load) went, in seconds; bytes by path taken.
struct IoBreakdown {
  double hash_s = 0;       // block checksums and the data checksum (on the calling thread)
  double write_s = 0;      // data area written (with direct writes: waiting for the ring after hashing)
  double read_s = 0;       // waiting for reads (after hashing what had arrived); on read lanes,
                           // this and hash_s and copy_s are the lanes' seconds over their count
  double copy_s = 0;       // memcpy out of alignment scratch (direct reads of unaligned ranges)
  double sync_s = 0;       // fsync
  double header_s = 0;     // the header (with its checksums) written after the data
  int64_t direct_bytes = 0, buffered_bytes = 0;
  int64_t copied_bytes = 0;  // of those, copied out of alignment scratch (the rest landed in place)
  IoBreakdown& operator+=(const IoBreakdown& o);
};

class BulkIo {
 public:
  explicit BulkIo(CheckpointIoOptions o);
  ~BulkIo();
  BulkIo(const BulkIo&) = delete;
  BulkIo& operator=(const BulkIo&) = delete;

  // Writes `bytes` from `data` at `offset` of `f`, running `during()` on this thread meanwhile
  // (the caller's hash pass over the same, unchanging bytes); returns when both are done. The
  // 4096-aligned part goes O_DIRECT when `data` and `offset` are aligned and the file system takes
  // it; the rest, or all of it where O_DIRECT is off or refused, through the page cache (then
  // `during` runs first). Throws IoError naming the file and offset.
  void write(FileWriter& f, const void* data, size_t bytes, int64_t offset, const std::function<void()>& during,
             IoBreakdown& t);

  // A read in flight (or already done, without io_uring).
  struct Read {
    offload::AioHandle h;
    const FileReader* file = nullptr;
    void* out = nullptr;
    int64_t offset = 0;
    size_t bytes = 0;
    bool direct = false;
  };
  // Starts reading `bytes` at `offset` of `f` into `out`. direct: through f's O_DIRECT descriptor
  // (out, offset and bytes 4096-aligned, the range inside the file); falls back to the page cache
  // when the descriptor is refused.
  Read start_read(const FileReader& f, void* out, size_t bytes, int64_t offset, bool direct);
  // Waits; a direct read the file system refuses (EINVAL) is read again through the page cache
  // (said once, later reads go there). Throws IoError naming the file and offset.
  void finish_read(Read& r, IoBreakdown& t);

  bool direct_reads() const { return o_.direct_reads && o_.uring && !read_refused_; }
  int read_lanes() const;  // for page-cache reads: the option, or the OpenMP team's size
  // Reusable 4096-aligned scratch `slot` (0 .. kScratchSlots - 1) of at least `bytes`, kept
  // between calls.
  static constexpr int kScratchSlots = 4;
  char* scratch(int slot, size_t bytes);
  const CheckpointIoOptions& options() const { return o_; }

 private:
  offload::AioEngine& engine();  // made on first use, by the thread that first needs it
  void say_refused(const std::string& path, int err, const char* what);
  CheckpointIoOptions o_;
  std::unique_ptr<offload::AioEngine> engine_;
  struct FreeAligned {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeAligned> scratch_[kScratchSlots];
  size_t scratch_bytes_[kScratchSlots] = {};
  bool write_refused_ = false, read_refused_ = false, said_ = false;
};

}  // namespace zt::ckpt
