// The batch equation with DeepSpeed's semantics: derive the missing one of train_batch_size (T),
// train_micro_batch_size_per_gpu (M) and gradient_accumulation_steps (G) exactly as DeepSpeed does,
// then require T == M * G * W, explaining where every number came from and how to fix it.
#include <string>
#include <tuple>
#include <vector>

#include "runtime/config/config_load.h"

namespace zt {
namespace {

std::string s(int64_t v) { return std::to_string(v); }

std::string world_source(WorldSizeSource src) {
  switch (src) {
    case WorldSizeSource::Launch: return "from the launch: number of ranks";
    case WorldSizeSource::Flag: return "from --world-size";
    case WorldSizeSource::Default: return "default 1: no --world-size given";
  }
  return "";
}

std::string origin(const Field<int64_t>& f) {
  if (f.source.kind == SourceKind::File) return f.is_auto ? "\"auto\"" : "from the file";
  return f.source.describe();
}

// Nearby multiples of `step` around `t` (at least `step`): the train_batch_size values that work.
std::string multiples(int64_t t, int64_t step) {
  const int64_t lo = std::max<int64_t>(step, (t / step) * step);
  const int64_t hi = (t / step + 1) * step;
  return lo == hi ? s(lo) : s(lo) + " or " + s(hi);
}

std::string join_or(const std::vector<std::string>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i == 0 ? "" : (i + 1 == v.size() ? "; or " : "; ")) + v[i];
  return r;
}

bool given(const Field<int64_t>& f) { return (f.present || f.source.kind == SourceKind::Flag || f.source.kind == SourceKind::Auto) && !f.is_auto; }

}  // namespace

