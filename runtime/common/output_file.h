// OutputFile: a file the run writes as it goes (--metrics, --trace), opened at start-up and
// checked on every write; a failed write throws OutputError with the flag, the path and errno.
#pragma once

#include <stdexcept>
#include <string>

namespace zt {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  // Creates or truncates `path`. Throws UserError(flag, path, "cannot open ...: <errno text>", fix).
  OutputFile(std::string flag, std::string path);
  // Removes the file again if this object created it and nothing was written (a run that stopped
  // at start-up leaves nothing behind); otherwise closes it.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes all of `text` to the kernel (no user-space buffer: a run that dies later keeps every
  // line). Throws OutputError "--metrics /dev/full: write failed after N bytes: No space left on
  // device (errno 28)" on any failure.
  void write(const std::string& text);
  void line(const std::string& text) { write(text + "\n"); }
  // Closes and checks the close (network file systems report late errors there); throws OutputError.
  void close();

  const std::string& path() const { return path_; }
  const std::string& flag() const { return flag_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err) const;
  std::string flag_, path_;
  int fd_ = -1;
  bool created_ = false;
  unsigned long long written_ = 0;
};

}  // namespace zt
