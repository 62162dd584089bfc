// EngineCheckpoint: the engine's ShardedState (runtime/checkpoint/sharded_state.h), the one boundary
// the checkpoint code reaches it through: a checkpoint's names and ranges mapped onto the engine's
// state arrays.
#include "runtime/engine/engine_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace zt {

namespace {

std::vector<ElementRange> non_empty(const std::vector<UnitRange>& in) {
  std::vector<ElementRange> out;
  for (const UnitRange& r : in)
    if (r.n > 0) out.push_back({r.unit, r.begin, r.n});
  return out;
}

int64_t integer(const nlohmann::json& c, const char* key, int64_t fallback) {
  if (!c.contains(key)) return fallback;
  const auto& v = c.at(key);
  if (!v.is_number_integer())
    throw UserError(std::string("manifest.json: counters.") + key, v.dump(), "must be an integer",
                    "the manifest was edited or damaged: load another tag");
  return v.get<int64_t>();
}

}  // namespace

EngineCheckpoint::EngineCheckpoint(Engine& engine, const ModelConfig& model)
    : engine_(engine), part_(engine.partition()), units_(build_unit_layouts(model)),
      arrays_(state_arrays_for(engine.options().optimizer.type, engine.options().optimizer.momentum != 0.0)),
      owned_(engine.world_rank() < part_.world_size() ? non_empty(part_.owned_ranges()) : std::vector<ElementRange>{}),
      needed_(non_empty(part_.needed_ranges())) {
  if (int(units_.size()) != part_.units())
    throw std::logic_error("EngineCheckpoint: the model has " + std::to_string(units_.size()) +
                           " units, the engine's partition " + std::to_string(part_.units()));
  for (const std::string& a : arrays_)
    if (!engine_.has_state(array_of(a)))
      throw std::logic_error("EngineCheckpoint: the engine keeps no " + a + " array");
}

StateArray EngineCheckpoint::array_of(const std::string& name) const {
  if (name == "master") return StateArray::Master;
  if (name == "exp_avg" || name == "momentum_buffer") return StateArray::Moment1;
  if (name == "exp_avg_sq") return StateArray::Moment2;
  if (name == "exp_avg_sq_fresh") return StateArray::Moment3;
  throw std::logic_error("EngineCheckpoint: no state array named " + name);
}

int64_t EngineCheckpoint::state_begin(const ElementRange& r, const std::vector<ElementRange>& set, const char* what) const {
  for (const ElementRange& s : set)
    if (s.unit == r.unit && r.begin >= s.begin && r.end() <= s.end()) return r.begin - part_.unit(r.unit).state_begin;
  throw std::logic_error("EngineCheckpoint: range [" + std::to_string(r.begin) + ", " + std::to_string(r.end()) +
                         ") of unit " + std::to_string(r.unit) + " is not inside this rank's " + what + " ranges");
}

void EngineCheckpoint::read(const std::string& array, const ElementRange& r, float* out) {
  engine_.read_state(array_of(array), r.unit, state_begin(r, owned_, "owned"), r.n, out);
}

void EngineCheckpoint::write(const std::string& array, const ElementRange& r, const float* in) {
  engine_.write_state(array_of(array), r.unit, state_begin(r, needed_, "needed"), r.n, in);
}

float* EngineCheckpoint::write_target(const std::string& array, const ElementRange& r) {
  return engine_.host_state(array_of(array), r.unit, state_begin(r, needed_, "needed"), r.n);
}

nlohmann::json EngineCheckpoint::counters() const {
  const Engine::Counters c = engine_.counters();
  nlohmann::json j = kept_;
  j["step"] = c.steps;
  j["applied_steps"] = c.applied;
  j["skipped_steps"] = c.skipped;
  j["lr"] = engine_.next_lr();
  if (c.scaler)
    j["loss_scaler"] = {{"scale", c.scaler->scale},
                        {"cur_hysteresis", c.scaler->cur_hysteresis},
                        {"cur_iter", c.scaler->cur_iter},
                        {"last_overflow_iter", c.scaler->last_overflow_iter}};
  else
    j.erase("loss_scaler");
  j.erase("compressed_optimizer");
  if (CompressedOptimizer* co = const_cast<Engine&>(engine_).compressed_optimizer())
    if (nlohmann::json s = co->scalars(); !s.is_null()) j["compressed_optimizer"] = s;
  return j;
}

