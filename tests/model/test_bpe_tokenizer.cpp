// BpeTokenizer against the tokenizers package: the ids and decoded text of
// tests/model/data/bpe/expected.json (made by tests/data/bpe_tokenizer_reference.py) for a small
// byte-level tokenizer under GPT-2's pre-tokenizer, a prefix space, Llama-3's Split + ByteLevel,
// Digits (individual, as SmolLM2's, and grouped) + ByteLevel,
// added tokens (special, single_word, lstrip/rstrip) and ignore_merges; decode(encode(s)) == s;
// the vocab.json + merges.txt form of the same tokenizer; exact bytes for ids that hold part of a
// character; SentencePiece-style files (tests/model/data/sentencepiece_bpe/expected.json, made by
// tests/data/sentencepiece_bpe_reference.py: Llama-2's layout under each normalizer, Metaspace and
// decoder variant, over 400 random strings too); and bad files, each one error naming the file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/common/diagnostics.h"
#include "runtime/data/bpe_tokenizer.h"

namespace zt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = ZT_BPE_TEST_DATA_DIR;
const std::string kSentencePieceFixtures = ZT_SENTENCEPIECE_BPE_TEST_DATA_DIR;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("zt_bpe_tokenizer_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "missing " << path << " (make it with tests/data/bpe_tokenizer_reference.py)";
  return json::parse(in);
}

const json& expected() {
  static const json reference = read_json(kFixtures + "/expected.json");
  return reference;
}

const json& variant(const std::string& name) {
  for (const json& v : expected()["variants"])
    if (v["name"] == name) return v;
  throw std::runtime_error("expected.json has no variant " + name);
}

// The fixture's tokenizer.json changed as the reference script changed it for `v`.
json patched_tokenizer(const json& v) {
  json tokenizer = read_json(kFixtures + "/tokenizer.json");
  tokenizer["pre_tokenizer"] = v["pre_tokenizer"];
  tokenizer["added_tokens"] = v["added_tokens"];
  tokenizer["model"]["ignore_merges"] = v["ignore_merges"];
  for (const auto& [token, id] : v["vocab_additions"].items()) tokenizer["model"]["vocab"][token] = id;
  return tokenizer;
}

std::string printable(const std::string& text) { return json(text).dump(); }

// Every text of expected.json encodes to tokenizers' ids and those ids decode to tokenizers' text
// (and, where the variant gives text back, to the text itself).
void expect_matches_reference(const BpeTokenizer& tokenizer, const json& v) {
  const json& texts = expected()["texts"];
  ASSERT_EQ(texts.size(), v["ids"].size());
  ASSERT_GE(texts.size(), 30u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const auto want = v["ids"][i].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tokenizer.encode(text);
    EXPECT_EQ(got, want) << v["name"] << ": " << printable(text);
    EXPECT_EQ(tokenizer.decode(want), v["decoded"][i].get<std::string>()) << v["name"] << ": " << printable(text);
    if (v["round_trips"].get<bool>()) {
      EXPECT_EQ(tokenizer.decode(got), text) << v["name"];
    }
  }
}

void expect_variant(const std::string& name) {
  const json& v = variant(name);
  TempDir dir;
  const std::string path = dir.write("tokenizer.json", patched_tokenizer(v).dump());
  expect_matches_reference(BpeTokenizer::load(path), v);
}

TEST(BpeTokenizer, Gpt2ByteLevelMatchesTokenizers) {
  // The fixture as saved is this variant; load it untouched.
  const json& v = variant("byte_level");
  ASSERT_EQ(read_json(kFixtures + "/tokenizer.json")["pre_tokenizer"], v["pre_tokenizer"]);
  const BpeTokenizer tokenizer = BpeTokenizer::load(kFixtures + "/tokenizer.json");
  expect_matches_reference(tokenizer, v);
  EXPECT_EQ(tokenizer.name(), kFixtures + "/tokenizer.json");
}

TEST(BpeTokenizer, PrefixSpaceMatchesTokenizers) { expect_variant("prefix_space"); }

TEST(BpeTokenizer, Llama3SplitThenByteLevelMatchesTokenizers) { expect_variant("llama3_split"); }
// SmolLM2's pre-tokenizer (each digit alone, then ByteLevel), and Digits keeping runs together.
TEST(BpeTokenizer, DigitsThenByteLevelMatchesTokenizers) {
  expect_variant("digits_individual");
  expect_variant("digits_grouped");
}

