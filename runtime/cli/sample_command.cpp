// `zerotrain sample`: text (or ids) from a trained model — the weights of a checkpoint or a
// safetensors file put on the backend, the prompt through the family's decoder and its key/value
// cache (runtime/model/decoder.h: GPT-2 or Llama), and each new token picked by TokenPicker and
// printed as it comes. One process: under a launcher, rank 0.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"
#include "runtime/checkpoint/consolidated.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"
#include "runtime/checkpoint/hf_llama.h"
#include "runtime/cli/subcommands.h"
#include "runtime/common/diagnostics.h"
#include "runtime/train/backend_choice.h"
#include "runtime/train/model_flags.h"
#include "runtime/train/sampling.h"

namespace zt {

namespace {

struct SampleFlags {
  std::string checkpoint, tag, init_from;
  ModelFlags model;
  std::string prompt, prompt_ids, tokenizer;
  int tokens = 64;
  SamplingOptions sampling;
  std::string backend = "auto";
  bool print_ids = false, ignore_eos = false;
};

// Every unit's weights (fp32, whole) and the model they belong to.
struct LoadedWeights {
  ModelConfig model;
  std::vector<std::vector<float>> units;
  std::string source;
};

LoadedWeights load_weights(const SampleFlags& f, const CLI::App& cmd) {
  if (f.checkpoint.empty() == f.init_from.empty())
    throw UserError("--checkpoint", f.checkpoint, "give exactly one of --checkpoint DIR[/TAG] and --init-from FILE",
                    "--checkpoint for a zerotrain save directory, --init-from for a safetensors file");
  LoadedWeights w;
  if (!f.checkpoint.empty()) {
    if (f.model.any_given(cmd))
      throw UserError("--model", f.model.preset, "the checkpoint records its model; model flags apply to --init-from",
                      "drop --model/--layers/--heads/--dim/--vocab/--seq-len/--untied-embeddings");
    const ckpt::ConsolidatedWeights ck(f.checkpoint, f.tag);
    w.model = ck.manifest().model;
    w.source = ck.tag_dir() + " (step " + std::to_string(ck.manifest().step()) + ")";
    for (int u = 0; u < int(ck.manifest().units.size()); ++u) w.units.push_back(ck.unit(u));
    return w;
  }
  // A Llama folder's config.json gives the shape the model flags leave out, as for a training run.
  const std::optional<ModelConfig> described = ckpt::hf_llama_config_at(f.init_from);
  w.model = described ? resolve_model(f.model, cmd, *described,
                                      ckpt::join_path(ckpt::hf_weights_dir(f.init_from), "config.json"))
                      : resolve_model(f.model);
  const std::vector<UnitLayout> layouts = build_unit_layouts(w.model);
  const auto read_all = [&](const auto& reader, const Diagnostics& d) {
    if (!reader || d.has_errors()) throw UserError(d);
    for (const auto& layout : layouts) {
      w.units.emplace_back(size_t(layout.numel));
      reader->read_unit(int(w.units.size()) - 1, w.units.back().data());
    }
  };
  Diagnostics d;
  if (w.model.llama())
    read_all(ckpt::HfLlamaReader::open(f.init_from, layouts, w.model, d), d);
  else
    read_all(ckpt::HfGpt2Reader::open(ckpt::hf_gpt2_weights_file(f.init_from), layouts, w.model, d), d);
  w.source = f.init_from;
  return w;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string item;
  std::stringstream in(text);
  while (std::getline(in, item, ',')) {
    std::stringstream words(item);
    std::string word;
    while (words >> word) {
      size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(word, &used);
      } catch (const std::exception&) {
      }
      if (used != word.size() || v < 0 || v > INT32_MAX)
        throw UserError("--prompt-ids", text, "\"" + word + "\" is not a token id", "give ids >= 0 separated by commas");
      ids.push_back(int32_t(v));
    }
  }
  if (ids.empty()) throw UserError("--prompt-ids", text, "no token ids", "give ids >= 0 separated by commas");
  return ids;
}

int run_sample(const SampleFlags& f, const CLI::App& cmd) {
  if (leaves_it_to_rank0()) return 0;
  if (f.tokens < 1) throw UserError("--tokens", std::to_string(f.tokens), "must be >= 1", "");
  if (!f.prompt.empty() && !f.prompt_ids.empty())
    throw UserError("--prompt", f.prompt, "give --prompt TEXT or --prompt-ids IDS, not both", "");
  if (!(f.sampling.temperature >= 0) || !std::isfinite(f.sampling.temperature))
    throw UserError("--temperature", std::to_string(f.sampling.temperature), "must be a number >= 0", "0 is greedy");
  if (f.sampling.top_k < 0) throw UserError("--top-k", std::to_string(f.sampling.top_k), "must be >= 0", "0 keeps every token");
  TextCodec codec;
  if (!f.tokenizer.empty()) codec.tokenizer = std::make_unique<BpeTokenizer>(BpeTokenizer::load(f.tokenizer));
  const LoadedWeights w = load_weights(f, cmd);
  const ModelConfig& m = w.model;

  std::vector<int32_t> prompt;
  const std::optional<int32_t> end_of_text = codec.end_of_text(), start_of_text = codec.start_of_text();
  SamplingOptions sampling = f.sampling;
  if (codec.tokenizer) sampling.vocab_limit = codec.tokenizer->vocab_size();  // ids past it have no text
  if (!f.prompt_ids.empty()) {
    prompt = parse_ids(f.prompt_ids);
    codec.ids_out = f.print_ids || !codec.tokenizer;
  } else if (!f.prompt.empty()) {
    try {
      prompt = codec.encode(f.prompt);
    } catch (const std::invalid_argument& e) {
      throw UserError("--prompt", f.prompt, e.what(), "give the prompt as UTF-8 text");
    }
    codec.ids_out = f.print_ids;
    if (prompt.empty()) throw UserError("--prompt", f.prompt, "encodes to no tokens", "give a longer prompt");
  } else if (start_of_text) {
    prompt = {*start_of_text};  // as GPT-2 samples unconditionally: from the document separator
    codec.ids_out = f.print_ids;
  } else {
    throw UserError("--prompt", "", "no prompt (and no tokenizer with a document token, <|endoftext|> or <s>, to start from)",
                    "give --prompt TEXT (bytes without --tokenizer) or --prompt-ids 1,2,3");
  }
  if (codec.tokenizer && !codec.ids_out)
    for (int32_t id : prompt)
      if (id >= codec.tokenizer->vocab_size())
        throw UserError("--prompt-ids", std::to_string(id),
                        "is not in the vocabulary of " + codec.tokenizer->name() + " (ids 0 to " +
                            std::to_string(codec.tokenizer->vocab_size() - 1) + ")",
                        "give ids the tokenizer has, or --print-ids to print ids instead of text");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] >= m.vocab)
      throw UserError(f.prompt_ids.empty() ? "--prompt" : "--prompt-ids", std::to_string(prompt[i]),
                      "token " + std::to_string(i) + " is outside the model's vocabulary of " + std::to_string(m.vocab) +
                          (codec.tokenizer ? " (is --tokenizer the one the model was trained with?)" : ""),
                      "give ids below " + std::to_string(m.vocab));
  if (int64_t(prompt.size()) + f.tokens > m.seq_len)
    throw UserError("--tokens", std::to_string(f.tokens),
                    "the prompt's " + std::to_string(prompt.size()) + " tokens and " + std::to_string(f.tokens) +
                        " new ones exceed the model's context of " + std::to_string(m.seq_len),
                    "ask for at most " + std::to_string(std::max<int64_t>(0, m.seq_len - int64_t(prompt.size()))) +
                        " tokens, or shorten the prompt");

  std::string why;
  const std::string backend_name = resolve_backend(f.backend, why);
  std::unique_ptr<Backend> backend = open_backend(backend_name);
  std::fprintf(stderr, "sample: %s, %s on %s, %zu prompt tokens, up to %d new (temperature %g, top-k %d, seed %llu)\n",
               w.source.c_str(), m.name.c_str(), backend_name.c_str(), prompt.size(), f.tokens, f.sampling.temperature,
               f.sampling.top_k, (unsigned long long)f.sampling.seed);
  const std::string prompt_text = codec.decode_prompt(prompt);
  // Bytes as they are (a byte-level model may print NUL): fwrite, not fputs.
  auto print = [](const std::string& bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); };
  print(codec.ids_out ? prompt_text.substr(1) : prompt_text);
  SampleRequest request{prompt, f.tokens, sampling, f.ignore_eos ? std::nullopt : end_of_text};
  const SampleResult r = sample_from_weights(m, *backend, w.units, request, [&](int32_t id) {
    print(codec.decode(id));
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  const bool stopped = request.stop && !r.tokens.empty() && r.tokens.back() == *request.stop;
  const std::string stop_note = stopped ? "; stopped at " + codec.tokenizer->decode({*request.stop}) : "";
  std::fprintf(stderr, "sample: %zu tokens in %.2f s (%.1f tokens/s; key/value cache %.2f MiB)%s\n", r.tokens.size(),
               r.seconds, r.seconds > 0 ? double(r.tokens.size()) / r.seconds : 0.0,
               double(r.cache_bytes) / double(1 << 20), stop_note.c_str());
  return 0;
}

}  // namespace

