// make_communicator: picks and builds the Communicator for this process (single, MPI or NCCL)
// from the bootstrap, so callers never name an implementation they may not have been built with.
#pragma once

#include <memory>

#include "collectives/bootstrap.h"
#include "collectives/comm_options.h"
#include "collectives/communicator.h"
#include "kernels/backend.h"

namespace zt {

enum class CommBackend {
  Auto,    // MPI when the world has more than one rank, else single
  Single,  // world size 1 only
  Mpi,     // host buffers; needs an MPI build launched by mpirun
  Nccl,    // device buffers; needs a CUDA build and a GPU (device chosen by local rank)
  MpiHostStaged,  // backend buffers through pinned host memory and MPI: several ranks on one GPU
};

// Throws std::invalid_argument when the backend is not built in or does not fit the world
// (e.g. Single with world size > 1); the message names the backend and what to do instead.
// MpiHostStaged needs `memory`, the Backend whose buffers the caller will pass (see
// host_staged_communicator.h); the other choices ignore it.
std::unique_ptr<Communicator> make_communicator(const Bootstrap& boot, CommBackend backend,
                                                CommOptions options = CommOptions::from_env(),
                                                Backend* memory = nullptr);

// "MPI: Open MPI v4.1.4 ... / NCCL: 2.28.9 (built) / ..." for `zerotrain env`.
std::string collectives_versions();

}  // namespace zt