TEST(BpeTokenizer, AddedTokensMatchTokenizers) { expect_variant("added_tokens"); }

TEST(BpeTokenizer, IgnoreMergesMatchesTokenizers) { expect_variant("ignore_merges"); }

TEST(BpeTokenizer, SpecialTokenIsOneIdWhereverItStands) {
  const BpeTokenizer tokenizer = BpeTokenizer::load(kFixtures);  // the folder: its tokenizer.json
  const std::optional<int32_t> end_of_text = tokenizer.token_id("<|endoftext|>");
  ASSERT_TRUE(end_of_text);
  EXPECT_EQ(*end_of_text, 0);
  for (const std::string text : {"<|endoftext|>", "a<|endoftext|>b", "x <|endoftext|>\n\n<|endoftext|>"}) {
    const std::vector<int32_t> ids = tokenizer.encode(text);
    const std::string decoded = tokenizer.decode(ids);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), *end_of_text), std::count(text.begin(), text.end(), '|') / 2)
        << text;
    EXPECT_EQ(decoded, text);
  }
  EXPECT_EQ(tokenizer.vocab_size(), 600);
  EXPECT_EQ(tokenizer.token_id("\xc4\xa0the"), tokenizer.encode(" the").front());  // "Ġthe", as the vocabulary spells it
  EXPECT_FALSE(tokenizer.token_id("<|not a token|>"));
}

TEST(BpeTokenizer, VocabJsonAndMergesTxtEncodeTheSame) {
  const json& v = variant("byte_level");
  for (const std::string file : {"vocab.json", "merges.txt"}) {
    const BpeTokenizer pair = BpeTokenizer::load(kFixtures + "/" + file);
    EXPECT_EQ(pair.name(), kFixtures + "/vocab.json");
    expect_matches_reference(pair, v);
    EXPECT_EQ(pair.token_id("<|endoftext|>"), 0);
    EXPECT_EQ(pair.vocab_size(), 600);
  }
  // A folder with the pair alone.
  TempDir dir;
  fs::copy_file(kFixtures + "/vocab.json", dir.path / "vocab.json");
  fs::copy_file(kFixtures + "/merges.txt", dir.path / "merges.txt");
  expect_matches_reference(BpeTokenizer::load(dir.path.string()), v);
}

