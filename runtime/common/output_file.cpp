// OutputFile: POSIX descriptors, so every write's result (ENOSPC, EIO, EPIPE) is seen where it happens.
#include "runtime/common/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/common/diagnostics.h"

namespace zt {

namespace {
std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }
}  // namespace

OutputFile::OutputFile(std::string flag, std::string path) : flag_(std::move(flag)), path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  created_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    throw UserError(flag_, path_, "cannot open the file for writing: " + errno_text(err),
                    "give a path in an existing, writable directory");
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (created_ && written_ == 0) ::unlink(path_.c_str());
}

void OutputFile::fail(const std::string& what, int err) const {
  throw OutputError(flag_ + " " + path_ + ": " + what + " after " + std::to_string(written_) + " bytes: " + errno_text(err));
}

void OutputFile::write(const std::string& text) {
  if (fd_ < 0) fail("write to a closed file", EBADF);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed", n < 0 ? errno : EIO);
    p += n;
    left -= size_t(n);
    written_ += size_t(n);
  }
}

void OutputFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed", errno);
}

}  // namespace zt
