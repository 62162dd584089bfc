// RunFingerprint: building the key = value list, exchanging it between ranks, and the report of
// the keys that differ with the ranks that hold each value.
#include "runtime/train/run_fingerprint.h"

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collectives/rank_list.h"
#include "runtime/config/config_echo.h"
#include "runtime/data/token_shard.h"
#include "collectives/rank_exchange.h"

namespace zt {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", (unsigned long long)v);
  return b;
}

// "/zero_optimization/stage" -> "zero_optimization.stage"
std::string dotted(const std::string& pointer) {
  std::string s = pointer.substr(pointer.empty() ? 0 : 1);
  for (char& c : s)
    if (c == '/') c = '.';
  return s;
}

std::string shard_text(const std::string& path) {
  const ShardIdentity id = shard_identity(path);
  return std::to_string(id.size) + " bytes, header and ends FNV-1a " + hex(id.hash);
}

// One shard: its identity; several: their count, total size and a hash of every identity in order.
std::string corpus_text(const TokenCorpus& c) {
  if (c.shards() == 1) return shard_text(c.source(0));
  uint64_t bytes = 0;
  std::string all;
  for (int s = 0; s < c.shards(); ++s) {
    const ShardIdentity id = shard_identity(c.source(s));
    bytes += id.size;
    all += shard_text(c.source(s)) + "\n";
  }
  return std::to_string(c.shards()) + " shards, " + std::to_string(bytes) + " bytes, identities FNV-1a " + hex(fnv1a(all));
}

std::map<std::string, std::string> parse(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) m[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return m;
}

}  // namespace

std::string RunFingerprint::text() const {
  std::string s;
  for (const auto& [k, v] : items) s += k + "\t" + v + "\n";
  return s;
}

uint64_t RunFingerprint::hash() const { return fnv1a(text()); }

RunFingerprint make_run_fingerprint(const RunOptions& o, const Config& c, const TokenDataset& data,
                                    const Backend& backend) {
  RunFingerprint f;
  auto add = [&](std::string k, std::string v) {
    for (char& ch : v)
      if (ch == '\n' || ch == '\t') ch = ' ';
    f.items.emplace_back(std::move(k), std::move(v));
  };
  const nlohmann::json flat = config_to_json(c).flatten();  // kept: items() refers to it
  for (const auto& [k, v] : flat.items()) add("config." + dotted(k), v.dump());
  const ModelConfig& m = o.model;
  add("model.layers", std::to_string(m.layers));
  add("model.heads", std::to_string(m.heads));
  add("model.dim", std::to_string(m.dim));
  add("model.vocab", std::to_string(m.vocab));
  add("model.seq_len", std::to_string(m.seq_len));
  add("model.tied_embeddings", m.tied_embeddings ? "true" : "false");
  add("run.seed", std::to_string(o.seed));
  add("run.steps", std::to_string(c.run_steps.value));
  add("run.eval_every", std::to_string(o.eval_every));
  add("run.eval_batches", std::to_string(o.eval_batches));
  add("run.recompute", o.recompute ? "true" : "false");
  add("run.backend", backend.name());
  if (data.from_files) {
    add("data.train", corpus_text(data.train));
    add("data.val", corpus_text(data.val));
  } else {
    add("data.train", "built-in, " + std::to_string(data.train.size()) + " tokens");
    add("data.val", "built-in, " + std::to_string(data.val.size()) + " tokens");
  }
  return f;
}

Diagnostics fingerprint_differences(const std::vector<std::string>& per_rank_text, size_t max_keys) {
  std::vector<std::map<std::string, std::string>> ranks;
  for (const auto& t : per_rank_text) ranks.push_back(parse(t));
  std::map<std::string, bool> keys;  // sorted, deduplicated
  for (const auto& m : ranks)
    for (const auto& [k, v] : m) keys[k] = true;
  Diagnostics d;
  size_t differing = 0;
  for (const auto& [key, unused] : keys) {
    std::vector<std::pair<std::string, std::vector<int>>> groups;  // value -> ranks, in order of first rank
    for (int r = 0; r < int(ranks.size()); ++r) {
      const auto it = ranks[size_t(r)].find(key);
      const std::string v = it == ranks[size_t(r)].end() ? "(not set)" : it->second;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == v; });
      if (g == groups.end()) groups.push_back({v, {r}});
      else g->second.push_back(r);
    }
    if (groups.size() < 2) continue;
    if (++differing > max_keys) continue;
    std::string msg = "the ranks disagree: ";
    for (size_t i = 0; i < groups.size(); ++i)
      msg += (i ? "; " : "") + groups[i].first + " on " + rank_list(groups[i].second);
    d.error(key, "", msg,
            "start every rank with the same config, flags, environment and data (mpirun's MPMD syntax "
            "`-np 1 A : -np 1 B` or a per-rank environment can give ranks different settings)");
  }
  if (differing > max_keys)
    d.error("(ranks)", "", std::to_string(differing - max_keys) + " more key(s) differ between the ranks",
            "fix the ones above first");
  return d;
}

void agree_on_fingerprint(const RunFingerprint& mine, Communicator& comm, Backend& backend) {
  const int W = comm.world_size();
  if (W == 1) return;
  RankExchange x(comm, &backend);
  const std::vector<int64_t> hashes = x.all_gather_words({int64_t(mine.hash())});
  bool same = true;
  for (int r = 1; r < W; ++r) same = same && hashes[size_t(r)] == hashes[0];
  if (same) return;
  // The texts themselves.
  const std::vector<std::string> texts = x.all_gather(mine.text());
  Diagnostics d = fingerprint_differences(texts);
  if (!d.has_errors())  // equal maps, different hashes: an ordering difference only
    return;
  throw UserError(d);  // every rank holds the same list: the job prints it once
}

}  // namespace zt