TEST(BpeTokenizer, DecodeGivesExactBytesAndRefusesUnknownIds) {
  const BpeTokenizer tokenizer = BpeTokenizer::load(kFixtures + "/tokenizer.json");
  // A character the training text lacks is several tokens: one id alone gives part of it, as it is.
  const std::string rare = "\xf0\x9f\xa6\x80";  // U+1F980
  const std::vector<int32_t> ids = tokenizer.encode(rare);
  ASSERT_GE(ids.size(), 2u);
  std::string pieces;
  for (int32_t id : ids) {
    EXPECT_LT(tokenizer.decode({id}).size(), rare.size());
    pieces += tokenizer.decode({id});
  }
  EXPECT_EQ(pieces, rare);
  EXPECT_EQ(tokenizer.decode({}), "");
  for (int32_t bad : {-1, 600, 1 << 30}) {
    try {
      tokenizer.decode({ids[0], bad});
      ADD_FAILURE() << "decode accepted id " << bad;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("id " + std::to_string(bad) + " "), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(tokenizer.encode("caf\xe9"), std::invalid_argument);  // Latin-1, not UTF-8
}

// ---- SentencePiece-style files (tests/model/data/sentencepiece_bpe, made by
// tests/data/sentencepiece_bpe_reference.py): Llama-2's layout, byte fallback, the metaspace ----

const json& sentencepiece_expected() {
  static const json reference = read_json(kSentencePieceFixtures + "/expected.json");
  return reference;
}

// The base tokenizer.json with a variant's normalizer, pre-tokenizer, decoder, post-processor, model
// keys and added tokens.
std::string sentencepiece_variant_file(const TempDir& dir, const json& v) {
  json tokenizer = read_json(kSentencePieceFixtures + "/tokenizer.json");
  for (const char* key : {"normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"})
    tokenizer[key] = v[key];
  for (const auto& [key, value] : v["model_changes"].items()) tokenizer["model"][key] = value;
  return dir.write(v["name"].get<std::string>() + ".json", tokenizer.dump());
}

// Every text: tokenizers' ids without and with the post-processor's tokens, tokenizers' decoded
// text, and decode_continuation one id at a time equal to all at once and to decode's text after
// the spaces the start-of-text rules take off.
TEST(BpeTokenizer, SentencePieceStyleVariantsMatchTokenizers) {
  const json& texts = sentencepiece_expected()["texts"];
  ASSERT_GE(texts.size(), 400u);
  ASSERT_GE(sentencepiece_expected()["variants"].size(), 7u);
  for (const json& v : sentencepiece_expected()["variants"]) {
    TempDir dir;
    const BpeTokenizer tokenizer = BpeTokenizer::load(sentencepiece_variant_file(dir, v));
    const std::string name = v["name"];
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i].get<std::string>();
      const auto want = v["ids"][i].get<std::vector<int32_t>>();
      ASSERT_EQ(tokenizer.encode(text), want) << name << ": " << printable(text);
      ASSERT_EQ(tokenizer.encode(text, /*add_special_tokens=*/true), v["ids_with_special_tokens"][i].get<std::vector<int32_t>>())
          << name << ": " << printable(text);
      const std::string decoded = tokenizer.decode(want);
      ASSERT_EQ(decoded, v["decoded"][i].get<std::string>()) << name << ": " << printable(text);
      std::string one_by_one;
      for (int32_t id : want) one_by_one += tokenizer.decode_continuation({id});
      const std::string continued = tokenizer.decode_continuation(want);
      ASSERT_EQ(one_by_one, continued) << name << ": " << printable(text);
      ASSERT_GE(continued.size(), decoded.size()) << name;
      const size_t taken = continued.size() - decoded.size();
      EXPECT_EQ(continued.substr(taken), decoded) << name << ": " << printable(text);
      EXPECT_EQ(continued.substr(0, taken), std::string(taken, ' ')) << name << ": " << printable(text);
    }
  }
}

TEST(BpeTokenizer, ByteFallbackSpellsCharactersOutsideTheVocabulary) {
  TempDir dir;
  const json* legacy = nullptr;
  for (const json& v : sentencepiece_expected()["variants"])
    if (v["name"] == "llama2_legacy") legacy = &v;
  ASSERT_NE(legacy, nullptr);
  const BpeTokenizer tokenizer = BpeTokenizer::load(sentencepiece_variant_file(dir, *legacy));
  EXPECT_EQ(tokenizer.vocab_size(), int32_t(read_json(kSentencePieceFixtures + "/tokenizer.json")["model"]["vocab"].size()));
  EXPECT_EQ(tokenizer.document_token(), 1);  // <s>
  EXPECT_EQ(tokenizer.end_of_text(), 2);     // </s>
  const std::string snowman = "\xe2\x98\x83";  // U+2603, not in the trained alphabet
  const std::vector<int32_t> ids = tokenizer.encode(snowman);
  ASSERT_EQ(ids.size(), 4u);  // the word's mark, then one <0xNN> token per byte
  EXPECT_EQ(ids[0], tokenizer.token_id("\xe2\x96\x81"));
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()),
            (std::vector<int32_t>{3 + 0xE2, 3 + 0x98, 3 + 0x83}));
  EXPECT_EQ(tokenizer.decode({ids[1]}), "\xe2");  // part of a character, as it is
  EXPECT_EQ(tokenizer.decode(ids), snowman);      // the leading space stripped
  EXPECT_EQ(tokenizer.decode_continuation(ids), " " + snowman);
  EXPECT_EQ(tokenizer.encode("Hi", true).front(), 1);  // the template's <s>
}

