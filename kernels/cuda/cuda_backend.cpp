// CudaBackend: the Backend interface on one GPU — bf16 activations/weights, fp32 statistics,
// one owned stream, a cuBLASLt handle and workspace, and a growable fp32 scratch for reductions.
#include <cuda_runtime.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/op_record.h"
#include "kernels/cuda/adamw.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/conversions.cuh"
#include "kernels/cuda/copy_streams.h"
#include "kernels/cuda/crossentropy.cuh"
#include "base/cuda_check.h"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/flash_attention.cuh"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/layernorm.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/residual.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/cuda/fused_adamw.h"
#include "kernels/cuda/zero_step.cuh"

namespace zt {

namespace {

constexpr size_t kLtWorkspaceBytes = 32u << 20;

bool is_device_pointer(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error from an unknown host pointer
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// ZT_CUDA_ATTENTION: "flash" (default) or "naive" (the reference kernels, T x T probabilities).
bool attention_choice_is_naive() {
  const char* v = std::getenv("ZT_CUDA_ATTENTION");
  if (!v || !*v || std::string(v) == "flash") return false;
  if (std::string(v) == "naive") return true;
  throw std::runtime_error(std::string("ZT_CUDA_ATTENTION='") + v +
                           "' is not an attention implementation; use flash (the default) or naive");
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    ZT_CUDA_CHECK(cudaSetDevice(device_));
    ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ZT_CUBLAS_CHECK(cublasLtCreate(&lt_.handle));
    ZT_CUDA_CHECK(cudaMalloc(&lt_.workspace, kLtWorkspaceBytes));
    lt_.workspace_bytes = kLtWorkspaceBytes;
    copies_ = std::make_unique<cuda::CopyStreams>(stream_);
  }
  ~CudaBackend() override {
    copies_.reset();
    cudaStreamSynchronize(stream_);
    if (scratch_) cudaFree(scratch_);
    if (lt_.workspace) cudaFree(lt_.workspace);
    if (lt_.handle) cublasLtDestroy(lt_.handle);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  DType act_dtype() const override { return DType::BF16; }

  void* alloc(size_t bytes) override {
    void* p = nullptr;
    ZT_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
    return p;
  }
  void free(void* p) override {
    if (!p) return;
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ZT_CUDA_CHECK(cudaFree(p));
  }
  // Synchronous copies first finish the asynchronous ones (as the CPU backend's do), so that a copy
  // never overtakes an earlier transfer of the same buffer.
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::copy_to_device, bytes);
    copies_->synchronize();
    ZT_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host buffer may be reused on return
  }
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::copy_to_host, bytes);
    copies_->synchronize();
    ZT_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::copy, bytes);
    ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void zero(void* p, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::zero, bytes);
    ZT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
  }

  // src may be host memory (initialisation, tests) or device memory (the fp32 master copy).
  void f32_to_act(void* dst, const float* src, size_t n) override {
    const RecordedOp rec(*this, op_cost::f32_to_act, n);
    if (is_device_pointer(src)) {
      cuda::f32_to_bf16(dst, src, n, stream_);
      return;
    }
    float* tmp = scratch_floats(n);
    ZT_CUDA_CHECK(cudaMemcpyAsync(tmp, src, n * sizeof(float), cudaMemcpyHostToDevice, stream_));
    cuda::f32_to_bf16(dst, tmp, n, stream_);
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void act_to_f32(float* dst, const void* src, size_t n) override {
    const RecordedOp rec(*this, op_cost::act_to_f32, n);
    if (is_device_pointer(dst)) {
      cuda::bf16_to_f32(dst, src, n, stream_);
      return;
    }
    float* tmp = scratch_floats(n);
    cuda::bf16_to_f32(tmp, src, n, stream_);
    ZT_CUDA_CHECK(cudaMemcpyAsync(dst, tmp, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  CopyTicket copy_to_host_async(void* host_dst, const void* src, size_t bytes) override {
    return copies_->to_host(host_dst, src, bytes);
  }
  CopyTicket copy_to_device_async(void* dst, const void* host_src, size_t bytes) override {
    return copies_->to_device(dst, host_src, bytes);
  }
  void wait_copy(CopyTicket t) override { copies_->wait(t); }
  void synchronize() override {
    copies_->synchronize();
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void* native_stream() override { return stream_; }

  void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T,
                         int C) override {
    const RecordedOp rec(*this, op_cost::embedding_forward, B, T, C);
    cuda::embedding_forward(out, tokens, wte, wpe, B, T, C, stream_);
  }
  void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B, int T,
                          int C) override {
    const RecordedOp rec(*this, op_cost::embedding_backward, B, T, C);
    cuda::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, stream_);
  }
  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w, const void* b, int N,
                         int C) override {
    const RecordedOp rec(*this, op_cost::layernorm_forward, N, C);
    cuda::layernorm_forward(out, mean, rstd, inp, w, b, N, C, stream_);
  }
  void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp, const void* w,
                          const float* mean, const float* rstd, int N, int C) override {
    const RecordedOp rec(*this, op_cost::layernorm_backward, N, C);
    float* scratch = scratch_floats(cuda::layernorm_backward_scratch_floats(N, C));
    cuda::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, scratch, stream_);
  }
  void matmul_forward(void* out, const void* inp, const void* w, const void* bias, int N, int IC, int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_forward, N, IC, OC, bias != nullptr);
    cuda::matmul_forward(lt_, out, inp, w, bias, N, IC, OC, stream_);
  }
  void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp, const void* w, int N,
                       int IC, int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_backward, N, IC, OC, dinp != nullptr, dw != nullptr, dbias != nullptr);
    float* scratch = scratch_floats(cuda::matmul_backward_scratch_floats(N, IC, OC));
    cuda::matmul_backward(lt_, dinp, dw, dbias, dout, inp, w, N, IC, OC, scratch, stream_);
  }
  // Flash attention (O(T) saved state) for the head sizes it is built for; the reference kernels
  // otherwise, or everywhere when ZT_CUDA_ATTENTION=naive (for comparisons on a GPU).
  size_t attention_saved_bytes(int B, int T, int C, int NH) const override {
    return use_flash(C, NH) ? cuda::flash_attention_saved_bytes(B, T, C, NH)
                            : cuda::naive_attention_saved_bytes(B, T, C, NH);
  }
  using Backend::attention_forward;
  using Backend::attention_backward;
  using Backend::attention_decode;
  void attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH, int NKV) override {
    const RecordedOp rec(*this, op_cost::attention_forward, B, T, C, NH, NKV);
    check_heads(C, NH, NKV);
    if (use_flash(C, NH))
      cuda::flash_attention_forward(out, saved, qkv, B, T, C, NH, NKV, stream_);
    else
      cuda::naive_attention_forward(out, static_cast<float*>(saved), qkv, B, T, C, NH, NKV, stream_);
  }
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B, int T, int C,
                          int NH, int NKV) override {
    const RecordedOp rec(*this, op_cost::attention_backward, B, T, C, NH, NKV);
    check_heads(C, NH, NKV);
    if (use_flash(C, NH)) {
      float* scratch = scratch_floats(cuda::flash_attention_backward_scratch_floats(B, T, NH));
      cuda::flash_attention_backward(dqkv, dout, qkv, saved, B, T, C, NH, NKV, scratch, stream_);
      return;
    }
    float* scratch = scratch_floats(cuda::naive_attention_backward_scratch_floats(B, T, NH));
    cuda::naive_attention_backward(dqkv, dout, qkv, static_cast<const float*>(saved), B, T, C, NH, NKV, scratch,
                                   stream_);
  }
  void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH,
                        int NKV) override {
    cuda::attention_decode(out, qkv_cache, B, Tmax, t, C, NH, NKV, stream_);
  }
  void gelu_forward(void* out, const void* inp, size_t n) override {
    const RecordedOp rec(*this, op_cost::gelu_forward, n);
    cuda::gelu_forward(out, inp, n, stream_);
  }
  void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) override {
    const RecordedOp rec(*this, op_cost::gelu_backward, n);
    cuda::gelu_backward(dinp, inp, dout, n, stream_);
  }
  void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* w, int N, int C, float eps) override {
    const RecordedOp rec(*this, op_cost::rmsnorm_forward, N, C);
    cuda::rmsnorm_forward(out, rstd, inp, w, N, C, eps, stream_);
  }
  void rmsnorm_backward(void* dinp, void* dw, const void* dout, const void* inp, const void* w, const float* rstd,
                        int N, int C) override {
    const RecordedOp rec(*this, op_cost::rmsnorm_backward, N, C);
    float* scratch = scratch_floats(cuda::rmsnorm_backward_scratch_floats(N, C));
    cuda::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C, scratch, stream_);
  }
  void rope_forward(void* x, const float* cos, const float* sin, int B, int T, int heads, int hd,
                    int row_stride) override {
    const RecordedOp rec(*this, op_cost::rope_forward, B, T, heads, hd);
    cuda::rope_forward(x, cos, sin, B, T, heads, hd, row_stride, stream_);
  }
  void rope_backward(void* dx, const float* cos, const float* sin, int B, int T, int heads, int hd,
                     int row_stride) override {
    const RecordedOp rec(*this, op_cost::rope_backward, B, T, heads, hd);
    cuda::rope_backward(dx, cos, sin, B, T, heads, hd, row_stride, stream_);
  }
  void swiglu_forward(void* out, const void* gate_up, int N, int F) override {
    const RecordedOp rec(*this, op_cost::swiglu_forward, N, F);
    cuda::swiglu_forward(out, gate_up, N, F, stream_);
  }
  void swiglu_backward(void* dgate_up, const void* dout, const void* gate_up, int N, int F) override {
    const RecordedOp rec(*this, op_cost::swiglu_backward, N, F);
    cuda::swiglu_backward(dgate_up, dout, gate_up, N, F, stream_);
  }
  void residual_forward(void* out, const void* a, const void* b, size_t n) override {
    const RecordedOp rec(*this, op_cost::residual_forward, n);
    cuda::residual_forward(out, a, b, n, stream_);
  }
  void accumulate(void* acc, const void* x, size_t n) override {
    const RecordedOp rec(*this, op_cost::accumulate, n);
    cuda::accumulate(acc, x, n, stream_);
  }
  void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits, const int32_t* targets, int N,
                                     int V, int Vp, float dloss) override {
    const RecordedOp rec(*this, op_cost::crossentropy_forward_backward, N, V, Vp);
    int* count = reinterpret_cast<int*>(scratch_floats(1));
    cuda::crossentropy_forward_backward(losses, dlogits, logits, targets, N, V, Vp, dloss, count, stream_);
  }
  void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) override {
    const RecordedOp rec(*this, op_cost::adamw_step, n);
    cuda::adamw_step(p, g, m, v, n, h, stream_);
  }
  double sum_squares(const void* x, size_t n, float scale) override {
    const RecordedOp rec(*this, op_cost::sum_squares, n);
    const size_t need = cuda::sum_squares_scratch_doubles(n);
    double* scratch = reinterpret_cast<double*>(scratch_floats(2 * need));
    cuda::sum_squares(x, act_dtype(), n, scale, scratch + 1, scratch, stream_);
    double total = 0;
    ZT_CUDA_CHECK(cudaMemcpyAsync(&total, scratch, sizeof total, cudaMemcpyDeviceToHost, stream_));
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return total;
  }
  void scale(void* x, float s, size_t n) override {
    const RecordedOp rec(*this, op_cost::scale, n);
    cuda::scale(x, act_dtype(), s, n, stream_);
  }
  void adamw_multi_tensor(const AdamWChunk* chunks, size_t count, DType grad_dtype, const AdamWHyper& h) override {
    const RecordedOp rec(*this, op_cost::adamw_multi_tensor, chunks, count);
    fused_adamw(chunks, count, grad_dtype, h, stream_);
  }

  // --- fused ops ---
  void matmul_bias_gelu_forward(void* out, void* pre, const void* inp, const void* w, const void* bias, int N, int IC,
                                int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_bias_gelu_forward, N, IC, OC, bias != nullptr);
    cuda::matmul_bias_gelu_forward(lt_, out, pre, inp, w, bias, N, IC, OC, stream_);
  }
  void matmul_backward_gelu(void* dpre, void* dw, void* dbias, const void* dout, const void* gelu_out, const void* pre,
                            const void* w, int N, int IC, int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_backward_gelu, N, IC, OC, dw != nullptr, dbias != nullptr);
    float* scratch = scratch_floats(cuda::matmul_backward_scratch_floats(N, IC, OC));
    cuda::matmul_backward_gelu(lt_, dpre, dw, dbias, dout, gelu_out, pre, w, N, IC, OC, scratch, stream_);
  }
  void residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a, const void* b,
                                  const void* w, const void* bias, int N, int C) override {
    const RecordedOp rec(*this, op_cost::residual_layernorm_forward, N, C);
    cuda::residual_layernorm_forward(resid, out, mean, rstd, a, b, w, bias, N, C, stream_);
  }
  void residual_rmsnorm_forward(void* resid, void* out, float* rstd, const void* a, const void* b, const void* w,
                                int N, int C, float eps) override {
    const RecordedOp rec(*this, op_cost::residual_rmsnorm_forward, N, C);
    cuda::residual_rmsnorm_forward(resid, out, rstd, a, b, w, N, C, eps, stream_);
  }
  void lm_head_forward(void* logits, const void* inp, const void* w, int N, int C, int V, int Vp) override {
    const RecordedOp rec(*this, op_cost::lm_head_forward, N, C, V, Vp);
    cuda::lm_head_forward(lt_, logits, inp, w, N, C, V, Vp, stream_);
  }
  void lm_head_backward(void* dinp, void* dw, const void* dlogits, const void* inp, const void* w, int N, int C, int V,
                        int Vp) override {
    const RecordedOp rec(*this, op_cost::lm_head_backward, N, C, V, Vp, dinp != nullptr, dw != nullptr);
    float* scratch = scratch_floats(cuda::lm_head_backward_scratch_floats(N, C, V));
    cuda::lm_head_backward(lt_, dinp, dw, dlogits, inp, w, N, C, V, Vp, scratch, stream_);
  }

 private:
  bool use_flash(int C, int NH) const {
    return !naive_attention_ && NH > 0 && C % NH == 0 && cuda::flash_attention_supports(C / NH);
  }
  void check_heads(int C, int NH, int NKV) const {
    if (NH <= 0 || C % NH != 0)
      throw std::invalid_argument("attention: channels " + std::to_string(C) + " not divisible by heads " +
                                  std::to_string(NH));
    if (NKV <= 0 || NH % NKV != 0)
      throw std::invalid_argument("attention: " + std::to_string(NKV) + " key/value heads do not divide " +
                                  std::to_string(NH) + " query heads");
  }
  // Stream-ordered scratch: grows (after a sync) and is reused by the next op on the same stream.
  float* scratch_floats(size_t n) {
    const size_t bytes = (n == 0 ? 1 : n) * sizeof(float);
    if (bytes > scratch_bytes_) {
      ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      if (scratch_) ZT_CUDA_CHECK(cudaFree(scratch_));
      scratch_ = nullptr;
      ZT_CUDA_CHECK(cudaMalloc(&scratch_, bytes));
      scratch_bytes_ = bytes;
    }
    return static_cast<float*>(scratch_);
  }

  int device_;
  bool naive_attention_ = attention_choice_is_naive();
  cudaStream_t stream_ = nullptr;
  cuda::LtContext lt_;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::unique_ptr<cuda::CopyStreams> copies_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string("no usable GPU: cudaGetDeviceCount failed: ") + cudaGetErrorString(e) +
                             " (" + cudaGetErrorName(e) + "); run on a GPU machine or use --backend cpu");
  }
  if (count == 0) throw std::runtime_error("no usable GPU: cudaGetDeviceCount reports 0 devices");
  if (device < 0 || device >= count)
    throw std::runtime_error("GPU " + std::to_string(device) + " requested but only " + std::to_string(count) +
                             " device(s) are visible (check CUDA_VISIBLE_DEVICES and the rank-to-GPU mapping)");
  if ((e = cudaSetDevice(device)) != cudaSuccess)
    throw std::runtime_error(std::string("cannot use GPU ") + std::to_string(device) + ": " + cudaGetErrorString(e));
  cublasLtHandle_t probe = nullptr;
  cublasStatus_t st = cublasLtCreate(&probe);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLASLt cannot start on GPU " + std::to_string(device) + " (status " +
                             std::to_string(static_cast<int>(st)) + ")");
  cublasLtDestroy(probe);
  return std::make_unique<CudaBackend>(device);
}

}  // namespace zt
