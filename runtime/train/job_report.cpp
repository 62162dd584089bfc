// JobReport: lines gathered as text, merged by exact equality, printed by rank 0.
#include "runtime/train/job_report.h"

#include <map>
#include <new>
#include <sstream>
#include <utility>

#include "base/check.h"
#include "collectives/rank_list.h"
#include "runtime/common/diagnostics.h"
#include "runtime/config/report.h"
#include "collectives/rank_exchange.h"

namespace zt {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

std::string merge_rank_texts(const std::vector<std::string>& per_rank) {
  const int W = int(per_rank.size());
  // Each rank's lines with their occurrence number, so a line a rank holds twice stays twice.
  using Key = std::pair<std::string, int>;
  std::map<Key, std::vector<int>> holders;
  std::vector<Key> order;
  for (int r = 0; r < W; ++r) {
    std::map<std::string, int> seen;
    for (const auto& line : lines_of(per_rank[size_t(r)])) {
      const Key k{line, seen[line]++};
      auto& h = holders[k];
      if (h.empty()) order.push_back(k);
      h.push_back(r);
    }
  }
  std::string out;
  for (const auto& k : order) {
    const auto& h = holders[k];
    if (int(h.size()) != W) out += rank_list(h) + ": ";
    out += k.first + "\n";
  }
  return out;
}

void print_once(Communicator& comm, Backend& backend, const std::string& mine, std::FILE* to) {
  RankExchange x(comm, &backend);
  const std::vector<std::string> all = x.all_gather(mine);
  if (comm.rank() == 0) write_all(to, merge_rank_texts(all));
}

FailureText describe_failure(const std::exception_ptr& failure, const std::string& stopped) {
  if (!failure) return {};
  try {
    std::rethrow_exception(failure);
  } catch (const ReportedError& e) {
    return {"", e.exit_code()};
  } catch (const UserError& e) {
    return {format_report(e.diagnostics()) + "zerotrain: " + std::to_string(e.diagnostics().error_count()) +
                " error(s); " + stopped + ".\n",
            kUserErrorExit};
  } catch (const std::bad_alloc&) {
    return {"zerotrain: out of memory: an allocation failed; lower train_micro_batch_size_per_gpu, use a higher ZeRO "
            "stage or offload (`zerotrain check` plans the memory; `zerotrain tune` finds what fits)\n",
            kOutOfMemoryExit};
  } catch (const std::exception& e) {
    return {std::string("zerotrain: fatal: ") + e.what() + "\n", 1};
  } catch (...) {
    return {"zerotrain: fatal: an unknown exception\n", 1};
  }
}

void report_failure_once(Communicator& comm, Backend& backend, const std::exception_ptr& mine,
                         const std::string& stopped) {
  const FailureText f = describe_failure(mine, stopped);
  RankExchange x(comm, &backend);
  const std::vector<std::string> all = x.all_gather(f.text);
  const std::vector<int64_t> codes = x.all_gather_words({int64_t(f.exit_code)});
  if (comm.rank() == 0) {
    write_all(stderr, merge_rank_texts(all));
    std::fflush(stderr);
  }
  for (int64_t c : codes)
    if (c != 0) throw ReportedError(int(c));
  throw ReportedError(1);  // unreachable when the ranks agreed that one failed
}

}  // namespace zt