void register_sample_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("sample", "Generate from a trained model (key/value-cached decoding on the CPU or GPU)");
  auto f = std::make_shared<SampleFlags>();
  cmd->add_option("--checkpoint", f->checkpoint, "zerotrain save directory (uses its `latest`) or DIR/TAG");
  cmd->add_option("--tag", f->tag, "A tag inside the save directory instead of `latest`");
  cmd->add_option("--init-from", f->init_from,
                  "Hugging Face weights instead: a GPT-2 safetensors file, a Llama file or folder, or `zerotrain "
                  "export`'s (with the model flags)");
  add_model_flags(*cmd, f->model);
  cmd->add_option("--prompt", f->prompt, "Prompt text (tokenized with --tokenizer; raw bytes without one)");
  cmd->add_option("--prompt-ids", f->prompt_ids, "Prompt as token ids, e.g. 50256,464,3290 (output as ids too, "
                                                 "unless --tokenizer is given)");
  cmd->add_option("--tokenizer", f->tokenizer, "tokenizer.json (or a folder with it, or vocab.json + merges.txt)");
  cmd->add_option("--tokens", f->tokens, "New tokens to generate")->capture_default_str();
  cmd->add_option("--temperature", f->sampling.temperature, "Softmax temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", f->sampling.top_k, "Draw from the k most likely tokens (0: all)")->capture_default_str();
  cmd->add_option("--seed", f->sampling.seed, "Seed of the draws (same seed, same tokens)")->capture_default_str();
  cmd->add_option("--backend", f->backend, "auto, cpu or cuda")->capture_default_str();
  cmd->add_flag("--print-ids", f->print_ids, "Print token ids instead of text");
  cmd->add_flag("--ignore-eos", f->ignore_eos, "Keep generating after <|endoftext|>");
  f->sampling.top_k = 50;  // Hugging Face generate()'s default
  cmd->callback([f, cmd, &exit_code] { exit_code = run_sample(*f, *cmd); });
}

}  // namespace zt
