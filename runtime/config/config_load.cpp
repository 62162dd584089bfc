// load_config: read the file (a regular file of at most 16 MiB), walk every block against the schema,
// then map deprecated keys, resolve "auto", the batch equation, and validate combinations.
#include "runtime/config/config_load.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/config/config_walk.h"
#include "runtime/config/json_strict.h"

namespace zt {
namespace {

using json = nlohmann::json;

// cpu_offload / cpu_offload_param / cpu_offload_use_pin_memory: map onto the offload blocks.
void map_deprecated_offload(Config& c, Diagnostics& d) {
  auto& z = c.zero_optimization;
  struct Old {
    Field<bool>& flag;
    const char* key;
    OffloadConfig& block;
    const char* block_key;
  };
  for (Old o : {Old{z.cpu_offload, "cpu_offload", z.offload_optimizer, "offload_optimizer"},
                Old{z.cpu_offload_param, "cpu_offload_param", z.offload_param, "offload_param"}}) {
    if (!o.flag.present) continue;
    if (o.block.present) {
      d.error(std::string("zero_optimization.") + o.key, o.flag.value ? "true" : "false",
              std::string("the old key and its replacement zero_optimization.") + o.block_key + " are both given",
              std::string("remove zero_optimization.") + o.key + " and keep " + o.block_key);
      continue;
    }
    if (o.flag.value) {
      o.block.present = true;
      o.block.device.value = "cpu";
      o.block.device.present = true;
      o.block.device.source = {SourceKind::Deprecated, std::string("zero_optimization.") + o.key};
    }
  }
  // DeepSpeed only warns about cpu_offload_use_pin_memory (its deprecated field sets nothing): the
  // pin_memory of each offload block decides, true by default.
  (void)z.cpu_offload_use_pin_memory;
}

void derive_defaults(Config& c) {
  auto& z = c.zero_optimization;
  if (!z.overlap_comm.present) {
    z.overlap_comm.value = z.stage.value == 3;
    z.overlap_comm.source = {SourceKind::Derived, "true for stage 3, false otherwise (DeepSpeed's rule)"};
  }
}

}  // namespace

LoadResult load_config_text(const std::string& text, const std::string& name, const LoadOptions& opts) {
  LoadResult r;
  r.config.file = name;
  Diagnostics& d = r.diagnostics;
  json doc;
  if (!parse_json_strict(text, name, doc, d)) return r;
  if (!doc.is_object()) {
    d.error(name, show_value(doc), "a ds_config must be a JSON object ({...}) at the top level, got " + json_type_name(doc),
            "wrap the settings in { }");
    return r;
  }
  walk_config(doc, r.config, opts, d);
  map_deprecated_offload(r.config, d);
  derive_defaults(r.config);
  resolve_auto(r.config, opts, d);
  resolve_run_length(r.config, opts, d);
  resolve_batch(r.config, opts.world_size, opts.world_source, d);
  validate_config(r.config, opts, d);
  validate_for_engine(r.config, opts, d);
  return r;
}

namespace {

std::string mib(uint64_t bytes) {
  char b[48];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / double(1 << 20));
  return b;
}

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Reads a config file: refuses what is not a regular file (a FIFO would block, /dev/zero never ends)
// and anything over kMaxConfigBytes, before and while reading. "" and an error in `d` on failure.
bool read_config_file(const std::string& path, std::string& text, Diagnostics& d) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    d.error(path, "", std::string("cannot open the config file: ") + std::strerror(errno), "check the path passed to --config");
    return false;
  }
  const std::string fix_kind = "pass a ds_config JSON file to --config (a generated config: write it to a file first)";
  if (!S_ISREG(st.st_mode)) {
    d.error(path, "", std::string("is ") + file_kind(st.st_mode) + ", not a config file", fix_kind);
    return false;
  }
  const auto too_big = [&](uint64_t size, bool at_least) {
    d.error(path, "", "is " + std::string(at_least ? "more than " : "") + std::to_string(size) + " bytes (" + mib(size) +
                          "); a ds_config is a few kilobytes and zerotrain reads at most " + mib(kMaxConfigBytes),
            "check that --config names the ds_config file");
  };
  if (uint64_t(st.st_size) > kMaxConfigBytes) {
    too_big(uint64_t(st.st_size), false);
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    d.error(path, "", std::string("cannot open the config file: ") + std::strerror(errno),
            "check the path passed to --config and its permissions");
    return false;
  }
  struct stat again{};
  if (fstat(fd, &again) != 0 || !S_ISREG(again.st_mode)) {  // replaced between stat and open
    close(fd);
    d.error(path, "", std::string("is ") + file_kind(again.st_mode) + ", not a config file", fix_kind);
    return false;
  }
  text.clear();
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      d.error(path, "", std::string("cannot read the config file: ") + std::strerror(err), "check the file");
      return false;
    }
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (text.size() > kMaxConfigBytes) {  // it grew after stat
      close(fd);
      too_big(kMaxConfigBytes, true);
      return false;
    }
  }
  close(fd);
  return true;
}

}  // namespace

LoadResult load_config(const std::string& path, const LoadOptions& opts) {
  LoadResult r;
  r.config.file = path;
  std::string text;
  if (!read_config_file(path, text, r.diagnostics)) return r;
  return load_config_text(text, path, opts);
}

std::string Source::describe() const {
  switch (kind) {
    case SourceKind::Default: return "default";
    case SourceKind::File: return detail.empty() ? "file" : "file (" + detail + ")";
    case SourceKind::Derived: return "derived: " + detail;
    case SourceKind::Auto: return "auto <- " + detail;
    case SourceKind::Flag: return "flag " + detail;
    case SourceKind::Deprecated: return "deprecated <- " + detail;
  }
  return "?";
}

}  // namespace zt
