// Loading: resolve, check everything, agree across ranks, then read the planned pieces and commit.
#include "runtime/checkpoint/checkpoint_load.h"

#include <algorithm>
#include <chrono>

#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/reshard.h"

namespace zt::ckpt {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

int64_t tag_step(const std::string& tag) {
  const std::string p = "global_step";
  if (tag.compare(0, p.size(), p) != 0 || tag.size() == p.size()) return -1;
  for (size_t i = p.size(); i < tag.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(tag[i]))) return -1;
  return std::stoll(tag.substr(p.size()));
}

std::string tags_hint(const std::string& dir) {
  const auto tags = list_tags(dir);
  if (tags.empty()) return "no complete tag is in " + dir;
  std::string s = "the complete tags in " + dir + ":";
  for (size_t i = 0; i < tags.size() && i < 8; ++i) s += " " + tags[i];
  if (tags.size() > 8) s += " ... (" + std::to_string(tags.size()) + " in all)";
  return s;
}

}  // namespace

std::vector<std::string> list_tags(const std::string& dir) {
  std::vector<std::string> tags;
  if (!is_directory(dir)) return tags;
  for (const auto& n : list_directory(dir))
    if (n[0] != '.' && is_directory(join_path(dir, n)) && path_exists(join_path(join_path(dir, n), kManifestName)))
      tags.push_back(n);
  std::sort(tags.begin(), tags.end(), [](const std::string& a, const std::string& b) {
    const int64_t x = tag_step(a), y = tag_step(b);
    return x != y ? x < y : a < b;
  });
  return tags;
}

std::string resolve_checkpoint(const std::string& path, const std::string& tag, Diagnostics& d) {
  if (!is_directory(path)) {
    d.error(path, "", path_exists(path) ? "not a directory" : "the checkpoint directory does not exist",
            "give the folder a save wrote (it holds `latest` and one folder per tag)");
    return "";
  }
  if (!tag.empty()) {
    const std::string dir = join_path(path, tag);
    if (!is_directory(dir)) {
      d.error(dir, tag, "no such tag", tags_hint(path));
      return "";
    }
    return dir;
  }
  if (path_exists(join_path(path, kManifestName))) return path;  // DIR/TAG given directly
  const std::string latest = join_path(path, kLatestName);
  if (!path_exists(latest)) {
    d.error(latest, "", "the directory has no `latest` file (every zerotrain save writes it last)",
            "name a tag (--load-tag TAG, or DIR/TAG): " + tags_hint(path));
    return "";
  }
  std::string t;
  try {
    t = trim(read_small_file(latest));
  } catch (const IoError& e) {
    d.error(latest, "", e.what(), "check the file's permissions");
    return "";
  }
  if (t.empty() || t.find('/') != std::string::npos || t[0] == '.') {
    d.error(latest, "\"" + t + "\"", "does not name a tag (expected a folder name such as global_step100)",
            "name a tag instead: " + tags_hint(path));
    return "";
  }
  const std::string dir = join_path(path, t);
  if (!is_directory(dir)) {
    d.error(latest, t, "names a tag that is not in " + path, tags_hint(path));
    return "";
  }
  return dir;
}

