// safetensors: the writer's bytes (against the reference implementation's published example), a
// round trip of several dtypes, and one test per kind of damaged header the reader must refuse.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/safetensors.h"
#include "tests/checkpoint/ckpt_test_util.h"

namespace zt::ckpt {
namespace {

using test::TempDir;

std::string write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string file_bytes(const std::string& path) { return read_small_file(path); }

// A hand-made file: 8-byte length, header text, data.
std::string make_file(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return s + header + data;
}

// Opens, expecting failure; returns every message joined.
std::string open_errors(const std::string& path) {
  Diagnostics d;
  auto f = SafetensorsFile::open(path, d, "the fix");
  EXPECT_EQ(f, nullptr);
  EXPECT_TRUE(d.has_errors());
  return d.format();
}

TEST(Safetensors, WriterMatchesTheReferenceExample) {
  // The reference implementation's serialization test: one F32 tensor "attn.0" of shape [1, 2, 3]
  // holding 0..5 serializes to a 64-byte header and then the 24 data bytes.
  TempDir dir;
  const std::string path = dir.sub("a.safetensors");
  {
    FileWriter out(path);
    StTensor t;
    t.name = "attn.0";
    t.shape = {1, 2, 3};
    SafetensorsWriter w(out, {t}, {});
    const float v[6] = {0, 1, 2, 3, 4, 5};
    w.append(v, sizeof v);
    w.finish();
    out.close();
  }
  const std::string bytes = file_bytes(path);
  const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(bytes.size(), 8 + 64 + 24u);
  EXPECT_EQ(uint8_t(bytes[0]), 64);
  EXPECT_EQ(bytes.substr(8, 64), header);
  float back[6];
  std::memcpy(back, bytes.data() + 72, 24);
  EXPECT_EQ(back[5], 5.f);
}

TEST(Safetensors, RoundTripOfSeveralDtypesWithMetadata) {
  TempDir dir;
  const std::string path = dir.sub("b.safetensors");
  std::vector<float> f32(15);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = float(i) * 0.5f - 3.f;
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x0000};
  std::vector<int64_t> i64 = {-1, 1ll << 40};
  uint64_t file_hash = 0;
  int64_t file_size = 0;
  {
    FileWriter out(path);
    std::vector<StTensor> ts(3);
    ts[0] = {"w", StDType::F32, {3, 5}};
    ts[1] = {"h", StDType::BF16, {3}};
    ts[2] = {"ids", StDType::I64, {2}};
    SafetensorsWriter w(out, ts, {{"format", "pt"}, {"note", "x y"}});
    w.append(f32.data(), f32.size() * 4);
    w.append(bf16.data(), bf16.size() * 2);
    w.append(i64.data(), i64.size() * 8);
    w.finish();
    EXPECT_EQ(w.header_bytes() % 8, 0) << "the data area starts 8-byte aligned";
    file_hash = w.data_checksum();
    file_size = w.file_bytes();
    out.close();
  }
  const std::string bytes = file_bytes(path);
  EXPECT_EQ(int64_t(bytes.size()), file_size);
  EXPECT_EQ(xxh3(bytes.data() + 8 + (uint8_t(bytes[0]) | uint8_t(bytes[1]) << 8), bytes.size() - 8 - (uint8_t(bytes[0]) | uint8_t(bytes[1]) << 8)), file_hash);
  Diagnostics d;
  auto f = SafetensorsFile::open(path, d, "");
  ASSERT_TRUE(f) << d.format();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("note"), "x y");
  ASSERT_EQ(f->tensors().size(), 3u);
  const StTensor* w = f->find("w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{3, 5}));
  std::vector<float> back(15);
  f->read(*w, 0, 60, back.data());
  EXPECT_EQ(back, f32);
  float two[2];
  f->read(*w, 4 * 7, 8, two);  // elements 7 and 8 only
  EXPECT_EQ(two[0], f32[7]);
  EXPECT_EQ(two[1], f32[8]);
  const StTensor* ids = f->find("ids");
  int64_t id[2];
  f->read(*ids, 0, 16, id);
  EXPECT_EQ(id[1], 1ll << 40);
  EXPECT_THROW(f->read(*w, 56, 8, two), std::out_of_range);
  EXPECT_EQ(f->bytes_read(), uint64_t(f->data_start()) + 60 + 8 + 16);
}

TEST(Safetensors, RefusesAFileTooShortForTheLength) {
  TempDir dir;
  const std::string e = open_errors(write_bytes(dir.sub("x"), "abc"));
  EXPECT_NE(e.find("(byte 0)"), std::string::npos) << e;
  EXPECT_NE(e.find("too short"), std::string::npos) << e;
  EXPECT_NE(e.find("the fix"), std::string::npos) << e;
}

TEST(Safetensors, RefusesAHeaderLengthPastTheEnd) {
  TempDir dir;
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string f = make_file(header, "1234");
  f.resize(30);  // cut inside the header
  const std::string e = open_errors(write_bytes(dir.sub("x"), f));
  EXPECT_NE(e.find("header length " + std::to_string(header.size())), std::string::npos) << e;
  EXPECT_NE(e.find("has 22 bytes after the length field"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(Safetensors, RefusesAHugeHeaderLength) {
  TempDir dir;
  std::string f(16, '\0');
  f[7] = 1;  // 2^56
  const std::string e = open_errors(write_bytes(dir.sub("x"), f));
  EXPECT_NE(e.find("100 MB"), std::string::npos) << e;
}

TEST(Safetensors, RefusesInvalidJsonWithItsOffset) {
  TempDir dir;
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(R"({"a": [1, 2,,]})", "")));
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  EXPECT_NE(e.find("(byte 20)"), std::string::npos) << e;  // 8 + the offset of the second comma
}

TEST(Safetensors, RefusesAnUnknownDtype) {
  TempDir dir;
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "1234")));
  EXPECT_NE(e.find("header key \"a.dtype\""), std::string::npos) << e;
  EXPECT_NE(e.find("unknown dtype"), std::string::npos) << e;
}

