// Convolution passes on the batch-reduce GEMM (cpu/brgemm.h): what the
// three brgemm solvers share.
//
// Forward and backward-data are one computation, a "tap sum": every output
// position q (per axis) is
//     out[q * out_step + out_base] = sum over taps t of in[q * in_step + offset[t]] . W[t]
// over a zero-padded channels-last copy of the input (channels padded to the
// backend's reduction multiple), 32 output positions along the last axis by
// 32 output channels per block, the taps as the batch. Forward: in_step the
// stride, offset[t] = t * dilation - pad. Backward-data: for each stride
// phase ph of dx, in_step 1, the taps t with (ph + pad - t * dilation)
// divisible by the stride, offset (ph + pad - t * dilation) / stride, and
// out_step the stride -- so a strided backward-data pass is stride^rank
// unstrided ones, none of them reading a zero inserted between dy's rows.
//
// Backward-filter (run_backward_filter) sums over output positions instead:
// per output row, dy packed once as B (positions as the reduction) and, per
// tap, x's matching positions transposed as A (channels as rows).
//
// Backends: bf16 tensors, and fp32 ones under CONV_MATH_FAST (bf16
// products, fp32 sums: oneDNN's fpmath_mode::bf16), on AMX tiles; fp32
// otherwise on the AVX-512 FMA backend (a dot product's error).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/geometry.h"
#include "core/solver.h"
#include "core/thread_pool.h"
#include "cpu/algorithm.h"
#include "cpu/brgemm.h"

namespace conv::cpu::brgemm {

// The backend a problem runs on; null `why` when it runs at all.
struct Route {
    Backend backend;
    const char *why;  // the refusal, a static string
};
Route route(const ConvGeometry &g, conv_dtype_t dtype, conv_math_t math);

// Bytes of the packed weights of a forward (or, with `transposed`, a
// backward-data) pass: per group, per block of 32 output channels, per tap,
// a B block of the padded input channels x 32.
size_t packed_weight_bytes(const ConvGeometry &g, Backend be, bool transposed);
void pack_weights(const ConvGeometry &g, conv_dtype_t dtype, Backend be, bool transposed,
                  const void *w, void *out, ThreadPool &pool, int threads);

// Scratch of a forward / backward-data run: room to pack the weights
// (unused when the plan's prepared copy comes in ConvArgs::prepared), the
// padded input, and each thread's block and batch.
size_t tap_sum_workspace_bytes(const ConvGeometry &g, conv_op_t op, Backend be, int threads);
void run_tap_sum(const ConvArgs &a, Backend be, void *ws, ThreadPool &pool, int threads);

size_t backward_filter_workspace_bytes(const ConvGeometry &g, Backend be, int threads);
void run_backward_filter(const ConvArgs &a, Backend be, void *ws, ThreadPool &pool, int threads);

// Refusals every brgemm solver shares (geometry only).
const char *why_not_geometry(const ConvGeometry &g);

// What the three solvers share: dtypes, the route by math mode, the pass
// they take, and AUTO's verdict -- not their choice yet: the tile speed is
// unmeasured (no AMX machine so far) and the AVX-512 backend is not faster
// than direct_avx512 and the GEMM solvers. Forced by name, they run.
class Solver : public Algorithm {
public:
    explicit Solver(conv_op_t op) : op_(op) {}
    const char *why_not_dtype(conv_dtype_t dtype) const override;
    const char *why_not(const ConvGeometry &g, conv_op_t op) const override;
    const char *why_not_problem(const Problem &p) const override;
    bool competitive(const ConvGeometry &, conv_op_t, conv_dtype_t) const override { return false; }
    using Algorithm::workspace_bytes;
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const final;  // as under CONV_MATH_DEFAULT

protected:
    static Backend backend(const Problem &p) { return route(p.g, p.dtype, p.math).backend; }
    static Backend backend(const ConvArgs &a) { return route(*a.g, a.dtype, a.math).backend; }

private:
    conv_op_t op_;
};

}  // namespace conv::cpu::brgemm
