// Reading tests/data/llama's transformers fixtures (scripts/make_llama_reference.py): the F32
// safetensors files, the JSON files, one case's batch, and the closeness check the Llama tests
// share (|got - want| <= rel · max|want| + abs).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::test {

using FloatVec = std::vector<float>;

// A safetensors file of F32 tensors, read whole (the fixtures are small).
inline std::map<std::string, FloatVec> read_f32_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  f.read(header.data(), std::streamsize(n));
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<std::string, FloatVec> out;
  const nlohmann::json h = nlohmann::json::parse(header);
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(t["dtype"], "F32") << name;
    const size_t b = t["data_offsets"][0], e = t["data_offsets"][1];
    FloatVec v((e - b) / 4);
    std::memcpy(v.data(), data.data() + b, e - b);
    out[name] = std::move(v);
  }
  return out;
}

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return nlohmann::json::parse(f);
}

// One fixture directory: transformers' config, weights, reference outputs and the batch.
struct LlamaFixture {
  nlohmann::json config, reference;
  std::map<std::string, FloatVec> weights, outputs;  // model.safetensors, reference.safetensors
  int B = 0, T = 0;
  std::vector<int32_t> tokens, targets;  // [B*T]; targets shifted by one, -1 ignored
};

inline LlamaFixture load_llama_fixture(const std::string& dir) {
  LlamaFixture f;
  f.config = read_json_file(dir + "/config.json");
  f.reference = read_json_file(dir + "/reference.json");
  f.weights = read_f32_safetensors(dir + "/model.safetensors");
  f.outputs = read_f32_safetensors(dir + "/reference.safetensors");
  const std::vector<std::vector<int32_t>> tok = f.reference["tokens"], tgt = f.reference["targets"];
  f.B = int(tok.size());
  f.T = int(tok[0].size());
  for (int b = 0; b < f.B; ++b)
    for (int t = 0; t < f.T; ++t) f.tokens.push_back(tok[b][t]), f.targets.push_back(tgt[b][t]);
  return f;
}

// |got - want| <= rel · max|want| + abs for every element.
inline void expect_close(const FloatVec& got, const FloatVec& want, double rel, double abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double mx = 0;
  for (float w : want) mx = std::max(mx, double(std::abs(w)));
  const double tol = rel * mx + abs;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - want[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " got " << got[at] << " want " << want[at] << " (max|want| "
                        << mx << ")";
}

}  // namespace zt::test
