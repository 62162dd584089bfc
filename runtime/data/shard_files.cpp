// find_shards_in and glob_shards over glob(3), whose results are sorted by name.
#include "runtime/data/shard_files.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "runtime/common/diagnostics.h"

namespace zt {

namespace {

std::vector<std::string> glob_all(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), GLOB_ERR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      if (std::filesystem::is_regular_file(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

// glob(3) patterns treat these as syntax: a folder name holding them is matched literally.
std::string escaped(const std::string& s) {
  std::string e;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') e += '\\';
    e += c;
  }
  return e;
}

}  // namespace

std::vector<std::string> glob_shards(const std::string& pattern, const std::string& flag) {
  auto files = glob_all(pattern);
  if (files.empty())
    throw UserError(flag, pattern, "the pattern matches no file",
                    "check the folder and the pattern (quote it so the shell does not expand it), e.g. '" + flag +
                        " \"data/*_train_*.bin\"'");
  return files;
}

ShardFiles find_shards_in(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UserError("--data", dir, ec ? "cannot read the folder: " + ec.message() : "not a folder",
                    "give the folder scripts/prepare_data.py or `zerotrain prepare` wrote");
  ShardFiles f;
  const std::string base = escaped(dir) + "/";
  f.train_pattern = dir + "/*train*.bin";
  f.val_pattern = dir + "/*val*.bin";
  f.train = glob_all(base + "*train*.bin");
  f.val = glob_all(base + "*val*.bin");
  for (const auto& t : f.train)
    if (std::find(f.val.begin(), f.val.end(), t) != f.val.end())
      throw UserError(t, "", "the shard's name matches both *train*.bin and *val*.bin",
                      "rename it so that it names one split, or use --data-train GLOB --data-val GLOB");
  Diagnostics d;
  if (f.train.empty())
    d.error("--data", dir, "no train shard (*train*.bin) in the folder",
            "make shards with scripts/prepare_data.py --out " + dir + " or `zerotrain prepare --out " + dir + "`");
  if (f.val.empty())
    d.error("--data", dir, "no validation shard (*val*.bin) in the folder",
            "make shards with scripts/prepare_data.py (it writes a validation split), or pass --data-train and --data-val");
  if (d.has_errors()) throw UserError(d);
  return f;
}

}  // namespace zt