bool prepare_manifest(const std::vector<UnitLayout>& units, const std::vector<std::string>& arrays,
                      OptimizerType optimizer, const LoadOptions& o, LoadPlan& plan, Diagnostics& d) {
  const size_t before = d.error_count();
  plan.tag_dir = resolve_checkpoint(o.path, o.tag, d);
  if (plan.tag_dir.empty()) return false;
  Manifest& m = plan.manifest;
  if (!read_manifest(plan.tag_dir, m, d)) return false;
  const std::string mpath = join_path(plan.tag_dir, kManifestName);
  check_same_model(m, mpath, units,
                   "load it into the model it was saved from (" + model_text(m.model) + ": e.g. --model " + m.model.name +
                       "), or start a new run",
                   d);
  if (o.load_optimizer_states) {
    plan.arrays = arrays;
    std::vector<std::string> missing;
    for (const auto& a : plan.arrays)
      if (std::find(m.arrays.begin(), m.arrays.end(), a) == m.arrays.end()) missing.push_back(a);
    if (!missing.empty()) {
      std::string have, need;
      for (const auto& a : m.arrays) have += (have.empty() ? "" : ", ") + a;
      for (const auto& a : missing) need += (need.empty() ? "" : ", ") + a;
      d.error(mpath + ": arrays", have,
              "the checkpoint (optimizer " + m.optimizer + ") lacks " + need + ", which this run's optimizer " +
                  checkpoint_optimizer_name(optimizer) + " needs",
              "use the optimizer it was saved with, or start from its weights alone: --init-from " + plan.tag_dir +
                  " instead of --load");
    } else if (m.optimizer != checkpoint_optimizer_name(optimizer)) {
      plan.warnings.warning(mpath + ": optimizer", m.optimizer,
                            "saved with " + m.optimizer + ", loading into " + checkpoint_optimizer_name(optimizer) +
                                ": the moments are taken as they are (same names, same meaning)");
    }
  } else {
    plan.arrays = {"master"};
  }
  return d.error_count() == before;
}

bool prepare_load(const ShardedState& state, const LoadOptions& o, LoadPlan& plan, Diagnostics& d) {
  const size_t before = d.error_count();
  if (!prepare_manifest(state.units(), state.arrays(), state.optimizer(), o, plan, d)) return false;
  const Manifest& m = plan.manifest;
  // Open (and check) only the old rank files holding something this rank needs.
  for (int r : ranks_touched(m.ranks, state.needed())) {
    auto f = ShardFileReader::open(plan.tag_dir, m, r, d);
    if (f) plan.files[r] = std::move(f);
  }
  return d.error_count() == before;
}

uint64_t verify_needed(const LoadPlan& plan, const std::vector<ElementRange>& needed, const std::string& fix,
                       Diagnostics& d) {
  const Manifest& m = plan.manifest;
  const std::string parent = plan.tag_dir.find('/') == std::string::npos ? "." : plan.tag_dir.substr(0, plan.tag_dir.rfind('/'));
  std::map<int, std::unique_ptr<ShardFileReader>> files;
  for (int r : ranks_touched(m.ranks, needed)) {
    Diagnostics fd;
    auto f = ShardFileReader::open(plan.tag_dir, m, r, fd);
    for (auto x : fd.all()) {
      if (x.severity == Severity::Error) x.fix += " (" + tags_hint(parent) + ")";
      d.add(x);
    }
    if (f) files[r] = std::move(f);
  }
  std::map<int, bool> bad;
  for (const ElementRange& need : needed)
    for (const auto& p : plan_reads(m.ranks, need)) {
      const auto it = files.find(p.rank);
      if (it == files.end() || bad[p.rank]) continue;
      for (const auto& a : plan.arrays) {
        std::string problem;
        if (it->second->verify(a, p.source, p.src_offset, p.n, &problem)) continue;
        d.error(it->second->path(), "", problem,
                "the file is damaged (a copy that went wrong, a disk error): copy the checkpoint again from where it was "
                "written, or " + fix + " (" + tags_hint(parent) + ")");
        bad[p.rank] = true;
        break;
      }
    }
  uint64_t bytes = 0;
  for (const auto& [r, f] : files) bytes += f->bytes_read();
  return bytes;
}

// This rank's private arrays, from its own file at the same world size (the checkpoint's arrays of
// this rank matching the state's by name and count); otherwise, where the checkpoint holds them,
// the state is told why not. Only with the optimizer state (they belong to it).
static void load_private(ShardedState& state, LoadPlan& plan, int rank) {
  const Manifest& m = plan.manifest;
  const auto wanted = state.private_arrays(m.counters);
  if (wanted.empty() || plan.arrays.size() <= 1) return;
  const bool saved = std::any_of(m.ranks.begin(), m.ranks.end(), [](const RankFileRecord& r) { return !r.private_arrays.empty(); });
  if (!saved) return;
  if (m.world_size != state.world_size()) {
    state.private_not_loaded("the checkpoint was saved at world size " + std::to_string(m.world_size) + " and this run has " +
                             std::to_string(state.world_size()) + " ranks (each rank's own arrays fit only its rank)");
    return;
  }
  const RankFileRecord& rec = m.ranks.at(size_t(rank));
  if (rec.private_arrays != wanted) {
    state.private_not_loaded("rank " + std::to_string(rank) + "'s arrays in the checkpoint differ from this run's (another model "
                             "or optimizer)");
    return;
  }
  auto it = plan.files.find(rank);
  if (it == plan.files.end()) {
    Diagnostics d;
    auto f = ShardFileReader::open(plan.tag_dir, m, rank, d);
    if (!f) throw UserError(d);
    it = plan.files.emplace(rank, std::move(f)).first;
  }
  std::vector<float> buf;
  for (const auto& a : wanted) {
    buf.resize(size_t(a.n));
    it->second->read_private(a.name, a.n, buf.data());
    state.write_private(a.name, buf.data());
  }
}

