// Checkpoint file I/O over POSIX calls, every failure an IoError naming the path, offset and errno.
#include "runtime/checkpoint/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace zt::ckpt {

namespace {

std::mutex g_hook_mutex;
WriteFaultHook g_hook;

int injected_fault(const std::string& path, int64_t offset, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  return g_hook ? g_hook(path, offset, bytes) : 0;
}

std::string describe(const std::string& what, const std::string& path, int64_t offset, int err) {
  std::string s = what + " " + path;
  if (offset >= 0) s += " at byte " + std::to_string(offset);
  if (err != 0) s += ": " + errno_text(err);
  return s;
}

}  // namespace

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }

IoError::IoError(std::string what_done, std::string path, int64_t offset, int err)
    : std::runtime_error(describe(what_done, path, offset, err)), path_(std::move(path)), offset_(offset), err_(err) {}

void set_write_fault_hook(WriteFaultHook hook) {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  g_hook = std::move(hook);
}

// --- FileWriter ---------------------------------------------------------------------------------

FileWriter::FileWriter(std::string path, bool exclusive) : path_(std::move(path)) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) throw IoError("cannot create", path_, -1, errno);
}

FileWriter::~FileWriter() {
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
}

bool FileWriter::preallocate(int64_t bytes) {
  if (bytes <= 0) return true;
  int rc;
  do {
    rc = ::fallocate(fd_, 0, 0, off_t(bytes));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return true;
  if (errno == ENOSPC) throw IoError("cannot reserve " + std::to_string(bytes) + " bytes for", path_, 0, errno);
  return false;  // EOPNOTSUPP and the like: the writes extend the file instead
}

int FileWriter::direct_fd() {
  if (direct_fd_ < 0) direct_fd_ = ::open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  return direct_fd_;
}

void FileWriter::fault_check(int64_t offset, size_t bytes) const {
  if (int fault = injected_fault(path_, offset, bytes)) throw IoError("cannot write", path_, offset, fault);
}

void FileWriter::pwrite(const void* data, size_t bytes, int64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const size_t chunk = std::min<size_t>(bytes, size_t(1) << 30);
    if (int fault = injected_fault(path_, offset, chunk)) throw IoError("cannot write", path_, offset, fault);
    const ssize_t n = ::pwrite(fd_, p, chunk, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot write", path_, offset, errno);
    }
    if (n == 0) throw IoError("cannot write", path_, offset, ENOSPC);
    p += n;
    bytes -= size_t(n);
    offset += n;
  }
}

void FileWriter::write(const void* data, size_t bytes) {
  pwrite(data, bytes, offset_);
  offset_ += int64_t(bytes);
}

void FileWriter::sync() {
  if (::fsync(fd_) != 0) throw IoError("cannot fsync", path_, -1, errno);
}

void FileWriter::close() {
  if (direct_fd_ >= 0) {
    const int d = direct_fd_;
    direct_fd_ = -1;
    if (::close(d) != 0) throw IoError("cannot close", path_, -1, errno);
  }
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw IoError("cannot close", path_, -1, errno);
}

// --- FileReader ---------------------------------------------------------------------------------

FileReader::FileReader(std::string path) : path_(std::move(path)), bytes_read_(std::make_unique<std::atomic<uint64_t>>(0)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw IoError("cannot open", path_, -1, errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw IoError("cannot stat", path_, -1, err);
  }
  size_ = int64_t(st.st_size);
}

FileReader::~FileReader() {
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
}

FileReader::FileReader(FileReader&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), direct_fd_(o.direct_fd_), size_(o.size_), bytes_read_(std::move(o.bytes_read_)) {
  o.fd_ = -1;
  o.direct_fd_ = -1;
}

FileReader& FileReader::operator=(FileReader&& o) noexcept {
  if (this != &o) {
    if (direct_fd_ >= 0) ::close(direct_fd_);
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    direct_fd_ = o.direct_fd_;
    size_ = o.size_;
    bytes_read_ = std::move(o.bytes_read_);
    o.fd_ = -1;
    o.direct_fd_ = -1;
  }
  return *this;
}

int FileReader::direct_fd() const {
  if (direct_fd_ < 0) direct_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  return direct_fd_;
}

void FileReader::pread(void* out, size_t bytes, int64_t offset) const {
  char* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, p, std::min<size_t>(bytes, size_t(1) << 30), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot read", path_, offset, errno);
    }
    if (n == 0) throw IoError("unexpected end of file reading", path_, offset, 0);
    *bytes_read_ += uint64_t(n);
    p += n;
    bytes -= size_t(n);
    offset += n;
  }
}

// --- paths --------------------------------------------------------------------------------------

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string read_small_file(const std::string& path) {
  FileReader r(path);
  std::string s(size_t(r.size()), '\0');
  if (!s.empty()) r.pread(s.data(), s.size(), 0);
  return s;
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open the directory", dir, -1, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems (tmpfs on old kernels) refuse fsync on directories: nothing to flush there.
  if (rc != 0 && err != EINVAL) throw IoError("cannot fsync the directory", dir, -1, err);
}

void make_directory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return;
  if (errno == EEXIST && is_directory(dir)) return;
  throw IoError("cannot create the directory", dir, -1, errno);
}

void make_directories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("cannot create the directory", dir, -1, ec.value());
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

static std::string parent_of(const std::string& path) {
  const std::string p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

void replace_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  try {
    FileWriter w(tmp, true);
    w.write(content.data(), content.size());
    w.sync();
    w.close();
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw IoError("cannot rename " + tmp + " to", path, -1, errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_directory(parent_of(path));
}

void move_directory_into_place(const std::string& from, const std::string& to) {
  const std::string parent = parent_of(to);
  if (!path_exists(to)) {
    if (::rename(from.c_str(), to.c_str()) != 0) throw IoError("cannot rename " + from + " to", to, -1, errno);
    fsync_directory(parent);
    return;
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    fsync_directory(parent);
    remove_tree(from);  // now the old tree
    return;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    throw IoError("cannot swap " + from + " with", to, -1, errno);
  const std::string aside = to + ".replaced-" + std::to_string(::getpid());
  if (::rename(to.c_str(), aside.c_str()) != 0) throw IoError("cannot move aside", to, -1, errno);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    ::rename(aside.c_str(), to.c_str());
    throw IoError("cannot rename " + from + " to", to, -1, err);
  }
  fsync_directory(parent);
  remove_tree(aside);
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::vector<std::string> list_directory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw IoError("cannot list", dir, -1, errno);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace zt::ckpt
