// Op records on the CPU backend: every op run inside an OpScope carries that scope's unit and pass,
// ops outside carry none, scopes nest and restore; a fused op gives its main op (with the time) and
// the fused part (FLOPs only) from op_flops.h's table; with no recorder attached nothing is
// recorded and no scope is counted; an op that throws records nothing and leaves the recorder usable;
// every recorded op of backend.h records itself on the CPU backend (a new op without its RecordedOp
// line fails here), and the ops that are not recorded leave no record.
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

TEST(OpRecord, EveryRecordedOpOfTheCpuBackendRecordsItself) {
  auto backend = make_cpu_backend();
  Backend& b = *backend;
  const int B = 1, T = 4, C = 8, NH = 2, N = B * T, V = 16, Vp = 16;
  std::vector<void*> bufs;
  const auto buf = [&] {
    bufs.push_back(b.alloc(4096 * sizeof(float)));
    b.zero(bufs.back(), 4096 * sizeof(float));
    return bufs.back();
  };
  void *out = buf(), *inp = buf(), *w = buf(), *bias = buf(), *dinp = buf(), *dw = buf(), *db = buf(), *pre = buf();
  void* saved = b.alloc(b.attention_saved_bytes(B, T, C, NH));
  std::vector<float> host(4096, 0.0f), mean(N), rstd(N), losses(N);
  std::vector<int32_t> tokens(N, 1);
  float* f = static_cast<float*>(w);
  AdamWChunk chunk{f, inp, static_cast<float*>(dw), static_cast<float*>(db), nullptr, 16};
  OpRecorder rec;
  b.attach_op_recorder(&rec);
  b.copy_to_device(out, host.data(), 64);
  b.copy_to_host(host.data(), out, 64);
  b.copy(out, inp, 64);
  b.zero(out, 64);
  b.f32_to_act(out, host.data(), 16);
  b.act_to_f32(host.data(), out, 16);
  b.embedding_forward(out, tokens.data(), w, bias, B, T, C);
  b.embedding_backward(dw, db, out, tokens.data(), B, T, C);
  b.layernorm_forward(out, mean.data(), rstd.data(), inp, w, bias, N, C);
  b.layernorm_backward(dinp, dw, db, out, inp, w, mean.data(), rstd.data(), N, C);
  b.matmul_forward(out, inp, w, bias, N, C, C);
  b.matmul_backward(dinp, dw, db, out, inp, w, N, C, C);
  b.attention_forward(out, saved, inp, B, T, C, NH);
  b.attention_backward(dinp, out, inp, saved, B, T, C, NH);
  b.gelu_forward(out, inp, 16);
  b.gelu_backward(dinp, inp, out, 16);
  b.residual_forward(out, inp, w, 16);
  b.accumulate(out, inp, 16);
  b.crossentropy_forward_backward(losses.data(), pre, out, tokens.data(), N, V, Vp, 1.0f);
  b.adamw_step(f, static_cast<const float*>(inp), static_cast<float*>(dw), static_cast<float*>(db), 16, AdamWHyper{});
  (void)b.sum_squares(inp, 16, 1.0f);
  b.scale(out, 0.5f, 16);
  b.adamw_multi_tensor(&chunk, 1, DType::F32, AdamWHyper{});
  b.matmul_bias_gelu_forward(out, pre, inp, w, bias, N, C, C);
  b.matmul_backward_gelu(dinp, dw, db, out, inp, pre, w, N, C, C);
  b.residual_layernorm_forward(out, pre, mean.data(), rstd.data(), inp, w, w, bias, N, C);
  b.lm_head_forward(out, inp, w, N, C, V, Vp);
  b.lm_head_backward(dinp, dw, out, inp, w, N, C, V, Vp);
  // Not recorded: generation's decode, the asynchronous copies and their waits.
  b.attention_decode(out, inp, B, T, 2, C, NH);
  b.wait_copy(b.copy_to_host_async(host.data(), out, 64));
  b.wait_copy(b.copy_to_device_async(out, host.data(), 64));
  b.attach_op_recorder(nullptr);
  const std::vector<OpKind> want = {
      OpKind::CopyToDevice, OpKind::CopyToHost, OpKind::Copy, OpKind::Zero, OpKind::F32ToAct, OpKind::ActToF32,
      OpKind::EmbeddingForward, OpKind::EmbeddingBackward, OpKind::LayerNormForward, OpKind::LayerNormBackward,
      OpKind::MatmulForward, OpKind::MatmulBackward, OpKind::AttentionForward, OpKind::AttentionBackward,
      OpKind::GeluForward, OpKind::GeluBackward, OpKind::ResidualForward, OpKind::Accumulate, OpKind::CrossEntropy,
      OpKind::AdamW, OpKind::SumSquares, OpKind::Scale, OpKind::AdamWMultiTensor,
      OpKind::MatmulForward, OpKind::GeluForward,      // matmul_bias_gelu_forward
      OpKind::MatmulBackward, OpKind::GeluBackward,    // matmul_backward_gelu
      OpKind::ResidualForward, OpKind::LayerNormForward,  // residual_layernorm_forward
      OpKind::MatmulForward, OpKind::MatmulBackward};  // the LM head
  std::vector<OpKind> got;
  for (const auto& r : rec.records()) got.push_back(r.cost.kind);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "record " << i << ": " << op_kind_name(got[i]);
  EXPECT_EQ(rec.records()[6].cost.shape, "B=1 T=4 C=8");
  EXPECT_DOUBLE_EQ(rec.records().back().cost.flops, matmul_backward_flops(N, C, V, true, true, false));
  for (void* p : bufs) b.free(p);
  b.free(saved);
}

}  // namespace
}  // namespace zt