LoadResult load_checkpoint(ShardedState& state, RankExchange& ex, const LoadOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadPlan plan;
  Diagnostics d;
  bool ok = false;
  try {
    ok = prepare_load(state, o, plan, d);
  } catch (const IoError& e) {
    d.error(e.path(), "", e.what(), "check that the checkpoint is readable by this user");
  }
  // Agree: every rank loads, the same tag, or none does.
  const std::string mine = ok ? plan.manifest.tag + "\n" + std::to_string(plan.manifest.created_unix) : std::string();
  const auto all = ex.all_gather(mine);
  for (int r = 0; r < int(all.size()); ++r) {
    if (!all[size_t(r)].empty() && all[size_t(r)] == all[0]) continue;
    if (!ok) throw UserError(d);
    if (all[size_t(r)].empty())
      throw UserError("rank " + std::to_string(ex.rank()), "", "stopped: rank " + std::to_string(r) + " cannot load the checkpoint",
                      "read that rank's errors");
    throw UserError(plan.tag_dir, plan.manifest.tag,
                    "rank " + std::to_string(r) + " resolved a different checkpoint (a save into the directory while loading?)",
                    "name the tag explicitly (--load-tag)");
  }
  // Read and write, one needed range at a time; a failure on any rank stops every rank before commit.
  LoadResult res;
  std::exception_ptr failure;
  std::vector<std::string> notes;
  try {
    CheckpointIoOptions io_options = o.io;
    io_options.note = [&notes](const std::string& s) { notes.push_back(s); };
    BulkIo io(io_options);
    std::vector<float> buf;
    for (const ElementRange& need : state.needed()) {
      const auto pieces = plan_reads(plan.manifest.ranks, need);
      for (const auto& a : plan.arrays) {
        float* target = state.write_target(a, need);  // straight into the state where it allows
        if (!target && buf.size() < size_t(need.n)) buf.resize(size_t(need.n));
        float* into = target ? target : buf.data();
        for (const auto& p : pieces)
          plan.files.at(p.rank)->read(a, p.source, p.src_offset, p.n, into + p.dst_offset, o.verify, io, res.io);
        if (!target) state.write(a, need, buf.data());
        else res.bytes_in_place += uint64_t(need.n) * 4;
      }
      res.bytes_needed += uint64_t(need.n) * 4 * plan.arrays.size();
    }
    load_private(state, plan, ex.rank());
  } catch (...) {
    failure = std::current_exception();
  }
  if (!ex.all_true(failure == nullptr)) {
    if (failure) std::rethrow_exception(failure);
    throw UserError("rank " + std::to_string(ex.rank()), "", "stopped: another rank could not read its part of the checkpoint",
                    "read that rank's errors");
  }
  if (o.load_counters) state.set_counters(plan.manifest.counters);
  const auto c0 = std::chrono::steady_clock::now();
  state.commit();
  res.commit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  for (const auto& [r, f] : plan.files) {
    res.bytes_read += f->bytes_read();
    res.files_read.push_back(r);
  }
  res.manifest = std::move(plan.manifest);
  res.tag_dir = plan.tag_dir;
  res.warnings = std::move(plan.warnings);
  for (const auto& n : notes) res.warnings.warning(plan.tag_dir, "O_DIRECT", n);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace zt::ckpt
