// Manifest: JSON writing, strict parsing (every problem with its key), and model comparison.
#include "runtime/checkpoint/manifest.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>

#include "runtime/checkpoint/checksum.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_llama.h"

namespace zt::ckpt {

namespace {

// A Llama model adds its family and the rest of its shape as the config.json export writes (GPT-2
// manifests are unchanged).
nlohmann::json model_json(const ModelConfig& m) {
  nlohmann::json j = {{"name", m.name},   {"layers", m.layers},   {"heads", m.heads},
                      {"dim", m.dim},     {"vocab", m.vocab},     {"seq_len", m.seq_len},
                      {"tied_embeddings", m.tied_embeddings}};
  if (m.llama()) {
    j["family"] = model_family_name(m.family);
    j["llama"] = hf_llama_config(m, "float32");
  }
  return j;
}

const char* const kDamaged = "the manifest is damaged or not written by zerotrain: load another tag (zerotrain checkpoint info DIR lists them)";

// Typed field access that reports what is missing or mistyped at "<path>: <key>".
struct Fields {
  const std::string& path;
  Diagnostics& d;
  std::string where(const std::string& key) const { return path + ": " + key; }

  const nlohmann::json* get(const nlohmann::json& o, const std::string& key, const std::string& full) {
    if (!o.is_object() || !o.contains(key)) {
      d.error(where(full), "", "missing", kDamaged);
      return nullptr;
    }
    return &o.at(key);
  }
  bool integer(const nlohmann::json& o, const std::string& key, const std::string& full, int64_t& out, int64_t lo,
               int64_t hi) {
    const auto* v = get(o, key, full);
    if (!v) return false;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
      d.error(where(full), v->dump(), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", kDamaged);
      return false;
    }
    out = v->get<int64_t>();
    return true;
  }
  bool text(const nlohmann::json& o, const std::string& key, const std::string& full, std::string& out) {
    const auto* v = get(o, key, full);
    if (!v) return false;
    if (!v->is_string()) {
      d.error(where(full), v->dump(), "expected a string", kDamaged);
      return false;
    }
    out = v->get<std::string>();
    return true;
  }
};

constexpr int64_t kBig = int64_t(1) << 62;

std::string range_text(const ElementRange& e) {
  char b[80];
  std::snprintf(b, sizeof b, "[%d, %lld, %lld]", e.unit, (long long)e.begin, (long long)e.n);
  return b;
}

}  // namespace

std::string rank_file_name(int rank) {
  char b[40];
  std::snprintf(b, sizeof b, "rank%05d.safetensors", rank);
  return b;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string model_text(const ModelConfig& m) {
  return std::to_string(m.layers) + " layers, " + std::to_string(m.heads) + " heads, dim " + std::to_string(m.dim) +
         ", vocab " + std::to_string(m.vocab) + ", seq " + std::to_string(m.seq_len) +
         (m.tied_embeddings ? ", tied embeddings" : ", untied embeddings");
}

int64_t Manifest::step() const {
  return counters.contains("step") && counters["step"].is_number_integer() ? counters["step"].get<int64_t>() : 0;
}

int64_t Manifest::total_numel() const {
  int64_t n = 0;
  for (const auto& u : units) n += u.numel;
  return n;
}

nlohmann::json Manifest::to_json() const {
  nlohmann::json units_j = nlohmann::json::array();
  for (const auto& u : units) {
    nlohmann::json ts = nlohmann::json::array();
    for (const auto& t : u.tensors) ts.push_back({{"name", t.name}, {"offset", t.offset}, {"shape", t.shape}});
    units_j.push_back({{"name", u.name}, {"kind", unit_kind_name(u.kind)}, {"numel", u.numel}, {"tensors", ts}});
  }
  nlohmann::json ranks_j = nlohmann::json::array();
  for (const auto& r : ranks) {
    nlohmann::json owned = nlohmann::json::array();
    for (const auto& e : r.owned) owned.push_back({e.unit, e.begin, e.n});
    nlohmann::json rec = {{"rank", r.rank},
                          {"file", r.file},
                          {"bytes", r.bytes},
                          {"checksum", checksum_text(r.checksum)},
                          {"header_checksum", checksum_text(r.header_checksum)},
                          {"owned", owned}};
    if (!r.private_arrays.empty()) {
      nlohmann::json priv = nlohmann::json::array();
      for (const auto& a : r.private_arrays) priv.push_back({a.name, a.n});
      rec["private"] = priv;
    }
    ranks_j.push_back(std::move(rec));
  }
  nlohmann::json j = {{"format", kFormatName},
          {"format_version", std::any_of(ranks.begin(), ranks.end(), [](const RankFileRecord& r) {
                               return !r.private_arrays.empty();
                             }) ? kFormatVersionPrivate : 1},
          {"zerotrain_version", zerotrain_version},
          {"zerotrain_commit", zerotrain_commit},
          {"tag", tag},
          {"created_unix", created_unix},
          {"world_size", world_size},
          {"stage", stage},
          {"precision", precision},
          {"optimizer", optimizer},
          {"arrays", arrays},
          {"dtype", "F32"},
          {"block_bytes", block_bytes},
          {"model", model_json(model)},
          {"units", units_j},
          {"ranks", ranks_j},
          {"counters", counters},
          {"run",
           {{"seed", run.seed},
            {"global_batch", run.global_batch},
            {"micro_batch", run.micro_batch},
            {"grad_accum", run.grad_accum},
            {"data", run.data}}},
          {"config", run.config}};
  if (run.hf_vocab > 0) j["run"]["hf_vocab"] = run.hf_vocab;
  return j;
}

bool parse_manifest(const std::string& text, const std::string& path, Manifest& m, Diagnostics& d) {
  const size_t before = d.error_count();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    d.error(path + " (byte " + std::to_string(e.byte) + ")", "", std::string("not valid JSON: ") + e.what(),
            "the manifest is damaged: load another tag (zerotrain checkpoint info DIR lists them)");
    return false;
  }
  Fields f{path, d};
  std::string format;
  if (!j.is_object() || !f.text(j, "format", "format", format)) return false;
  if (format != kFormatName) {
    d.error(f.where("format"), "\"" + format + "\"", std::string("not a zerotrain checkpoint (expected \"") + kFormatName + "\")",
            "point at a directory written by a zerotrain save");
    return false;
  }
  int64_t v = 0;
  std::string writer = "?";
  f.text(j, "zerotrain_version", "zerotrain_version", writer);
  if (!f.integer(j, "format_version", "format_version", v, 1, kBig)) return false;
  if (v > kFormatVersion) {
    d.error(f.where("format_version"), std::to_string(v),
            "written by zerotrain " + writer + " in checkpoint format version " + std::to_string(v) +
                "; this zerotrain reads format versions up to " + std::to_string(kFormatVersion),
            "load it with zerotrain " + writer + " or newer (or export its weights there)");
    return false;
  }
  m.format_version = int(v);
  m.zerotrain_version = writer;
  f.text(j, "zerotrain_commit", "zerotrain_commit", m.zerotrain_commit);
  f.text(j, "tag", "tag", m.tag);
  if (f.integer(j, "created_unix", "created_unix", v, 0, kBig)) m.created_unix = v;
  if (f.integer(j, "world_size", "world_size", v, 1, 1 << 20)) m.world_size = int(v);
  if (f.integer(j, "stage", "stage", v, 0, 3)) m.stage = int(v);
  f.text(j, "precision", "precision", m.precision);
  f.text(j, "optimizer", "optimizer", m.optimizer);
  if (f.integer(j, "block_bytes", "block_bytes", v, 4, int64_t(1) << 40)) m.block_bytes = v;
  if (const auto* a = f.get(j, "arrays", "arrays")) {
    bool ok = a->is_array() && !a->empty();
    for (const auto& x : *a) ok = ok && x.is_string();
    if (ok) m.arrays = a->get<std::vector<std::string>>();
    if (!ok || m.arrays.front() != "master")
      d.error(f.where("arrays"), a->dump(), "expected a list of array names starting with \"master\"", kDamaged);
  }
  if (const auto* mo = f.get(j, "model", "model")) {
    int64_t x = 0;
    f.text(*mo, "name", "model.name", m.model.name);
    if (f.integer(*mo, "layers", "model.layers", x, 1, 1 << 20)) m.model.layers = int(x);
    if (f.integer(*mo, "heads", "model.heads", x, 1, 1 << 20)) m.model.heads = int(x);
    if (f.integer(*mo, "dim", "model.dim", x, 1, 1 << 24)) m.model.dim = int(x);
    if (f.integer(*mo, "vocab", "model.vocab", x, 1, 1 << 30)) m.model.vocab = int(x);
    if (f.integer(*mo, "seq_len", "model.seq_len", x, 1, 1 << 24)) m.model.seq_len = int(x);
    if (const auto* t = f.get(*mo, "tied_embeddings", "model.tied_embeddings")) {
      if (t->is_boolean()) m.model.tied_embeddings = t->get<bool>();
      else d.error(f.where("model.tied_embeddings"), t->dump(), "expected true or false", kDamaged);
    }
    if (mo->contains("family") && (*mo)["family"] != "gpt2") {
      if ((*mo)["family"] != "llama" || !mo->contains("llama")) {
        d.error(f.where("model.family"), (*mo)["family"].dump(), "expected \"gpt2\", or \"llama\" with model.llama", kDamaged);
      } else {
        try {
          ModelConfig l = hf_llama_model_config((*mo)["llama"], path + ": model.llama");
          l.name = m.model.name;
          l.seq_len = m.model.seq_len;
          m.model = l;
        } catch (const UserError& e) {
          for (const auto& x : e.diagnostics().all()) d.add(x);
        }
      }
    }
  }
  m.run.model = m.model;
  if (const auto* us = f.get(j, "units", "units")) {
    if (!us->is_array() || us->empty()) d.error(f.where("units"), "", "expected a non-empty list of units", kDamaged);
    else
      for (size_t i = 0; i < us->size(); ++i) {
        const auto& uj = (*us)[i];
        const std::string k = "units[" + std::to_string(i) + "]";
        UnitLayout u;
        u.index = int(i);
        f.text(uj, "name", k + ".name", u.name);
        int64_t n = 0;
        if (f.integer(uj, "numel", k + ".numel", n, 0, kBig)) u.numel = n;
        std::string kind;
        if (f.text(uj, "kind", k + ".kind", kind))
          u.kind = kind == "embedding" ? UnitKind::Embedding : kind == "head" ? UnitKind::Head : UnitKind::Block;
        const auto* ts = f.get(uj, "tensors", k + ".tensors");
        int64_t next = 0;
        if (ts && ts->is_array())
          for (size_t t = 0; t < ts->size(); ++t) {
            const auto& tj = (*ts)[t];
            const std::string tk = k + ".tensors[" + std::to_string(t) + "]";
            TensorView tv;
            f.text(tj, "name", tk + ".name", tv.name);
            if (f.integer(tj, "offset", tk + ".offset", n, 0, kBig)) tv.offset = n;
            const auto* sh = f.get(tj, "shape", tk + ".shape");
            tv.numel = 1;
            if (sh && sh->is_array())
              for (const auto& dim : *sh) {
                if (!dim.is_number_integer() || dim.get<int64_t>() < 0) {
                  d.error(f.where(tk + ".shape"), sh->dump(), "expected non-negative integers", kDamaged);
                  break;
                }
                tv.shape.push_back(dim.get<int64_t>());
                tv.numel *= dim.get<int64_t>();
              }
            if (tv.offset != next)
              d.error(f.where(tk + ".offset"), std::to_string(tv.offset),
                      "expected " + std::to_string(next) + " (tensors are contiguous in their unit)", kDamaged);
            next = tv.offset + tv.numel;
            u.tensors.push_back(std::move(tv));
          }
        if (next != u.numel)
          d.error(f.where(k + ".numel"), std::to_string(u.numel),
                  "the unit's tensors add up to " + std::to_string(next) + " elements", kDamaged);
        m.units.push_back(std::move(u));
      }
  }
  static const std::regex kFile("rank[0-9]{5}\\.safetensors");
  if (const auto* rs = f.get(j, "ranks", "ranks")) {
    if (!rs->is_array() || int(rs->size()) != m.world_size)
      d.error(f.where("ranks"), "", "expected one entry per rank (" + std::to_string(m.world_size) + ")", kDamaged);
    else
      for (size_t i = 0; i < rs->size(); ++i) {
        const auto& rj = (*rs)[i];
        const std::string k = "ranks[" + std::to_string(i) + "]";
        RankFileRecord r;
        int64_t n = 0;
        if (f.integer(rj, "rank", k + ".rank", n, int64_t(i), int64_t(i))) r.rank = int(n);
        if (f.text(rj, "file", k + ".file", r.file) && !std::regex_match(r.file, kFile))
          d.error(f.where(k + ".file"), r.file, "expected a file name like rank00000.safetensors", kDamaged);
        if (f.integer(rj, "bytes", k + ".bytes", n, 8, kBig)) r.bytes = n;
        for (const char* key : {"checksum", "header_checksum"}) {
          std::string s;
          if (!f.text(rj, key, k + "." + key, s)) continue;
          const auto h = parse_checksum_text(s);
          if (!h) d.error(f.where(k + "." + key), s, "expected \"xxh3:\" and 16 hex digits", kDamaged);
          else (std::string(key) == "checksum" ? r.checksum : r.header_checksum) = *h;
        }
        const auto* ow = f.get(rj, "owned", k + ".owned");
        if (ow && ow->is_array())
          for (const auto& e : *ow) {
            if (!e.is_array() || e.size() != 3 || !e[0].is_number_integer() || !e[1].is_number_integer() ||
                !e[2].is_number_integer()) {
              d.error(f.where(k + ".owned"), e.dump(), "expected [unit, begin, count]", kDamaged);
              continue;
            }
            r.owned.push_back({e[0].get<int>(), e[1].get<int64_t>(), e[2].get<int64_t>()});
          }
        if (rj.contains("private")) {  // optional: this rank's own arrays (1-bit Adam's error feedback)
          const auto& pv = rj.at("private");
          if (!pv.is_array()) d.error(f.where(k + ".private"), pv.dump(), "expected [[name, count], ...]", kDamaged);
          else
            for (const auto& e : pv) {
              if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number_integer() ||
                  e[1].get<int64_t>() < 0 || e[1].get<int64_t>() > kBig) {
                d.error(f.where(k + ".private"), e.dump(), "expected [name, count]", kDamaged);
                continue;
              }
              r.private_arrays.push_back({e[0].get<std::string>(), e[1].get<int64_t>()});
            }
        }
        m.ranks.push_back(std::move(r));
      }
  }
  // The owned ranges must tile every unit exactly once.
  std::map<int, std::vector<std::pair<ElementRange, int>>> per_unit;
  for (const auto& r : m.ranks)
    for (const auto& e : r.owned) {
      if (e.unit < 0 || e.unit >= int(m.units.size()) || e.begin < 0 || e.n < 0 || e.end() > m.units[size_t(e.unit)].numel)
        d.error(f.where("ranks[" + std::to_string(r.rank) + "].owned"),
                range_text(e),
                "outside the units' element ranges", kDamaged);
      else if (e.n > 0)
        per_unit[e.unit].push_back({e, r.rank});
    }
  for (size_t u = 0; u < m.units.size() && d.error_count() == before; ++u) {
    auto& v = per_unit[int(u)];
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
    int64_t at = 0;
    for (const auto& [e, rank] : v) {
      if (e.begin != at) {
        d.error(f.where("ranks[" + std::to_string(rank) + "].owned"), "unit " + m.units[u].name,
                e.begin < at ? "ranges overlap at element " + std::to_string(e.begin)
                             : "elements [" + std::to_string(at) + ", " + std::to_string(e.begin) + ") are owned by no rank",
                kDamaged);
        break;
      }
      at = e.end();
    }
    if (at != m.units[u].numel && d.error_count() == before)
      d.error(f.where("ranks"), "unit " + m.units[u].name,
              "elements [" + std::to_string(at) + ", " + std::to_string(m.units[u].numel) + ") are owned by no rank", kDamaged);
  }
  if (const auto* c = f.get(j, "counters", "counters")) {
    m.counters = *c;
    int64_t x = 0;
    f.integer(*c, "step", "counters.step", x, 0, kBig);
    f.integer(*c, "applied_steps", "counters.applied_steps", x, 0, kBig);
  }
  if (const auto* r = f.get(j, "run", "run")) {
    int64_t x = 0;
    if (r->contains("seed") && r->at("seed").is_number_unsigned()) m.run.seed = r->at("seed").get<uint64_t>();
    else if (r->contains("seed") && r->at("seed").is_number_integer()) m.run.seed = uint64_t(r->at("seed").get<int64_t>());
    if (f.integer(*r, "global_batch", "run.global_batch", x, 0, kBig)) m.run.global_batch = x;
    if (f.integer(*r, "micro_batch", "run.micro_batch", x, 0, 1 << 30)) m.run.micro_batch = int(x);
    if (f.integer(*r, "grad_accum", "run.grad_accum", x, 0, 1 << 30)) m.run.grad_accum = int(x);
    f.text(*r, "data", "run.data", m.run.data);
    if (r->contains("hf_vocab") && f.integer(*r, "hf_vocab", "run.hf_vocab", x, 1, m.model.vocab)) m.run.hf_vocab = x;
  }
  if (j.contains("config")) m.run.config = j["config"];
  return d.error_count() == before;
}

