// safetensors writer and validating reader.
#include "runtime/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace zt::ckpt {

namespace {

struct DTypeInfo {
  StDType t;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {StDType::BOOL, "BOOL", 1},      {StDType::U8, "U8", 1},   {StDType::I8, "I8", 1},
    {StDType::F8_E5M2, "F8_E5M2", 1}, {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::I16, "I16", 2},
    {StDType::U16, "U16", 2},        {StDType::F16, "F16", 2}, {StDType::BF16, "BF16", 2},
    {StDType::I32, "I32", 4},        {StDType::U32, "U32", 4}, {StDType::F32, "F32", 4},
    {StDType::F64, "F64", 8},        {StDType::I64, "I64", 8}, {StDType::U64, "U64", 8},
};

std::string at_byte(const std::string& file, int64_t offset) { return file + " (byte " + std::to_string(offset) + ")"; }
std::string at_key(const std::string& file, const std::string& key) { return file + " (header key \"" + key + "\")"; }

void put_u64le(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = char((v >> (8 * i)) & 0xff);
}
uint64_t get_u64le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Non-negative integer fitting int64, or nullopt.
std::optional<int64_t> as_count(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return int64_t(u);
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return std::nullopt;
}

}  // namespace

size_t st_dtype_size(StDType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.size;
  return 0;
}

const char* st_dtype_name(StDType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.name;
  return "?";
}

std::optional<StDType> parse_st_dtype(const std::string& s) {
  for (const auto& d : kDTypes)
    if (s == d.name) return d.t;
  return std::nullopt;
}

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// --- writer -------------------------------------------------------------------------------------

SafetensorsWriter::SafetensorsWriter(FileWriter& out, std::vector<StTensor> tensors, const StMetadata& metadata,
                                     int64_t data_alignment)
    : out_(out), tensors_(std::move(tensors)), alignment_(data_alignment) {
  if (alignment_ < 8 || alignment_ % 8 != 0) throw std::invalid_argument("safetensors: data alignment must be a multiple of 8");
  std::set<std::string> names;
  for (auto& t : tensors_) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw std::invalid_argument("safetensors: duplicate or reserved tensor name '" + t.name + "'");
    t.begin = data_bytes_;
    t.end = data_bytes_ + t.numel() * int64_t(st_dtype_size(t.dtype));
    data_bytes_ = t.end;
  }
  const std::string h = header(metadata);
  header_bytes_ = int64_t(h.size());
  header_checksum_ = xxh3(h.data(), h.size());
  out_.write(h.data(), h.size());
}

std::string SafetensorsWriter::header(const StMetadata& metadata) const {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  for (const auto& t : tensors_)
    h[t.name] = {{"dtype", st_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  std::string json = h.dump();
  // The data area starts 8-byte aligned, as the reference writer does, or at the alignment asked for.
  const size_t a = size_t(alignment_);
  json.append((a - (8 + json.size()) % a) % a, ' ');
  std::string out(8, '\0');
  put_u64le(out.data(), json.size());
  return out + json;
}

void SafetensorsWriter::rewrite_header(const StMetadata& metadata) {
  const std::string h = header(metadata);
  if (int64_t(h.size()) != header_bytes_)
    throw std::logic_error("safetensors: the rewritten header of " + out_.path() + " changed size");
  out_.pwrite(h.data(), h.size(), 0);
  header_checksum_ = xxh3(h.data(), h.size());
}

void SafetensorsWriter::append(const void* data, size_t bytes) {
  if (written_ + int64_t(bytes) > data_bytes_)
    throw std::logic_error("safetensors: more data appended than the header declares (" + out_.path() + ")");
  // Hash and write in pieces that stay in cache between the two passes.
  constexpr size_t kPiece = size_t(4) << 20;
  const char* p = static_cast<const char*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kPiece, bytes - done);
    hash_.update(p + done, n);
    out_.write(p + done, n);
    done += n;
  }
  written_ += int64_t(bytes);
}

