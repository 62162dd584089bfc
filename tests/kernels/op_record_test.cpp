// Op records on the CPU backend: every op run inside an OpScope carries that scope's unit and pass,
// ops outside carry none, scopes nest and restore; a fused op gives its main op (with the time) and
// the fused part (FLOPs only) from op_flops.h's table; with no recorder attached nothing is
// recorded and no scope is counted; an op that throws records nothing and leaves the recorder usable.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/backend.h"
#include "kernels/op_record.h"

namespace zt {
namespace {

struct Buffers {
  explicit Buffers(Backend& b, size_t n) : b_(b) {
    for (auto** p : {&x, &y, &z}) {
      *p = b.alloc(n * sizeof(float));
      b.zero(*p, n * sizeof(float));
    }
  }
  ~Buffers() {
    for (void* p : {x, y, z}) b_.free(p);
  }
  Backend& b_;
  void *x = nullptr, *y = nullptr, *z = nullptr;
};

TEST(OpRecord, OpsCarryTheOpenScopeAndScopesNest) {
  auto backend = make_cpu_backend();
  const int N = 4, IC = 8, OC = 8;
  Buffers buf(*backend, size_t(N) * IC * 2);
  OpRecorder rec;
  backend->attach_op_recorder(&rec);
  backend->zero(buf.x, 16);  // outside every scope
  {
    const OpScope outer(*backend, 2, OpPass::Backward);
    backend->matmul_forward(buf.z, buf.x, buf.y, nullptr, N, IC, OC);
    {
      const OpScope inner(*backend, 3, OpPass::Forward);
      backend->gelu_forward(buf.z, buf.x, 32);
    }
    backend->accumulate(buf.z, buf.x, 32);  // back in the outer scope
  }
  backend->scale(buf.z, 0.5f, 32);
  backend->attach_op_recorder(nullptr);

  const auto& r = rec.records();
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].cost.kind, OpKind::Zero);
  EXPECT_EQ(r[0].unit, -1);
  EXPECT_EQ(r[0].scope, -1);
  EXPECT_EQ(r[1].cost.kind, OpKind::MatmulForward);
  EXPECT_EQ(r[1].unit, 2);
  EXPECT_EQ(r[1].pass, OpPass::Backward);
  EXPECT_EQ(r[1].scope, 0);
  EXPECT_DOUBLE_EQ(r[1].cost.flops, matmul_forward_flops(N, IC, OC, false));
  EXPECT_EQ(r[1].cost.params, int64_t(IC) * OC);
  EXPECT_EQ(r[1].cost.shape, "N=4 IC=8 OC=8");
  EXPECT_EQ(r[2].cost.kind, OpKind::GeluForward);
  EXPECT_EQ(r[2].unit, 3);
  EXPECT_EQ(r[2].pass, OpPass::Forward);
  EXPECT_EQ(r[2].scope, 1);
  EXPECT_DOUBLE_EQ(r[2].cost.flops, 32.0);
  EXPECT_EQ(r[3].cost.kind, OpKind::Accumulate);
  EXPECT_EQ(r[3].unit, 2);
  EXPECT_EQ(r[3].scope, 0);
  EXPECT_EQ(r[4].cost.kind, OpKind::Scale);
  EXPECT_EQ(r[4].unit, -1);
  ASSERT_EQ(rec.scopes().size(), 2u);
  EXPECT_EQ(rec.scopes()[0].unit, 2);
  EXPECT_EQ(rec.scopes()[0].pass, OpPass::Backward);
  EXPECT_EQ(rec.scopes()[1].unit, 3);
  for (const auto& x : r) EXPECT_GE(x.seconds, 0.0);

  rec.clear();
  EXPECT_TRUE(rec.records().empty());
  EXPECT_TRUE(rec.scopes().empty());
}

TEST(OpRecord, FusedOpGivesItsMainOpAndTheFusedPart) {
  auto backend = make_cpu_backend();
  const int N = 4, C = 8;
  Buffers buf(*backend, size_t(N) * C * 2);
  std::vector<float> mean(N), rstd(N);
  OpRecorder rec;
  backend->attach_op_recorder(&rec);
  backend->residual_layernorm_forward(buf.z, buf.y, mean.data(), rstd.data(), buf.x, buf.x, buf.x, buf.x, N, C);
  backend->attach_op_recorder(nullptr);
  const auto& r = rec.records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].cost.kind, OpKind::ResidualForward);
  EXPECT_TRUE(r[0].cost.fused);
  EXPECT_EQ(r[0].seconds, 0.0);
  EXPECT_DOUBLE_EQ(r[0].cost.flops, double(N) * C);
  EXPECT_EQ(r[1].cost.kind, OpKind::LayerNormForward);
  EXPECT_FALSE(r[1].cost.fused);
  EXPECT_DOUBLE_EQ(r[1].cost.flops, layernorm_forward_flops(N, C));
}

TEST(OpRecord, NothingIsRecordedWithoutARecorder) {
  auto backend = make_cpu_backend();
  Buffers buf(*backend, 64);
  OpRecorder rec;
  backend->attach_op_recorder(&rec);
  backend->zero(buf.x, 8);
  backend->attach_op_recorder(nullptr);
  ASSERT_EQ(backend->op_recorder(), nullptr);
  {
    const OpScope scope(*backend, 1, OpPass::Forward);
    backend->gelu_forward(buf.y, buf.x, 16);
    backend->zero(buf.x, 8);
  }
  EXPECT_EQ(rec.records().size(), 1u);
  EXPECT_TRUE(rec.scopes().empty());
}

TEST(OpRecord, AnOpThatThrowsRecordsNothingAndTheNextOneRecords) {
  auto backend = make_cpu_backend();
  Buffers buf(*backend, 64);
  OpRecorder rec;
  backend->attach_op_recorder(&rec);
  AdamWChunk chunk;
  chunk.master = static_cast<float*>(buf.x);
  chunk.grad = buf.y;
  chunk.n = 4;
  EXPECT_THROW(backend->adamw_multi_tensor(&chunk, 1, DType::BF16, AdamWHyper{}), std::invalid_argument);
  EXPECT_TRUE(rec.records().empty());
  EXPECT_FALSE(rec.in_op());
  backend->zero(buf.x, 8);
  backend->attach_op_recorder(nullptr);
  ASSERT_EQ(rec.records().size(), 1u);
  EXPECT_EQ(rec.records()[0].cost.kind, OpKind::Zero);
}

}  // namespace
}  // namespace zt