void resolve_batch(Config& c, int world_size, WorldSizeSource wsrc, Diagnostics& d) {
  auto& T = c.train_batch_size;
  auto& M = c.train_micro_batch_size_per_gpu;
  auto& G = c.gradient_accumulation_steps;
  c.world_size.value = world_size;
  c.world_size.source = wsrc == WorldSizeSource::Default ? Source{SourceKind::Default, ""}
                        : wsrc == WorldSizeSource::Flag  ? Source{SourceKind::Flag, "--world-size"}
                                                         : Source{SourceKind::Derived, world_source(wsrc)};
  const int64_t W = world_size;
  if (W < 1) {
    d.error("world_size", s(W), "world size must be at least 1", "pass --world-size N with N >= 1");
    return;
  }
  // A bad type, an unresolved "auto" or a conflict was already reported: deriving would add noise.
  if (T.invalid || M.invalid || G.invalid) return;
  if (M.is_auto || G.is_auto) return;  // unresolved (reported by resolve_auto)

  bool bad = false;
  for (auto [f, name] : {std::pair{&T, "train_batch_size"}, std::pair{&M, "train_micro_batch_size_per_gpu"},
                         std::pair{&G, "gradient_accumulation_steps"}}) {
    if (given(*f) && f->value <= 0) {
      d.error(name, s(f->value), "must be greater than 0 (" + origin(*f) + ")", "use a positive integer");
      bad = true;
    }
  }
  if (bad) return;

  const bool t = given(T), m = given(M), g = given(G);
  const Source derived_src{SourceKind::Derived, ""};
  auto derive = [&](Field<int64_t>& f, int64_t v, std::string how) {
    f.value = v;
    f.is_auto = false;
    f.source = {SourceKind::Derived, std::move(how)};
  };
  (void)derived_src;
  if (t && m && g) {
    // all three given: only the check below
  } else if (t && m) {
    derive(G, (T.value / M.value) / W,
           "(train_batch_size // train_micro_batch_size_per_gpu) // world_size = (" + s(T.value) + " // " + s(M.value) +
               ") // " + s(W));
  } else if (t && g) {
    derive(M, (T.value / W) / G.value,
           "(train_batch_size // world_size) // gradient_accumulation_steps = (" + s(T.value) + " // " + s(W) + ") // " +
               s(G.value));
  } else if (m && g) {
    derive(T, M.value * G.value * W, "micro batch * accumulation * world size = " + s(M.value) + " * " + s(G.value) + " * " + s(W));
  } else if (t) {
    derive(G, 1, "1 when only train_batch_size is given");
    derive(M, T.value / W, "train_batch_size // world_size = " + s(T.value) + " // " + s(W));
  } else if (m) {
    derive(T, M.value * W, "micro batch * world size = " + s(M.value) + " * " + s(W));
    derive(G, 1, "1 when only train_micro_batch_size_per_gpu is given");
  } else {
    d.error("train_batch_size", "", "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
            "add \"train_micro_batch_size_per_gpu\" (or pass --micro-batch with it set to \"auto\"); train_batch_size is "
            "then derived as micro batch * gradient_accumulation_steps * world size");
    return;
  }

  const std::string where = "train_batch_size " + s(T.value) + " (" + origin(T) + "), train_micro_batch_size_per_gpu " +
                            s(M.value) + " (" + origin(M) + "), gradient_accumulation_steps " + s(G.value) + " (" +
                            origin(G) + "), world_size " + s(W) + " (" + world_source(wsrc) + ")";
  // Derived values of 0: the division truncated below one.
  for (auto [f, name, ds] : {std::tuple{&M, "train_micro_batch_size_per_gpu", "Micro batch size per gpu"},
                             std::tuple{&G, "gradient_accumulation_steps", "Gradient accumulation steps"}}) {
    if (f->value > 0) continue;
    std::string fix;
    if (t && m) fix = "train_batch_size must be at least train_micro_batch_size_per_gpu * world_size = " + s(M.value * W) +
                      ": use " + multiples(T.value, M.value * W);
    else if (t && g) fix = "train_batch_size must be at least gradient_accumulation_steps * world_size = " + s(G.value * W) +
                           ": use " + multiples(T.value, G.value * W);
    else fix = "train_batch_size must be at least world_size = " + s(W) + ": use " + multiples(T.value, W);
    d.error(name, s(f->value), std::string(ds) + ": 0 has to be greater than 0 (derived as " + f->source.detail + "); " + where, fix);
    return;
  }

  if (T.value == M.value * G.value * W) return;
  std::vector<std::string> fixes;
  if (t && m && g) {
    fixes.push_back("remove train_batch_size (or set it to \"auto\") so it is derived as " + s(M.value) + " * " + s(G.value) +
                    " * " + s(W) + " = " + s(M.value * G.value * W));
    if (T.value % (M.value * W) == 0)
      fixes.push_back("set gradient_accumulation_steps to " + s(T.value / (M.value * W)));
    if (T.value % (G.value * W) == 0)
      fixes.push_back("set train_micro_batch_size_per_gpu to " + s(T.value / (G.value * W)));
  } else if (t && m) {
    fixes.push_back("set train_batch_size to a multiple of train_micro_batch_size_per_gpu * world_size = " + s(M.value * W) +
                    " (e.g. " + multiples(T.value, M.value * W) + ")");
    fixes.push_back("remove train_batch_size and set gradient_accumulation_steps; train_batch_size is then derived");
  } else if (t && g) {
    fixes.push_back("set train_batch_size to a multiple of gradient_accumulation_steps * world_size = " + s(G.value * W) +
                    " (e.g. " + multiples(T.value, G.value * W) + ")");
    fixes.push_back("remove train_batch_size and set train_micro_batch_size_per_gpu; train_batch_size is then derived");
  } else {
    fixes.push_back("set train_batch_size to a multiple of world_size " + s(W) + " (e.g. " + multiples(T.value, W) + ")");
    fixes.push_back("give train_micro_batch_size_per_gpu instead; train_batch_size is then derived");
  }
  d.error("train_batch_size", s(T.value),
          "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * "
          "world_size " +
              s(T.value) + " != " + s(M.value) + " * " + s(G.value) + " * " + s(W) + ". Where the numbers came from: " + where,
          join_or(fixes));
}

}  // namespace zt
