// checkpoint info: describe the manifest, list the tags, hash every rank file whole.
#include "runtime/checkpoint/info.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <vector>

#include "base/stage_traits.h"
#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/checksum.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/shard_file.h"

namespace zt::ckpt {

namespace {

std::string size_text(double bytes) {
  char b[32];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::snprintf(b, sizeof b, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return b;
}

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') s += ',';
    s += digits[i];
  }
  return s;
}

std::string counter(const nlohmann::json& c, const char* k) {
  return c.contains(k) ? c[k].dump() : "?";
}

}  // namespace

InfoReport checkpoint_info(const std::string& path, const std::string& tag, bool verify) {
  Diagnostics d;
  const std::string tag_dir = resolve_checkpoint(path, tag, d);
  Manifest m;
  if (tag_dir.empty() || !read_manifest(tag_dir, m, d)) throw UserError(d);
  InfoReport rep;
  std::string& t = rep.text;
  auto line = [&](const std::string& s) { t += s + "\n"; };
  const bool via_latest = tag.empty() && tag_dir != path;
  line("checkpoint " + tag_dir + (via_latest ? " (named by " + join_path(path, kLatestName) + ")" : ""));
  char when[64] = "?";
  const std::time_t ct = std::time_t(m.created_unix);
  if (std::tm tmv{}; gmtime_r(&ct, &tmv)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tmv);
  line("  written by zerotrain " + m.zerotrain_version + " (" + m.zerotrain_commit + ") at " + when +
       ", checkpoint format version " + std::to_string(m.format_version));
  // MiCS (from the run's resolved ds_config): the first shard group's files hold the state.
  std::string mics;
  const auto& z = m.run.config.value("zero_optimization", nlohmann::json::object());
  if (const int64_t s = z.is_object() ? z.value("mics_shard_size", int64_t(-1)) : -1;
      is_zero_stage(m.stage) && stage_traits(m.stage).gathers_params() && s > 0 && s < m.world_size) {
    mics = " (MiCS: shard groups of " + std::to_string(s) + ", the first group's ranks own the state, its " +
           std::to_string(m.world_size / s - 1) + " replica group(s) nothing)";
  }
  line("  run: world size " + std::to_string(m.world_size) + ", ZeRO stage " + std::to_string(m.stage) + mics +
       ", precision " + m.precision + ", optimizer " + m.optimizer);
  std::string steps = "  step " + counter(m.counters, "step") + " (" + counter(m.counters, "applied_steps") + " applied, " +
                      counter(m.counters, "skipped_steps") + " skipped)";
  if (m.counters.contains("lr")) steps += ", next lr " + m.counters["lr"].dump();
  if (m.counters.contains("loss_scaler") && m.counters["loss_scaler"].contains("scale"))
    steps += ", fp16 loss scale " + m.counters["loss_scaler"]["scale"].dump();
  line(steps);
  line("  data: seed " + std::to_string(m.run.seed) + ", global batch " + std::to_string(m.run.global_batch) + " (micro " +
       std::to_string(m.run.micro_batch) + " x accumulation " + std::to_string(m.run.grad_accum) + " x world " +
       std::to_string(m.world_size) + "), " + (m.run.data.empty() ? "?" : m.run.data));
  line("  model: " + (m.model.name.empty() ? std::string("custom") : m.model.name) + ", " + model_text(m.model) + "; " +
       std::to_string(m.units.size()) + " units, " + with_commas(m.total_numel()) + " parameters");
  std::string sizes = "  sizes:";
  for (size_t i = 0; i < m.arrays.size(); ++i)
    sizes += (i ? ", " : " ") + m.arrays[i] + " " + size_text(double(m.total_numel()) * 4);
  int64_t file_total = 0;
  for (const auto& r : m.ranks) file_total += r.bytes;
  sizes += " (fp32 each); " + std::to_string(m.ranks.size()) + (m.ranks.size() == 1 ? " rank file, " : " rank files, ") +
           size_text(double(file_total)) + " in all";
  line(sizes);
  line("  rank files:");
  for (const auto& r : m.ranks) {
    int64_t elems = 0;
    for (const auto& e : r.owned) elems += e.n;
    std::string status = "not verified";
    if (verify) {
      Diagnostics fd;
      auto reader = ShardFileReader::open(tag_dir, m, r.rank, fd);
      if (reader) {
        // The header was checked against the manifest on open; hash the data area.
        FileReader f(join_path(tag_dir, r.file));
        StreamHash h;
        std::vector<char> buf(size_t(8) << 20);
        for (int64_t off = reader->data_start(); off < f.size(); off += int64_t(buf.size())) {
          const size_t n = size_t(std::min<int64_t>(int64_t(buf.size()), f.size() - off));
          f.pread(buf.data(), n, off);
          h.update(buf.data(), n);
        }
        if (h.digest() == r.checksum) status = "ok";
        else {
          status = "CHECKSUM MISMATCH";
          if (reader->verify_all(fd) == 0)
            fd.error(join_path(tag_dir, r.file), checksum_text(h.digest()),
                     "the data area's checksum differs from the manifest's " + checksum_text(r.checksum),
                     "copy the file again from where it was written");
        }
      } else {
        status = "BAD";
      }
      rep.problems.append(fd);
    }
    char b[256];
    std::snprintf(b, sizeof b, "    %-24s %10s  %s elements per array  %s  %s", r.file.c_str(), size_text(double(r.bytes)).c_str(),
                  with_commas(elems).c_str(), checksum_text(r.checksum).c_str(), status.c_str());
    line(b);
  }
  // Each rank's private arrays (the compressed optimizers' error feedback): rank 0's names and sizes, which every
  // rank of a zerotrain save shares.
  if (!m.ranks.empty() && !m.ranks[0].private_arrays.empty()) {
    std::string names;
    for (const auto& a : m.ranks[0].private_arrays)
      names += (names.empty() ? "" : ", ") + a.name + " " + with_commas(a.n);
    line("  private arrays per rank (each rank's own, loaded back at world size " + std::to_string(m.world_size) +
         " only): " + names + " elements");
  }
  std::string moments;
  for (size_t i = 1; i < m.arrays.size(); ++i) moments += (moments.empty() ? "" : ", ") + m.arrays[i];
  line("  can be loaded as: any world size, any ZeRO stage 0-3 and any precision (each rank reads only its new shard's "
       "byte ranges); optimizer state " + (moments.empty() ? std::string("none (") + m.optimizer + ")" : moments) +
       " for " + (m.optimizer == "sgd" ? "sgd" : "adam, adamw, lamb, onebit_adam or zero_one_adam") +
       "; weights alone: zerotrain export --checkpoint " + tag_dir +
       " --out FILE [--format hf] [--dtype bf16], or --init-from that file");
  if (!tag_dir.empty() && tag_dir != path) {
    const auto tags = list_tags(path);
    std::string others;
    for (const auto& x : tags) others += " " + x;
    line("  complete tags in " + path + ":" + (others.empty() ? " none" : others));
    std::vector<std::string> unfinished;
    for (const auto& n : list_directory(path))
      if (n.find(".saving-") != std::string::npos) unfinished.push_back(n);
    if (!unfinished.empty())
      line("  unfinished saves (not loadable; the next save removes them): " + std::to_string(unfinished.size()));
  }
  line(rep.problems.has_errors() ? "  verification: FAILED (" + std::to_string(rep.problems.error_count()) + " problem(s))"
                                 : verify ? "  verification: every rank file matches the manifest" : "  verification: skipped");
  return rep;
}

}  // namespace zt::ckpt
