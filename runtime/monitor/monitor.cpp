// Monitors: the sinks a config enables (csv_monitor, tensorboard) and the folder rule they share.
#include "runtime/monitor/monitor.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace zt {

std::string monitor_folder(const MonitorConfig& m) {
  return (std::filesystem::path(m.output_path.value) / m.job_name.value).string();
}

void probe_folder(const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw std::runtime_error("cannot create the folder " + folder + ": " + ec.message());
  const std::string probe = (std::filesystem::path(folder) / ".zerotrain_write_probe").string();
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw std::runtime_error("cannot create a file in the folder " + folder + ": " + std::strerror(errno));
  std::fclose(f);
  std::filesystem::remove(probe, ec);
}

Monitors Monitors::from_config(const Config& c, bool rank0, Diagnostics& d) {
  Monitors out;
  if (!rank0) return out;
  const auto open = [&](const char* block, const MonitorConfig& m, auto make) {
    if (!m.enabled.value) return;
    const std::string folder = monitor_folder(m);
    try {
      out.add(make(folder));
    } catch (const std::exception& e) {
      d.error(std::string(block) + ".output_path", "\"" + m.output_path.value + "\"", e.what(),
              "give an output_path (and job_name) naming a folder this user can create and write");
    }
  };
  open("csv_monitor", c.csv_monitor, make_csv_monitor);
  open("tensorboard", c.tensorboard, make_tensorboard_monitor);
  return out;
}

void Monitors::write(const std::vector<MonitorEvent>& events) {
  for (auto& s : sinks_) s->write(events);
}

std::vector<std::string> Monitors::describe() const {
  std::vector<std::string> v;
  for (const auto& s : sinks_) v.push_back(s->describe());
  return v;
}

}  // namespace zt
