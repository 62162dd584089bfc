// The deterministic reduction behind every MPI all-reduce / reduce-scatter: W contributions summed
// element-wise in rank order 0..W-1 in fp32 (int64 for i64), AVG divides by W, 16-bit rounds once.
#pragma once

#include <cstddef>

#include "collectives/communicator.h"

namespace zt {

// rows: world_size contiguous rows of n elements each (row r = rank r's contribution).
// out[i] = fold(rows[0][i], rows[1][i], ..., rows[W-1][i]) with
//   f32:       acc = row0; acc = acc + row_r (fp32, in rank order); Avg: acc / float(W)
//   bf16/f16:  same in fp32 on the widened values, then one round-to-nearest-even to 16 bits
//   i64:       two's-complement sum (Avg rejected earlier)
// out may alias any row (it is written after each element's fold).
void reduce_rank_order(const void* rows, size_t n, int world_size, DType t, ReduceOp op, void* out);

// The same fold over `count` rows, divided by `divisor` when it is not 0 (a two-level reduction
// averages over every rank of the group, more than the rows of either level), rounded to 16 bits
// once at the end as above: a node's partial sum before it crosses is rounded there too.
void reduce_rows(const void* rows, size_t n, int count, DType t, int divisor, void* out);

// The same over `count` rows anywhere in memory (rows[r] is contribution r), so a rank's own row
// can be read where it lies instead of being copied next to the others first.
void reduce_row_list(const void* const* rows, size_t n, int count, DType t, int divisor, void* out);

}  // namespace zt
