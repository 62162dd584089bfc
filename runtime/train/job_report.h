// JobReport: one copy of each message for the whole job. Every rank hands in the lines it would
// print; rank 0 prints each distinct line once — plain when every rank holds it, else prefixed with
// the ranks that do ("rank 3: ", "ranks 3, 5: ") — so a config problem prints the same number of lines
// at 1 or 8 ranks, and a problem of one rank still shows as that rank's.
#pragma once

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"

namespace zt {

// Pure: the merged text of every rank's text (rank r's at [r]), lines in the order ranks first hold
// them; a line held twice by one rank is kept twice.
std::string merge_rank_texts(const std::vector<std::string>& per_rank);

// Collective: gathers every rank's `mine` and rank 0 writes the merged text to `to` (nothing when
// every rank's is empty).
void print_once(Communicator& comm, Backend& backend, const std::string& mine, std::FILE* to);

// What a failed step of the run would print on its own (a user error's report and its count line
// "zerotrain: N error(s); <stopped>.", or "zerotrain: fatal: ...") and the exit code the CLI gives it
// (2 for user errors, 1 otherwise).
struct FailureText {
  std::string text;
  int exit_code = 0;
};
FailureText describe_failure(const std::exception_ptr& failure, const std::string& stopped = "stopped before training");

// Collective, after the ranks agreed that at least one failed: prints every rank's failure once
// (rank 0) and throws ReportedError on every rank with the lowest failing rank's exit code, so the
// job ends with one code. A rank with no failure of its own hands in nothing.
[[noreturn]] void report_failure_once(Communicator& comm, Backend& backend, const std::exception_ptr& mine,
                                     const std::string& stopped = "stopped before training");

}  // namespace zt
