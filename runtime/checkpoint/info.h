// `zerotrain checkpoint info`: a checkpoint's manifest in words (run, step, sizes per category,
// what it can be loaded as) and a verification of every rank file against the manifest's checksums.
#pragma once

#include <string>

#include "runtime/common/diagnostics.h"

namespace zt::ckpt {

struct InfoReport {
  std::string text;      // the report, one fact per line
  Diagnostics problems;  // every check that failed (missing, truncated, checksum mismatch)
};

// `path`: a save directory (its `latest` tag, plus the list of tags) or a tag directory.
// Throws UserError when there is no manifest to describe.
InfoReport checkpoint_info(const std::string& path, const std::string& tag, bool verify);

}  // namespace zt::ckpt
