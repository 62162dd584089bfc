// csv_monitor: DeepSpeed's CSV layout — one file per metric under output_path/job_name/, a header
// row "step,<name>" and one "x,value" row per event, every value written in its shortest exact form.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>

#include "runtime/monitor/monitor.h"

namespace zt {

namespace {

class CsvMonitor final : public MonitorSink {
 public:
  // The folder is created and probed now (an unwritable one stops the run at start-up); each CSV
  // file appears with its first row.
  explicit CsvMonitor(std::string folder) : folder_(std::move(folder)) { probe_folder(folder_); }
  ~CsvMonitor() override {
    for (auto& [name, f] : files_) std::fclose(f);
  }

  void write(const std::vector<MonitorEvent>& events) override {
    for (const auto& e : events) {
      std::FILE* f = file_for(e.tag);
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, e.value);  // shortest round-trip form
      *r.ptr = '\0';
      if (std::fprintf(f, "%lld,%s\n", (long long)e.x, buf) < 0) fail(e.tag);
    }
    for (auto& [name, f] : files_)
      if (std::fflush(f) != 0) fail(name);
  }

  std::string describe() const override { return "csv_monitor -> " + folder_ + "/ (one CSV per metric)"; }

 private:
  static std::string file_name(const std::string& tag) {
    std::string s = tag;
    for (char& ch : s)
      if (ch == '/' || ch == ' ') ch = '_';
    return s + ".csv";
  }
  std::string path_of(const std::string& tag) const { return (std::filesystem::path(folder_) / file_name(tag)).string(); }
  [[noreturn]] void fail(const std::string& tag) const {
    throw std::runtime_error("writing " + path_of(tag) + " failed: " + std::strerror(errno));
  }
  std::FILE* file_for(const std::string& tag) {
    auto it = files_.find(tag);
    if (it != files_.end()) return it->second;
    const std::string path = path_of(tag);
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (!f) throw std::runtime_error("cannot open " + path + " for appending: " + std::strerror(errno));
    files_[tag] = f;
    if (std::ftell(f) == 0) {  // a new (or empty) file gets DeepSpeed's header: the tag's last part
      const size_t slash = tag.rfind('/');
      if (std::fprintf(f, "step,%s\n", tag.substr(slash == std::string::npos ? 0 : slash + 1).c_str()) < 0) fail(tag);
    }
    return f;
  }

  std::string folder_;
  std::map<std::string, std::FILE*> files_;
};

}  // namespace

std::unique_ptr<MonitorSink> make_csv_monitor(const std::string& folder) { return std::make_unique<CsvMonitor>(folder); }

}  // namespace zt
