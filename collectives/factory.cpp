// make_communicator and the version line for `zerotrain env`.
#include "collectives/factory.h"

#include <stdexcept>
#include <string>

#include "collectives/host_staged_communicator.h"
#include "collectives/single_communicator.h"
#if ZT_HAVE_MPI
#include "collectives/mpi_communicator.h"
#endif
#if ZT_HAVE_CUDA
#include "collectives/nccl_communicator.h"
#endif

namespace zt {

std::unique_ptr<Communicator> make_communicator(const Bootstrap& boot, CommBackend backend, CommOptions options,
                                                Backend* memory) {
  if (backend == CommBackend::Auto) backend = boot.world_size() > 1 ? CommBackend::Mpi : CommBackend::Single;
  switch (backend) {
    case CommBackend::Single:
      if (boot.world_size() != 1) {
        throw std::invalid_argument("the single communicator needs world size 1, but this job has " +
                                    std::to_string(boot.world_size()) + " ranks; use the MPI or NCCL communicator");
      }
      return std::make_unique<SingleCommunicator>();
    case CommBackend::Mpi:
#if ZT_HAVE_MPI
      return std::make_unique<MpiCommunicator>(boot, options);
#else
      throw std::invalid_argument("the MPI communicator is not built in (configured with ZT_MPI=OFF); "
                                  "reconfigure with -DZT_MPI=ON or run with world size 1");
#endif
    case CommBackend::Nccl:
#if ZT_HAVE_CUDA
      return std::make_unique<NcclCommunicator>(boot, options);
#else
      throw std::invalid_argument("the NCCL communicator is not built in (configured with ZT_CUDA=OFF); "
                                  "reconfigure with -DZT_CUDA=ON on a machine with the CUDA toolkit and NCCL");
#endif
    case CommBackend::MpiHostStaged: {
      if (!memory)
        throw std::invalid_argument("make_communicator: the host-staged MPI communicator needs the backend whose "
                                    "memory it copies");
      offload::PinnedAllocatorOptions pin;
      pin.pin_memory = memory->name() != "cpu";  // a CPU backend's memory is host memory already
      return std::make_unique<HostStagedCommunicator>(make_communicator(boot, CommBackend::Mpi, options), *memory,
                                                      std::move(pin), options.buffer_bytes);
    }
    case CommBackend::Auto:
      break;
  }
  throw std::invalid_argument("make_communicator: unknown backend");
}

std::string collectives_versions() {
  std::string s = "MPI: " + Bootstrap::mpi_library_version();
#if ZT_HAVE_CUDA
  s += "; NCCL: " + nccl_version_string();
#else
  s += "; NCCL: not built (ZT_CUDA=OFF)";
#endif
  return s;
}

}  // namespace zt
