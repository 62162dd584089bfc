// Thread control of the CPU backend: one call sets the OpenMP team size and OpenBLAS's thread
// count together. Results of every CPU op are identical for any thread count (tests pin this).
#pragma once

namespace zt {

// Sets the threads used by CPU ops (OpenMP) and by OpenBLAS GEMMs. n <= 0 means "OpenMP's default".
void set_cpu_threads(int n);
// Threads the CPU ops currently use.
int cpu_threads();

}  // namespace zt
