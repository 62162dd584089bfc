// Bootstrap: starts MPI (when built with it and launched by mpirun) and tells each process its rank,
// world size, local rank/size on its node and the node count; finalizes MPI when destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace zt {

class Bootstrap {
 public:
  // Calls MPI_Init_thread requesting MPI_THREAD_MULTIPLE when this build has MPI and the process was
  // started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK or PMI_SIZE set) or
  // ZT_MPI_SINGLETON=1; otherwise the process is rank 0 of a world of 1 and MPI is not touched.
  // MULTIPLE is required (the watchdog aborts from a second thread while the communication thread is
  // blocked inside MPI): if the library offers less, the job aborts with a message saying so.
  // If MPI was already initialized by the caller, it is used and not finalized here.
  Bootstrap(int* argc = nullptr, char*** argv = nullptr);
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }  // rank among the processes sharing this node's memory
  int local_size() const { return local_size_; }
  int node_count() const { return node_count_; }
  // Whether every host's ranks are consecutive world ranks (mpirun's default placement, --map-by
  // slot), as the node topology's node = rank / n assumes; round-robin (--map-by node) is not.
  bool hosts_hold_consecutive_ranks() const { return consecutive_; }
  bool mpi_active() const { return mpi_active_; }  // MPI is initialized and usable
  int mpi_thread_level() const { return thread_level_; }

  // Copies n bytes from root's buffer to every rank's (MPI_Bcast on COMM_WORLD; no-op at world 1).
  void broadcast_bytes(void* data, size_t n, int root) const;
  // Aborts the whole job with exit code `code` (MPI_Abort; std::_Exit(code) without MPI).
  [[noreturn]] void abort_job(int code) const;

  // This process's rank and the job's size as the launcher's environment tells them, before (or
  // without) MPI: 0 and 1 when no launcher started the process. Every rank of a job parses the same
  // command line, so a problem found there is printed by launcher rank 0 alone.
  static int launcher_rank();
  static int launcher_world_size();

  // The exit code for a process that stops, before MPI ever started in it, on a mistake launcher
  // rank 0 reports: rank 0 (and a world of 1) return `code` at once; another rank first waits for
  // the launcher to end the job (up to `linger_s`), because a launcher ends a job when its first
  // process fails, and a rank that failed first would end it before rank 0's report was out.
  static int stop_before_start(int code, double linger_s = 10.0);

  // Library names for `zerotrain env`: "Open MPI v4.1.4, ..." or "not built with MPI".
  static std::string mpi_library_version();

  // Communicators built on this bootstrap register here; destroying the bootstrap while one is
  // alive is a programming error reported before MPI is finalized.
  void attach() const { live_comms_.fetch_add(1); }
  void detach() const { live_comms_.fetch_sub(1); }

 private:
  int rank_ = 0, world_size_ = 1, local_rank_ = 0, local_size_ = 1, node_count_ = 1;
  bool consecutive_ = true;
  bool mpi_active_ = false;
  bool we_initialized_ = false;
  int thread_level_ = -1;
  mutable std::atomic<int> live_comms_{0};
};

}  // namespace zt
