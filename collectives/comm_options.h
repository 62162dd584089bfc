// CommOptions: settings shared by every Communicator implementation (watchdog timeout, debug mode)
// and how they are read from the environment (ZT_COMM_TIMEOUT_S, ZT_COMM_DEBUG).
#pragma once

namespace zt {

struct CommOptions {
  // A collective that has not completed this many seconds after it started aborts the whole job
  // with a message naming the op, its element count, its sequence number and the rank.
  double timeout_s = 300.0;
  // Before every call, all ranks exchange a fingerprint (op, count, dtype, reduction/root, sequence
  // number) and abort with a message naming both calls when they differ. Costs one small allgather.
  bool debug = false;

  // Defaults overridden by ZT_COMM_TIMEOUT_S (seconds, > 0) and ZT_COMM_DEBUG (1/0). A malformed
  // value throws std::invalid_argument naming the variable, the value and what is accepted.
  static CommOptions from_env();
};

}  // namespace zt