void SafetensorsWriter::account(const void* data, size_t bytes) {
  if (written_ + int64_t(bytes) > data_bytes_)
    throw std::logic_error("safetensors: more data counted than the header declares (" + out_.path() + ")");
  hash_.update(data, bytes);
  written_ += int64_t(bytes);
}

void SafetensorsWriter::finish() {
  if (written_ != data_bytes_)
    throw std::logic_error("safetensors: " + std::to_string(written_) + " data bytes appended, header declares " +
                           std::to_string(data_bytes_) + " (" + out_.path() + ")");
}

// --- reader -------------------------------------------------------------------------------------

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path, Diagnostics& diags, const std::string& fix) {
  std::unique_ptr<SafetensorsFile> f;
  try {
    f.reset(new SafetensorsFile(FileReader(path)));
  } catch (const IoError& e) {
    diags.error(path, "", e.err() == ENOENT ? "the file does not exist" : e.what(), fix);
    return nullptr;
  }
  const size_t before = diags.error_count();
  auto bad = [&](std::string where, std::string value, std::string message) {
    diags.error(std::move(where), std::move(value), std::move(message), fix);
  };
  const int64_t size = f->file_.size();
  if (size < 8) {
    bad(at_byte(path, 0), std::to_string(size) + " bytes",
        "too short for a safetensors file (expected at least the 8-byte header length)");
    return nullptr;
  }
  unsigned char len8[8];
  f->file_.pread(len8, 8, 0);
  const uint64_t n = get_u64le(len8);
  if (n > kMaxSafetensorsHeader) {
    bad(at_byte(path, 0), "header length " + std::to_string(n),
        "larger than the 100 MB a safetensors header may have: the file is damaged or not safetensors");
    return nullptr;
  }
  if (n < 2 || int64_t(n) > size - 8) {
    bad(at_byte(path, 0), "header length " + std::to_string(n),
        "the file has " + std::to_string(size - 8) + " bytes after the length field (expected a JSON header of " +
            std::to_string(n) + " bytes" + (int64_t(n) > size - 8 ? ": the file is truncated)" : ")"));
    return nullptr;
  }
  std::string text(n, '\0');
  f->file_.pread(text.data(), n, 8);
  std::string prefix(8, '\0');
  std::memcpy(prefix.data(), len8, 8);
  f->header_checksum_ = xxh3((prefix + text).data(), 8 + n);
  f->data_start_ = 8 + int64_t(n);
  if (text[0] != '{') {
    bad(at_byte(path, 8), "", "the header does not start with '{' (expected a JSON object)");
    return nullptr;
  }
  nlohmann::json h;
  std::set<std::string> keys;
  std::vector<std::string> duplicates;
  try {
    h = nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
      if (depth == 1 && ev == nlohmann::json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second)
        duplicates.push_back(parsed.get<std::string>());
      return true;
    });
  } catch (const nlohmann::json::parse_error& e) {
    bad(at_byte(path, 8 + int64_t(e.byte) - 1), "", std::string("the header is not valid JSON: ") + e.what());
    return nullptr;
  }
  for (const auto& k : duplicates) bad(at_key(path, k), "", "the header names this key more than once");
  if (!h.is_object()) {
    bad(at_byte(path, 8), "", "the header is not a JSON object");
    return nullptr;
  }
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) {
        bad(at_key(path, key), "", "must be an object of string values");
        continue;
      }
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (m.value().is_string()) f->metadata_[m.key()] = m.value().get<std::string>();
        else bad(at_key(path, "__metadata__." + m.key()), m.value().dump(), "metadata values must be strings");
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
      bad(at_key(path, key), v.dump().substr(0, 80), "expected {\"dtype\", \"shape\", \"data_offsets\"}");
      continue;
    }
    StTensor t;
    t.name = key;
    const auto dt = v["dtype"].is_string() ? parse_st_dtype(v["dtype"].get<std::string>()) : std::nullopt;
    if (!dt) {
      bad(at_key(path, key + ".dtype"), v["dtype"].dump(),
          "unknown dtype (expected one of BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E5M2, F8_E4M3)");
      continue;
    }
    t.dtype = *dt;
    bool ok = v["shape"].is_array();
    if (ok)
      for (const auto& d : v["shape"]) {
        const auto c = as_count(d);
        ok = ok && c.has_value();
        if (c) t.shape.push_back(*c);
      }
    if (!ok) {
      bad(at_key(path, key + ".shape"), v["shape"].dump(), "expected an array of non-negative integers");
      continue;
    }
    const auto& off = v["data_offsets"];
    const bool pair = off.is_array() && off.size() == 2;
    const int64_t b = pair ? as_count(off[0]).value_or(-1) : -1;
    const int64_t e = pair ? as_count(off[1]).value_or(-1) : -1;
    if (b < 0 || e < b) {
      bad(at_key(path, key + ".data_offsets"), off.dump(), "expected [begin, end] with 0 <= begin <= end");
      continue;
    }
    t.begin = b;
    t.end = e;
    // numel * element size, with overflow checks.
    __int128 bytes = __int128(st_dtype_size(t.dtype));
    for (auto d : t.shape) {
      bytes *= d;
      if (bytes > __int128(std::numeric_limits<int64_t>::max())) break;
    }
    if (bytes != __int128(t.bytes())) {
      std::string shape = v["shape"].dump();
      bad(at_key(path, key + ".data_offsets"), off.dump(),
          "spans " + std::to_string(t.bytes()) + " bytes, but " + st_dtype_name(t.dtype) + " " + shape + " needs " +
              (bytes > __int128(std::numeric_limits<int64_t>::max()) ? std::string("more than 2^63")
                                                                      : std::to_string(int64_t(bytes))));
      continue;
    }
    f->tensors_.push_back(std::move(t));
  }
  auto& ts = f->tensors_;
  std::sort(ts.begin(), ts.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const int64_t data_size = size - f->data_start_;
  int64_t covered = 0;
  std::string last = "";
  for (const auto& t : ts) {
    if (t.begin < covered)
      bad(at_key(path, t.name), "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]",
          "overlaps \"" + last + "\", which ends at data offset " + std::to_string(covered));
    else if (t.begin > covered && t.bytes() > 0)
      bad(at_byte(path, f->data_start_ + covered), "", "bytes [" + std::to_string(covered) + ", " +
                                                            std::to_string(t.begin) + ") of the data area belong to no tensor");
    if (t.end > data_size)
      bad(at_byte(path, f->data_start_ + t.end), "tensor \"" + t.name + "\"",
          "ends " + std::to_string(t.end - data_size) + " bytes past the end of the file (" + std::to_string(size) +
              " bytes): the file is truncated");
    if (t.end > covered) {
      covered = t.end;
      last = t.name;
    }
  }
  if (covered < data_size && diags.error_count() == before)
    bad(at_byte(path, f->data_start_ + covered), std::to_string(data_size - covered) + " bytes",
        "trailing bytes after the last tensor (expected the file to end at byte " + std::to_string(f->data_start_ + covered) + ")");
  if (diags.error_count() != before) return nullptr;
  for (size_t i = 0; i < ts.size(); ++i) f->index_[ts[i].name] = i;
  return f;
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::read(const StTensor& t, int64_t offset, size_t bytes, void* out) const {
  if (offset < 0 || offset + int64_t(bytes) > t.bytes())
    throw std::out_of_range("safetensors: read of [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                            ") outside tensor '" + t.name + "' (" + std::to_string(t.bytes()) + " bytes) in " + path());
  if (bytes > 0) file_.pread(out, bytes, data_start_ + t.begin + offset);
}

}  // namespace zt::ckpt
