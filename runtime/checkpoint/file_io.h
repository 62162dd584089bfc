// Checkpoint file I/O: whole writes and positioned reads that name the path, offset and errno on
// failure, fsync of files and directories, atomic replacement of a small file, and tree removal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace zt::ckpt {

// A failed system call on a checkpoint file: what was done, where, and the errno.
class IoError : public std::runtime_error {
 public:
  IoError(std::string what_done, std::string path, int64_t offset, int err);
  const std::string& path() const { return path_; }
  int64_t offset() const { return offset_; }  // -1 when no offset applies
  int err() const { return err_; }

 private:
  std::string path_;
  int64_t offset_;
  int err_;
};

// Test hook: called before every write of a FileWriter with (path, offset, bytes); a non-zero
// return makes the write fail with that errno (e.g. ENOSPC for "disk full"). Empty = no faults.
using WriteFaultHook = std::function<int(const std::string& path, int64_t offset, size_t bytes)>;
void set_write_fault_hook(WriteFaultHook hook);

// A new file opened for writing (O_EXCL: it must not exist). Writes are sequential and whole.
// Bulk data may go through a second descriptor opened with O_DIRECT (direct_fd()), by the
// caller's own I/O engine; fault_check() applies the test hook to such writes too.
class FileWriter {
 public:
  explicit FileWriter(std::string path, bool exclusive = true);
  ~FileWriter();  // closes (without fsync) if still open
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void write(const void* data, size_t bytes);   // appends all bytes or throws IoError
  void pwrite(const void* data, size_t bytes, int64_t offset);  // positioned, does not move offset()
  void sync();                                   // fsync
  void close();                                  // close, reporting a close error
  // Reserves `bytes` on disk and sets the file's size (fallocate), so that later direct writes do
  // not extend it; false (nothing changed) where the file system has no fallocate.
  bool preallocate(int64_t bytes);
  // The same file opened O_WRONLY | O_DIRECT (once; closed with the writer), or -1 with errno set
  // where the file system refuses it (tmpfs: EINVAL).
  int direct_fd();
  // Throws IoError when the test hook fails a write of `bytes` at `offset`.
  void fault_check(int64_t offset, size_t bytes) const;
  int fd() const { return fd_; }
  int64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  int direct_fd_ = -1;
  int64_t offset_ = 0;
};

// A file opened read-only. Positioned reads count the bytes they return (bytes_read()).
class FileReader {
 public:
  explicit FileReader(std::string path);  // throws IoError (errno ENOENT when missing)
  ~FileReader();
  FileReader(FileReader&& o) noexcept;
  FileReader& operator=(FileReader&& o) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  int64_t size() const { return size_; }
  // Reads exactly `bytes` at `offset`; past the end of the file throws IoError (errno 0).
  void pread(void* out, size_t bytes, int64_t offset) const;
  uint64_t bytes_read() const { return bytes_read_->load(); }
  void count_read(uint64_t bytes) const { *bytes_read_ += bytes; }  // bytes read through fd() by the caller
  int fd() const { return fd_; }
  // The same file opened O_RDONLY | O_DIRECT (once), or -1 with errno set where that is refused.
  int direct_fd() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  mutable int direct_fd_ = -1;
  int64_t size_ = 0;
  std::unique_ptr<std::atomic<uint64_t>> bytes_read_;
};

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
std::string read_small_file(const std::string& path);  // whole file (manifest, latest); IoError
void fsync_directory(const std::string& dir);
void make_directory(const std::string& dir);            // one level; an existing directory is fine
void make_directories(const std::string& dir);          // mkdir -p
// Writes `content` to `path` atomically: path.tmp-<pid>, fsync, rename over path, fsync the folder.
void replace_file_atomically(const std::string& path, const std::string& content);
// Moves directory `from` to `to`, replacing an existing `to` whole: swapped in one step where the
// file system can (renameat2 RENAME_EXCHANGE), else by moving the old one aside first (a short
// window without `to`); the old tree is then removed. The parent folder is fsynced.
void move_directory_into_place(const std::string& from, const std::string& to);
void remove_tree(const std::string& path);              // rm -rf; missing is fine
std::vector<std::string> list_directory(const std::string& dir);  // names, sorted; IoError
std::string join_path(const std::string& a, const std::string& b);
std::string errno_text(int err);

}  // namespace zt::ckpt