TEST(Safetensors, RefusesOffsetsThatDisagreeWithTheShape) {
  TempDir dir;
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "1234")));
  EXPECT_NE(e.find("a.data_offsets"), std::string::npos) << e;
  EXPECT_NE(e.find("needs 8"), std::string::npos) << e;
}

TEST(Safetensors, RefusesOverlappingTensors) {
  TempDir dir;
  const std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(h, std::string(12, 'x'))));
  EXPECT_NE(e.find("overlaps \"a\""), std::string::npos) << e;
}

TEST(Safetensors, RefusesAGapInTheDataArea) {
  TempDir dir;
  const std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(h, std::string(12, 'x'))));
  EXPECT_NE(e.find("bytes [4, 8) of the data area belong to no tensor"), std::string::npos) << e;
}

TEST(Safetensors, RefusesATruncatedDataArea) {
  TempDir dir;
  const std::string h = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(h, std::string(10, 'x'))));
  EXPECT_NE(e.find("6 bytes past the end of the file"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(Safetensors, RefusesTrailingBytes) {
  TempDir dir;
  const std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(h, std::string(9, 'x'))));
  EXPECT_NE(e.find("trailing bytes"), std::string::npos) << e;
}

TEST(Safetensors, RefusesDuplicateKeysAndNonStringMetadata) {
  TempDir dir;
  const std::string h =
      R"({"__metadata__":{"n":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const std::string e = open_errors(write_bytes(dir.sub("x"), make_file(h, "1234")));
  EXPECT_NE(e.find("header key \"a\""), std::string::npos) << e;
  EXPECT_NE(e.find("more than once"), std::string::npos) << e;
  EXPECT_NE(e.find("metadata values must be strings"), std::string::npos) << e;
}

TEST(Safetensors, MissingFileIsADiagnostic) {
  TempDir dir;
  const std::string e = open_errors(dir.sub("nope.safetensors"));
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
}

}  // namespace
}  // namespace zt::ckpt
