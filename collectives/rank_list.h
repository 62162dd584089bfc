// rank_list: a set of ranks in words for messages, with runs collapsed ("rank 3", "ranks 0, 1",
// "ranks 0-5, 7").
#pragma once

#include <string>
#include <vector>

namespace zt {

// `ranks` ascending.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace zt
