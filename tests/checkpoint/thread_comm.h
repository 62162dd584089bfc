// In-process ranks for checkpoint tests: W threads, each with a Communicator whose all-gather,
// broadcast and barrier meet the others' through shared memory (host buffers), so that a save at
// world N and a load at world M run in one test process.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/communicator.h"

namespace zt::test {

using RankFn = std::function<void(int rank, Communicator& comm)>;

// Runs fn(rank, comm) on `world` threads and waits for all; returns each rank's exception (null
// when it returned). A rank that throws breaks the group: the others' collectives then throw too.
std::vector<std::exception_ptr> run_ranks_collect(int world, const RankFn& fn);
// The same, rethrowing the exception that was thrown first.
void run_ranks(int world, const RankFn& fn);

}  // namespace zt::test
