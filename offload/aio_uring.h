// AioEngine: asynchronous direct-I/O reads and writes on io_uring (liburing), driven by one I/O
// thread, with block_size pieces, queue_depth, intra_op_parallelism, single_submit, overlap_events.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace zt::offload {

// DeepSpeed's "aio" section, same meanings.
struct AioConfig {
  size_t block_size = 1 << 20;   // bytes per I/O piece (a multiple of the 4096-byte alignment)
  int queue_depth = 8;           // pieces in flight at most
  int intra_op_parallelism = 1;  // a request is split into this many ranges issued side by side
  bool single_submit = false;    // true: one io_uring_submit per piece; false: batch
  bool overlap_events = true;    // false: one request at a time (reads and writes never overlap)
  // Test hooks: the nth write (read) piece (1-based; 0 = never) completes with -fault_errno.
  int fault_on_write_piece = 0;
  int fault_on_read_piece = 0;
  int fault_errno = 5;  // EIO
};

// Throws std::invalid_argument naming the field when a value is unusable.
void validate_aio_config(const AioConfig& c);

inline constexpr size_t kDirectIoAlignment = 4096;

enum class IoOp { Read, Write };

// A failed transfer: the message names the operation, path, offset and bytes; err() is the errno
// (0 for a short transfer), so that a caller can tell "O_DIRECT refused" (EINVAL) from a full disk.
class AioError : public std::runtime_error {
 public:
  AioError(const std::string& what, int err) : std::runtime_error(what), err_(err) {}
  int err() const { return err_; }

 private:
  int err_;
};

struct AioRequest;  // internal state of one read or write
using AioHandle = std::shared_ptr<AioRequest>;

class AioEngine {
 public:
  explicit AioEngine(const AioConfig& config);
  ~AioEngine();  // finishes what is in flight, then stops the I/O thread
  AioEngine(const AioEngine&) = delete;
  AioEngine& operator=(const AioEngine&) = delete;

  // Queues one transfer. With `direct` (an O_DIRECT fd) buf, offset and bytes must be
  // kDirectIoAlignment-aligned; a buffered fd takes any. buf must stay valid until wait() returns.
  // `path` is only used in error messages.
  AioHandle submit(IoOp op, int fd, const std::string& path, void* buf, size_t bytes, off_t offset, bool direct = true);
  // Blocks until the transfer ends; throws AioError naming the operation, path, offset, byte count
  // and errno text when it failed (an I/O error, a full disk, a short transfer).
  void wait(const AioHandle& h);
  bool done(const AioHandle& h);
  const AioConfig& config() const { return config_; }

 private:
  struct Ring;
  void io_loop();

  AioConfig config_;
  std::unique_ptr<Ring> ring_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  std::deque<AioHandle> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace zt::offload
