// Bootstrap implementation: MPI_Init_thread, MPI_Comm_split_type(SHARED) for the local rank and the
// node count, and the world-size-1 fallback when MPI is not built in or not launched.
#include "collectives/bootstrap.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <thread>

#if ZT_HAVE_MPI
#include <mpi.h>

#include "base/mpi_check.h"
#endif

namespace zt {
namespace {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  const char* s = std::getenv("ZT_MPI_SINGLETON");
  return s && std::string(s) == "1";
}

int env_int(std::initializer_list<const char*> vars, int fallback) {
  for (const char* v : vars)
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return fallback;
}

#if ZT_HAVE_MPI
const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}
#endif

}  // namespace

int Bootstrap::launcher_rank() { return env_int({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, 0); }

int Bootstrap::launcher_world_size() {
  return env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, launched_by_mpi() ? 0 : 1);
}

int Bootstrap::stop_before_start(int code, double linger_s) {
  if (code == 0 || launcher_world_size() <= 1 || launcher_rank() == 0) return code;
#if ZT_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return code;  // MPI's own shutdown orders the exits
#endif
  std::this_thread::sleep_for(std::chrono::duration<double>(linger_s));
  return code;
}

Bootstrap::Bootstrap(int* argc, char*** argv) {
#if ZT_HAVE_MPI
  int initialized = 0;
  ZT_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    if (!launched_by_mpi()) return;  // world of 1, MPI untouched
    ZT_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_));
    we_initialized_ = true;
  } else {
    ZT_MPI_CHECK(MPI_Query_thread(&thread_level_));
  }
  mpi_active_ = true;
  ZT_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  ZT_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size_));
  if (thread_level_ < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr,
                 "[rank %d] zerotrain: the MPI library provides %s but the communicator needs "
                 "MPI_THREAD_MULTIPLE (a watchdog thread must be able to abort the job while the "
                 "communication thread is blocked in MPI). Use an MPI built with thread support "
                 "(Open MPI >= 3 provides it by default).\n",
                 rank_, thread_level_name(thread_level_));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm local;
  ZT_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  ZT_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  ZT_MPI_CHECK(MPI_Comm_size(local, &local_size_));
  // This host's ranks are consecutive when they span exactly local_size world ranks.
  int lowest = 0, highest = 0;
  ZT_MPI_CHECK(MPI_Allreduce(&rank_, &lowest, 1, MPI_INT, MPI_MIN, local));
  ZT_MPI_CHECK(MPI_Allreduce(&rank_, &highest, 1, MPI_INT, MPI_MAX, local));
  ZT_MPI_CHECK(MPI_Comm_free(&local));
  int here = highest - lowest + 1 == local_size_ ? 1 : 0, job = 0;
  ZT_MPI_CHECK(MPI_Allreduce(&here, &job, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  consecutive_ = job == 1;
  int leader = local_rank_ == 0 ? 1 : 0;
  ZT_MPI_CHECK(MPI_Allreduce(&leader, &node_count_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
#else
  (void)argc;
  (void)argv;
  (void)launched_by_mpi;
#endif
}

Bootstrap::~Bootstrap() {
  if (live_comms_.load() != 0) {
    std::fprintf(stderr,
                 "[rank %d] zerotrain: Bootstrap destroyed while %d communicator(s) built on it are "
                 "alive; destroy communicators first (MPI cannot be finalized under them)\n",
                 rank_, live_comms_.load());
    abort_job(1);
  }
#if ZT_HAVE_MPI
  if (we_initialized_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
#endif
}

void Bootstrap::broadcast_bytes(void* data, size_t n, int root) const {
#if ZT_HAVE_MPI
  if (!mpi_active_ || world_size_ == 1) return;
  ZT_MPI_CHECK(MPI_Bcast(data, int(n), MPI_BYTE, root, MPI_COMM_WORLD), "Bootstrap::broadcast_bytes");
#else
  (void)data;
  (void)n;
  (void)root;
#endif
}

void Bootstrap::abort_job(int code) const {
#if ZT_HAVE_MPI
  if (mpi_active_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::fflush(stderr);
  std::_Exit(code);
}

std::string Bootstrap::mpi_library_version() {
#if ZT_HAVE_MPI
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, size_t(len));
  if (auto p = s.find_first_of("\r\n"); p != std::string::npos) s.resize(p);
  while (!s.empty() && (s.back() == ',' || s.back() == ' ')) s.pop_back();
  return s;
#else
  return "not built with MPI";
#endif
}

}  // namespace zt