// The message of the UserError that loading `path` throws; "" when it loads.
std::string load_error(const std::string& path) {
  try {
    BpeTokenizer::load(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& path, const std::vector<std::string>& parts) {
  const std::string message = load_error(path);
  ASSERT_FALSE(message.empty()) << path << " loaded";
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(BpeTokenizer, BadFilesAreOneErrorNamingTheFile) {
  TempDir dir;
  const json good = read_json(kFixtures + "/tokenizer.json");

  expect_error(dir.write("broken.json", "{not json"), {"broken.json", "not JSON", "Fix: "});
  expect_error(dir.write("no_model.json", R"({"version": "1.0", "added_tokens": []})"),
               {"no_model.json: model", "no \"model\" key", "Fix: "});
  json word_piece = good;
  word_piece["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"[UNK]", 0}}}};
  expect_error(dir.write("word_piece.json", word_piece.dump()),
               {"word_piece.json: model.type = \"WordPiece\"", "only BPE", "Fix: "});
  json unigram = good;
  unigram["model"] = {{"type", "Unigram"}, {"vocab", json::array()}};
  expect_error(dir.write("unigram.json", unigram.dump()), {"unigram.json: model.type = \"Unigram\"", "only BPE"});
  json normalized = good;
  normalized["normalizer"] = {{"type", "NFC"}};
  expect_error(dir.write("nfc.json", normalized.dump()), {"nfc.json: normalizer.type = \"NFC\"", "Prepend and Replace"});
  json whitespace = good;
  whitespace["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(dir.write("whitespace.json", whitespace.dump()), {"whitespace.json: pre_tokenizer.type = \"Whitespace\""});
  json metaspace_first = good;  // Metaspace must end the pre-tokenizer
  metaspace_first["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Metaspace"}, {"replacement", "\xe2\x96\x81"}}, {{"type", "Digits"}}}}};
  expect_error(dir.write("metaspace_first.json", metaspace_first.dump()),
               {"metaspace_first.json: pre_tokenizer.pretokenizers[0].type = \"Metaspace\"", "last step"});
  json bad_scheme = good;
  bad_scheme["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xe2\x96\x81"}, {"prepend_scheme", "sometimes"}};
  expect_error(dir.write("bad_scheme.json", bad_scheme.dump()),
               {"bad_scheme.json: pre_tokenizer.prepend_scheme = \"sometimes\"", "always, first or never"});
  json two_chars = good;
  two_chars["decoder"] = {{"type", "Strip"}, {"content", "ab"}, {"start", 1}, {"stop", 0}};
  expect_error(dir.write("two_chars.json", two_chars.dump()), {"two_chars.json: decoder.content", "one character"});
  json word_piece_decoder = good;
  word_piece_decoder["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}};
  expect_error(dir.write("wp_decoder.json", word_piece_decoder.dump()),
               {"wp_decoder.json: decoder.type = \"WordPiece\"", "not supported"});
  json bad_merge = good;
  bad_merge["model"]["merges"][3] = json::array({"no-such-token", "x"});
  expect_error(dir.write("bad_merge.json", bad_merge.dump()), {"bad_merge.json: model.merges[3]", "not in the vocabulary"});

  expect_error((dir.path / "missing.json").string(), {"missing.json", "no such file"});
  fs::create_directories(dir.path / "empty");
  expect_error((dir.path / "empty").string(), {"empty", "neither tokenizer.json nor vocab.json"});
  fs::create_directories(dir.path / "llama2");  // a folder with Llama-2's SentencePiece model only
  dir.write("llama2/tokenizer.model", "\x0a\x05<unk>");
  expect_error((dir.path / "llama2").string(), {"llama2/tokenizer.model", "SentencePiece", "save_pretrained"});
  expect_error((dir.path / "llama2" / "tokenizer.model").string(), {"llama2/tokenizer.model", "only its tokenizer.json"});
  fs::create_directories(dir.path / "half");
  fs::copy_file(kFixtures + "/vocab.json", dir.path / "half" / "vocab.json");
  expect_error((dir.path / "half" / "vocab.json").string(), {"half/merges.txt", "go together"});
  fs::create_directories(dir.path / "bad_line");
  fs::copy_file(kFixtures + "/vocab.json", dir.path / "bad_line" / "vocab.json");
  std::ofstream(dir.path / "bad_line" / "merges.txt") << "#version: 0.2\nh e\nthree token line\n";
  expect_error((dir.path / "bad_line").string(), {"bad_line/merges.txt: line 3 = three token line"});

  EXPECT_EQ(load_error(kFixtures + "/tokenizer.json"), "");  // and the good file loads
}

}  // namespace
}  // namespace zt