bool read_manifest(const std::string& tag_dir, Manifest& out, Diagnostics& diags) {
  const std::string path = join_path(tag_dir, kManifestName);
  std::string text;
  try {
    text = read_small_file(path);
  } catch (const IoError& e) {
    diags.error(path, "", e.err() == ENOENT ? "the tag has no manifest (a save that never finished writes none)" : e.what(),
                "load another tag: `zerotrain checkpoint info " + tag_dir + "/..` lists the complete ones");
    return false;
  }
  return parse_manifest(text, path, out, diags);
}

void check_same_model(const Manifest& m, const std::string& path, const std::vector<UnitLayout>& units,
                      const std::string& fix, Diagnostics& d) {
  const std::string saved = "the checkpoint's model: " + model_text(m.model);
  if (m.units.size() != units.size()) {
    d.error(path + ": units", std::to_string(m.units.size()) + " units",
            "this run's model has " + std::to_string(units.size()) + " units (" + saved + ")", fix);
    return;
  }
  int reported = 0;
  for (size_t u = 0; u < units.size() && reported < 8; ++u) {
    const auto& a = m.units[u];
    const auto& b = units[u];
    const std::string k = path + ": units[" + std::to_string(u) + "]";
    if (a.name != b.name) {
      d.error(k + ".name", "\"" + a.name + "\"", "this run's unit " + std::to_string(u) + " is \"" + b.name + "\"", fix);
      ++reported;
      continue;
    }
    if (a.tensors.size() != b.tensors.size()) {
      d.error(k + ".tensors", std::to_string(a.tensors.size()) + " tensors",
              "this run's " + b.name + " has " + std::to_string(b.tensors.size()) + " (" + saved + ")", fix);
      ++reported;
      continue;
    }
    for (size_t t = 0; t < a.tensors.size() && reported < 8; ++t) {
      const auto& x = a.tensors[t];
      const auto& y = b.tensors[t];
      if (x.name != y.name || x.shape != y.shape) {
        d.error(k + " (" + a.name + ").tensors[" + std::to_string(t) + "]", x.name + " " + shape_text(x.shape),
                "this run's model has " + y.name + " " + shape_text(y.shape) + " (" + saved + ")", fix);
        ++reported;
      }
    }
  }
}

}  // namespace zt::ckpt