void EngineCheckpoint::set_counters(const nlohmann::json& j) {
  warnings_ = Diagnostics();
  if (!j.is_object())
    throw UserError("manifest.json: counters", j.dump(), "must be an object", "load another tag");
  Engine::Counters c;
  c.steps = integer(j, "step", 0);
  c.applied = integer(j, "applied_steps", c.steps);
  c.skipped = integer(j, "skipped_steps", c.steps - c.applied);
  if (c.steps < 0 || c.applied < 0 || c.skipped < 0 || c.applied + c.skipped != c.steps)
    throw UserError("manifest.json: counters", j.dump(),
                    "step must equal applied_steps + skipped_steps, all >= 0", "load another tag");
  const bool fp16 = engine_.options().zero.precision == DType::F16;
  if (j.contains("loss_scaler") && fp16) {
    const auto& s = j.at("loss_scaler");
    if (!s.is_object() || !s.contains("scale") || !s.at("scale").is_number())
      throw UserError("manifest.json: counters.loss_scaler", s.dump(), "needs a numeric \"scale\"", "load another tag");
    LossScaler::State st;
    st.scale = s.at("scale").get<double>();
    st.cur_hysteresis = int(integer(s, "cur_hysteresis", st.cur_hysteresis));
    st.cur_iter = integer(s, "cur_iter", st.cur_iter);
    st.last_overflow_iter = integer(s, "last_overflow_iter", st.last_overflow_iter);
    c.scaler = st;
  } else if (fp16) {
    warnings_.warning("manifest.json: counters.loss_scaler", "absent",
                      "the checkpoint was not saved by an fp16 run: the loss scaler starts afresh");
  }
  engine_.restore_counters(c);
  // The compressed optimizers: the phase follows from the applied count; this rank's own arrays
  // come from its file at the same world size, and restart otherwise (errors from zero; 0/1 Adam's
  // local steps from the loaded parameters).
  if (CompressedOptimizer* co = engine_.compressed_optimizer()) {
    const OptimizerOptions& oo = engine_.options().optimizer;
    if (!co->scalars().is_null()) {  // 1-bit LAMB's coefficients, shared by every rank
      if (!j.contains("compressed_optimizer"))
        throw UserError("manifest.json: counters.compressed_optimizer", "absent",
                        std::string(optimizer_type_name(oo.type)) + " needs its per-tensor coefficients to continue",
                        "load a checkpoint saved by a " + std::string(optimizer_type_name(oo.type)) + " run");
      try {
        co->restore_scalars(j.at("compressed_optimizer"));
      } catch (const std::invalid_argument& e) {
        throw UserError("manifest.json: counters.compressed_optimizer", j.at("compressed_optimizer").dump().substr(0, 80),
                        e.what(), "the manifest was edited or damaged, or saved for another model: load another tag");
      }
    }
    const bool own = private_loaded_ || co->rank_arrays(c.applied).empty();
    co->after_load(c.applied, own);
    if (!own && engine_.world_size() > 1 && co->rank_state_used(c.applied))
      warnings_.warning("manifest.json: counters.applied_steps", std::to_string(c.applied),
                        std::string(optimizer_type_name(oo.type)) + " continues at update " + std::to_string(c.applied + 1) +
                            ", but this rank's own arrays restart (the error feedback from zero" +
                            (oo.type == OptimizerType::ZeroOneAdam ? "; local steps from the loaded parameters" : "") +
                            "): " + (private_why_.empty() ? std::string("the checkpoint holds none") : private_why_) +
                            " (the first compressed updates after the load are slightly coarser; DeepSpeed's load always "
                            "drops them)");
  }
  private_loaded_ = false;
  private_why_.clear();
  kept_ = j;
  for (const char* k : {"step", "applied_steps", "skipped_steps", "lr", "loss_scaler", "compressed_optimizer"}) kept_.erase(k);
  if (j.contains("lr") && j.at("lr").is_number()) {
    const double saved = j.at("lr").get<double>(), now = engine_.next_lr();
    if (!(saved == now || std::abs(saved - now) <= 1e-12 * std::max(std::abs(saved), std::abs(now))))
      warnings_.warning("manifest.json: counters.lr", j.at("lr").dump(),
                        "this run's schedule gives lr " + nlohmann::json(now).dump() + " for update " +
                            std::to_string(c.applied + 1) +
                            ": the learning-rate settings differ from the saved run's (the run continues with its own)");
  }
}

std::vector<ShardedState::PrivateArray> EngineCheckpoint::private_arrays(const nlohmann::json& counters) const {
  CompressedOptimizer* co = const_cast<Engine&>(engine_).compressed_optimizer();
  if (!co) return {};
  std::vector<PrivateArray> out;
  for (const auto& a : co->rank_arrays(integer(counters, "applied_steps", 0))) out.push_back({a.name, a.elements});
  return out;
}

std::vector<ShardedState::PrivateArray> EngineCheckpoint::largest_private_arrays() const {
  CompressedOptimizer* co = const_cast<Engine&>(engine_).compressed_optimizer();
  if (!co) return {};
  std::vector<PrivateArray> out;
  for (const auto& a : co->largest_rank_arrays()) out.push_back({a.name, a.elements});
  return out;
}

void EngineCheckpoint::read_private(const std::string& name, float* out) {
  CompressedOptimizer* co = engine_.compressed_optimizer();
  if (!co) throw std::logic_error("EngineCheckpoint: no private array " + name);
  co->read_array(name, out);
}

void EngineCheckpoint::write_private(const std::string& name, const float* in) {
  CompressedOptimizer* co = engine_.compressed_optimizer();
  if (!co) throw std::logic_error("EngineCheckpoint: no private array " + name);
  co->write_array(name, in);
  private_loaded_ = true;
}

}  // namespace zt
