// The CUDA engine: cuDNN's legacy convolution API (docs/gpu.md says why),
// plus the few kernels it lacks (kernels.cu).
//
// A pass becomes a Plan once per context and problem: tensor, filter and
// convolution descriptors, the explicit padding asymmetric padding needs,
// the algorithm and the workspace. Plans are cached per context under an
// integer key (PlanKey), so a steady-state call costs a hash lookup and the
// cuDNN call (the thread's handle is rebound only when the stream changes).
//
// Asymmetric padding: cuDNN's descriptor has one padding per axis, applied
// at both ends. With begin b and end e the descriptor gets p = max(0,
// min(b, e)) and the rest is explicit: forward and backward-filter read a
// copy of x padded (or cropped, when e < 0 in a transposed convolution) by
// b - p in front and e - p behind, made in the workspace by window_copy;
// backward-data computes that padded dx in the workspace and crops it into
// dx. One extra pass over x costs far less than the convolution.
//
// Channels-last problems cuDNN's legacy API has no kernel for (fp64 NHWC,
// for one) run channels-first: x, w and y are copied to channels-first
// buffers in the workspace (with the padding above, in the same pass), the
// output copied back. The choice is made per plan, only when cuDNN
// supports no algorithm for the channels-last descriptors.
#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "cuda/engine.h"
#include "cuda/kernels.h"

namespace conv::cuda {

// ------------------------------------------------------------- algorithms

namespace {

// Our id per cuDNN algorithm of each pass (-1: cuDNN has none). `exact`
// algorithms sum products directly (CONV_MATH_STRICT allows only those).
struct AlgoMap {
    conv_algo_t id;
    int fwd, bwd_data, bwd_filter;
    bool exact;
};
const AlgoMap kAlgos[] = {
    {CONV_ALGO_CUDNN_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
     CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, true},
    {CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
     CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, true},
    {CONV_ALGO_CUDNN_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, -1,
     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, true},
    {CONV_ALGO_CUDNN_DIRECT, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, -1, -1, true},
    {CONV_ALGO_CUDNN_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, false},
    {CONV_ALGO_CUDNN_FFT_TILING, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
     CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
     false},
    {CONV_ALGO_CUDNN_WINOGRAD, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
     CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, -1 /* cuDNN: not implemented */, false},
    {CONV_ALGO_CUDNN_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
     CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, false},
};

const AlgoMap *algo_map(conv_algo_t id) {
    for (const AlgoMap &a : kAlgos)
        if (a.id == id) return &a;
    return nullptr;
}

int cudnn_algo_of(const AlgoMap &a, conv_op_t op) {
    return op == CONV_OP_FORWARD ? a.fwd : op == CONV_OP_BACKWARD_DATA ? a.bwd_data : a.bwd_filter;
}

conv_algo_t id_of(conv_op_t op, int cudnn_algo) {
    for (const AlgoMap &a : kAlgos)
        if (cudnn_algo_of(a, op) == cudnn_algo) return a.id;
    return CONV_ALGO_AUTO;
}

// cuDNN's documented non-deterministic algorithms (atomic additions).
bool nondeterministic(conv_op_t op, int cudnn_algo) {
    if (op == CONV_OP_BACKWARD_DATA) return cudnn_algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    if (op == CONV_OP_BACKWARD_FILTER)
        return cudnn_algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 ||
               cudnn_algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
    return false;
}

const char *op_name(conv_op_t op) {
    return op == CONV_OP_FORWARD ? "forward" : op == CONV_OP_BACKWARD_DATA ? "backward-data"
                                                                           : "backward-filter";
}

cudnnDataType_t data_type(conv_dtype_t d) {
    switch (d) {
    case CONV_DTYPE_FLOAT64: return CUDNN_DATA_DOUBLE;
    case CONV_DTYPE_FLOAT16: return CUDNN_DATA_HALF;
    case CONV_DTYPE_BFLOAT16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
    }
}

// fp32 is computed in fp32 (FMA only, no TF32) unless the context is FAST;
// fp16 and bf16 on tensor cores, accumulating in fp32 (compute type FLOAT);
// fp64 in fp64.
cudnnMathType_t math_type(conv_dtype_t d, conv_math_t m) {
    switch (d) {
    case CONV_DTYPE_FLOAT32: return m == CONV_MATH_FAST ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    case CONV_DTYPE_FLOAT64: return CUDNN_DEFAULT_MATH;
    default: return CUDNN_TENSOR_OP_MATH;
    }
}

constexpr size_t kAlign = 256;
size_t align_up(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

}  // namespace

// ------------------------------------------------------------------- plans

struct Plan {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnActivationDescriptor_t act = nullptr;

    conv_op_t op = CONV_OP_FORWARD;
    conv_dtype_t dtype = CONV_DTYPE_FLOAT32;
    bool cl = false;          // the user's layout
    bool desc_cl = false;     // the layout cuDNN is given
    bool relayout = false;    // cl && !desc_cl: through channels-first buffers
    bool degenerate = false;  // a tensor without elements: no cuDNN call

    // Explicit padding: x as cuDNN sees it (xp) vs. the real x.
    bool pad = false;
    int64_t x_sp[3] = {1, 1, 1}, xp_sp[3] = {1, 1, 1}, offset[3] = {0, 0, 0};
    size_t pad_bytes = 0;     // x as cuDNN sees it, when padded or relaid out
    size_t w_bytes = 0, y_bytes = 0;  // w and y channels-first (relayout), dw's scratch (w_scratch)
    bool w_scratch = false;   // dw written in the workspace, then copied (wgrad_scratch_bytes)

    // Epilogues: bias/relu on the user's output, or the bias gradient.
    bool bias_act = false, relu = false;
    bool sums = false;
    bool sums_on_x = false;   // transposed: db sums x (c channels), else y (k channels)
    size_t sums_bytes = 0;
    bool fused = false;       // cudnnConvolutionBiasActivationForward
    mutable std::atomic<bool> fused_ok{true};

    conv_algo_t algo = CONV_ALGO_AUTO;
    int cudnn_algo = 0;
    size_t cudnn_ws = 0;
    uint64_t generation = 0;

    size_t fixed() const {
        return align_up(pad_bytes) + align_up(w_bytes) + align_up(y_bytes) + align_up(sums_bytes);
    }
    size_t total() const { return degenerate ? align_up(sums_bytes) : fixed() + cudnn_ws; }

    Plan() = default;
    Plan(const Plan &) = delete;
    Plan &operator=(const Plan &) = delete;
    ~Plan() {
        if (x) cudnnDestroyTensorDescriptor(x);
        if (y) cudnnDestroyTensorDescriptor(y);
        if (bias) cudnnDestroyTensorDescriptor(bias);
        if (w) cudnnDestroyFilterDescriptor(w);
        if (conv) cudnnDestroyConvolutionDescriptor(conv);
        if (act) cudnnDestroyActivationDescriptor(act);
    }
};

namespace {

Device &device_of(DeviceRuntime &rt) { return static_cast<Device &>(rt); }

PlanKey make_key(const Call &c, const Settings &s, conv_algo_t forced) {
    const ConvGeometry &g = *c.g;
    PlanKey k;
    k.push(c.op);
    k.push(c.dtype);
    k.push(g.layout);
    k.push(g.spatial);
    k.push(g.transposed);
    k.push(g.n);
    k.push(g.c);
    k.push(g.k);
    k.push(g.groups);
    for (int a = 0; a < 3; ++a) {
        k.push(g.in[a]);
        k.push(g.kernel[a]);
        k.push(g.stride[a]);
        k.push(g.dilation[a]);
        k.push(g.pad_begin[a]);
        k.push(g.pad_end[a]);
    }
    k.push(g.activation);
    k.push(c.relu);
    k.push(c.bias != nullptr);
    k.push(forced);
    k.push(s.math);
    k.push(s.deterministic);
    k.push((int64_t)s.workspace_limit);
    return k;
}

int to_int(int64_t v, const char *what, const ConvGeometry &g) {
    if (v > INT_MAX)
        fail(CONV_STATUS_OVERFLOW,
             "%s %lld exceeds what cuDNN's descriptors can index (2^31 - 1): %s", what,
             (long long)v, g.describe().c_str());
    return (int)v;
}

// A dense tensor (n, c, spatial...) of the layout, as 4-D (spatial ranks 1
// and 2: H, W) or 5-D.
void set_tensor(cudnnTensorDescriptor_t d, conv_dtype_t dtype, bool cl, int nb, int64_t n,
                int64_t c, const int64_t sp[3], const ConvGeometry &g) {
    int64_t total = n * c * sp[0] * sp[1] * sp[2];
    to_int(total, "tensor elements", g);
    int dims[5], strides[5];
    int64_t D = sp[0], H = sp[1], W = sp[2];
    int64_t st_n, st_c, st_d, st_h, st_w;
    if (cl) {
        st_c = 1; st_w = c; st_h = W * c; st_d = H * W * c; st_n = D * H * W * c;
    } else {
        st_w = 1; st_h = W; st_d = H * W; st_c = D * H * W; st_n = c * D * H * W;
    }
    dims[0] = (int)n;
    dims[1] = (int)c;
    strides[0] = (int)st_n;
    strides[1] = (int)st_c;
    if (nb == 5) {
        dims[2] = (int)D; dims[3] = (int)H; dims[4] = (int)W;
        strides[2] = (int)st_d; strides[3] = (int)st_h; strides[4] = (int)st_w;
    } else {
        dims[2] = (int)H; dims[3] = (int)W;
        strides[2] = (int)st_h; strides[3] = (int)st_w;
    }
    check_cudnn(cudnnSetTensorNdDescriptor(d, data_type(dtype), nb, dims, strides),
                "cudnnSetTensorNdDescriptor");
}

int64_t elements(int64_t n, int64_t c, const int64_t sp[3]) { return n * c * sp[0] * sp[1] * sp[2]; }

// Descriptors, padding and epilogues; no algorithm yet.
std::shared_ptr<Plan> build(const Call &c, const Settings &s, bool channels_first) {
    const ConvGeometry &g = *c.g;
    auto p = std::make_shared<Plan>();
    p->op = c.op;
    p->dtype = c.dtype;
    p->cl = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    p->desc_cl = p->cl && !channels_first;
    p->relayout = p->cl && channels_first;
    int64_t kernel_el = g.k * g.cg() * g.kernel[0] * g.kernel[1] * g.kernel[2];
    int64_t x_el = elements(g.n, g.c, g.in), y_el = elements(g.n, g.k, g.out);
    p->degenerate = x_el == 0 || y_el == 0 || kernel_el == 0;

    // Epilogues.
    if (!g.transposed) {
        p->relu = c.op == CONV_OP_FORWARD && c.relu;
        p->bias_act = c.op == CONV_OP_FORWARD && (c.bias || c.relu);
        p->sums = c.op == CONV_OP_BACKWARD_FILTER && c.bias;
    } else {
        p->relu = c.op == CONV_OP_BACKWARD_DATA && c.relu;
        p->bias_act = c.op == CONV_OP_BACKWARD_DATA && (c.bias || c.relu);
        p->sums = c.op == CONV_OP_BACKWARD_FILTER && c.bias;
        p->sums_on_x = true;
    }
    if (p->sums)
        p->sums_bytes = p->sums_on_x ? kernels::channel_sums_scratch(c.dtype, g.n, g.c, g.in_size())
                                     : kernels::channel_sums_scratch(c.dtype, g.n, g.k, g.out_size());
    if (p->degenerate) return p;

    // Padding: the symmetric part to cuDNN, the rest explicit.
    int64_t pad[3];
    for (int a = 0; a < 3; ++a) {
        int64_t b = g.pad_begin[a], e = g.pad_end[a];
        pad[a] = std::max<int64_t>(0, std::min(b, e));
        p->offset[a] = b - pad[a];
        p->x_sp[a] = g.in[a];
        p->xp_sp[a] = g.in[a] + (b - pad[a]) + (e - pad[a]);
        if (p->xp_sp[a] != g.in[a] || p->offset[a] != 0) p->pad = true;
    }
    if (p->pad || p->relayout) {
        int64_t xp_el = elements(g.n, g.c, p->xp_sp);
        to_int(xp_el, "padded input elements", g);
        p->pad_bytes = (size_t)xp_el * dtype_size(c.dtype);
    }
    if (p->relayout) {
        p->w_bytes = filter_bytes(g, c.dtype);
        p->y_bytes = (size_t)y_el * dtype_size(c.dtype);
    }
    if (size_t scratch = wgrad_scratch_bytes(g, c.op, c.dtype)) {
        p->w_scratch = !p->relayout;  // relayout already has cuDNN write r.w
        p->w_bytes = std::max(p->w_bytes, scratch);
    }

    int nb = g.spatial == 3 ? 5 : 4;
    check_cudnn(cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor");
    check_cudnn(cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor");
    set_tensor(p->x, c.dtype, p->desc_cl, nb, g.n, g.c, p->xp_sp, g);
    set_tensor(p->y, c.dtype, p->desc_cl, nb, g.n, g.k, g.out, g);
    to_int(kernel_el, "filter elements", g);
    int fdims[5] = {(int)g.k, (int)g.cg(), 0, 0, 0};
    int pads[3], strides[3], dils[3];
    int first = nb == 5 ? 0 : 1;  // spatial axes cuDNN sees
    for (int a = first, i = 0; a < 3; ++a, ++i) {
        fdims[2 + i] = to_int(g.kernel[a], "kernel size", g);
        pads[i] = to_int(pad[a], "padding", g);
        strides[i] = to_int(g.stride[a], "stride", g);
        dils[i] = to_int(g.dilation[a], "dilation", g);
    }
    check_cudnn(cudnnSetFilterNdDescriptor(p->w, data_type(c.dtype),
                                           p->desc_cl ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, nb, fdims),
                "cudnnSetFilterNdDescriptor");
    cudnnDataType_t compute = c.dtype == CONV_DTYPE_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    check_cudnn(cudnnSetConvolutionNdDescriptor(p->conv, nb - 2, pads, strides, dils,
                                                CUDNN_CROSS_CORRELATION, compute),
                "cudnnSetConvolutionNdDescriptor");
    check_cudnn(cudnnSetConvolutionGroupCount(p->conv, to_int(g.groups, "groups", g)),
                "cudnnSetConvolutionGroupCount");
    check_cudnn(cudnnSetConvolutionMathType(p->conv, math_type(c.dtype, s.math)),
                "cudnnSetConvolutionMathType");

    // Bias + ReLU fused into the convolution where cuDNN has it.
    if (!g.transposed && c.op == CONV_OP_FORWARD && c.bias && c.relu &&
        c.dtype != CONV_DTYPE_FLOAT64) {
        p->fused = true;
        check_cudnn(cudnnCreateTensorDescriptor(&p->bias), "cudnnCreateTensorDescriptor");
        int bd[5] = {1, (int)g.k, 1, 1, 1}, bs[5] = {(int)g.k, 1, 1, 1, 1};
        check_cudnn(cudnnSetTensorNdDescriptor(p->bias, data_type(c.dtype), nb, bd, bs),
                    "cudnnSetTensorNdDescriptor (bias)");
        check_cudnn(cudnnCreateActivationDescriptor(&p->act), "cudnnCreateActivationDescriptor");
        check_cudnn(cudnnSetActivationDescriptor(p->act, CUDNN_ACTIVATION_RELU,
                                                 CUDNN_PROPAGATE_NAN, 0.0),
                    "cudnnSetActivationDescriptor");
    }
    return p;
}

// cuDNN's workspace need of one algorithm; false when it does not apply.
bool workspace_of(cudnnHandle_t h, const Plan &p, int algo, size_t *bytes) {
    cudnnStatus_t st;
    switch (p.op) {
    case CONV_OP_FORWARD:
        st = cudnnGetConvolutionForwardWorkspaceSize(h, p.x, p.w, p.conv, p.y,
                                                     (cudnnConvolutionFwdAlgo_t)algo, bytes);
        break;
    case CONV_OP_BACKWARD_DATA:
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, p.w, p.y, p.conv, p.x, (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
        break;
    default:
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, p.x, p.y, p.conv, p.w, (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
        break;
    }
    if (st != CUDNN_STATUS_SUCCESS) {
        char discard[256];
        cudnnGetLastErrorString(discard, sizeof discard);  // consumed: not this call's error
        return false;
    }
    return true;
}

// cuDNN's candidates for a pass, as (algo, status, time, memory, determinism, mathType).
struct Perf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
};

template <class P>
Perf to_perf(const P &r) {
    return {(int)r.algo, r.status, r.time, r.memory, r.determinism, r.mathType};
}

std::vector<Perf> heuristics(cudnnHandle_t h, const Plan &p) {
    std::vector<Perf> out;
    int n = 0;
    switch (p.op) {
    case CONV_OP_FORWARD: {
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(h, p.x, p.w, p.conv, p.y,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, r),
                    "cudnnGetConvolutionForwardAlgorithm_v7");
        for (int i = 0; i < n; ++i) out.push_back(to_perf(r[i]));
        break;
    }
    case CONV_OP_BACKWARD_DATA: {
        cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                        h, p.w, p.y, p.conv, p.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, r),
                    "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        for (int i = 0; i < n; ++i) out.push_back(to_perf(r[i]));
        break;
    }
    default: {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                        h, p.x, p.y, p.conv, p.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, r),
                    "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        for (int i = 0; i < n; ++i) out.push_back(to_perf(r[i]));
        break;
    }
    }
    return out;
}

// Whether the settings let the choice take this algorithm.
bool allowed(const Plan &p, const Settings &s, int cudnn_algo, const Perf *perf) {
    conv_algo_t id = id_of(p.op, cudnn_algo);
    const AlgoMap *m = algo_map(id);
    if (!m) return false;
    if (s.math == CONV_MATH_STRICT && !m->exact) return false;
    if (s.deterministic && (nondeterministic(p.op, cudnn_algo) ||
                            (perf && perf->determinism != CUDNN_DETERMINISTIC)))
        return false;
    if (perf && p.dtype == CONV_DTYPE_FLOAT32 && s.math != CONV_MATH_FAST &&
        (perf->math == CUDNN_TENSOR_OP_MATH || perf->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
        return false;
    return true;
}

void choose(cudnnHandle_t h, Plan &p, const Call &c, const Settings &s, conv_algo_t forced,
            const std::function<conv_algo_t()> &tuned) {
    if (p.degenerate) {  // nothing for cuDNN to do
        p.algo = forced != CONV_ALGO_AUTO ? forced : CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM;
        return;
    }
    auto take = [&](int algo, size_t ws) {
        p.cudnn_algo = algo;
        p.algo = id_of(p.op, algo);
        p.cudnn_ws = ws;
    };
    size_t ws = 0;
    if (forced != CONV_ALGO_AUTO) {
        const AlgoMap *m = algo_map(forced);
        if (!m)
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s (%d) is not available on a GPU",
                 conv_algo_name(forced), (int)forced);
        int a = cudnn_algo_of(*m, p.op);
        if (a < 0)
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s has no cuDNN %s variant",
                 conv_algo_name(forced), op_name(p.op));
        if (!workspace_of(h, p, a, &ws))
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s does not apply: cuDNN does not support it "
                 "for %s %s (%s)", conv_algo_name(forced), dtype_name(c.dtype), op_name(p.op),
                 c.g->describe().c_str());
        take(a, ws);
        return;
    }
    conv_algo_t t = tuned ? tuned() : CONV_ALGO_AUTO;
    if (const AlgoMap *m = t != CONV_ALGO_AUTO ? algo_map(t) : nullptr) {
        int a = cudnn_algo_of(*m, p.op);
        if (a >= 0 && allowed(p, s, a, nullptr) && workspace_of(h, p, a, &ws) &&
            (!s.workspace_limit || ws <= s.workspace_limit)) {
            take(a, ws);
            return;
        }
    }
    for (const Perf &r : heuristics(h, p)) {
        if (r.status != CUDNN_STATUS_SUCCESS || !allowed(p, s, r.algo, &r)) continue;
        if (!workspace_of(h, p, r.algo, &ws)) continue;
        if (s.workspace_limit && ws > s.workspace_limit) continue;
        take(r.algo, ws);
        return;
    }
    // The heuristic found nothing the settings allow: any that applies.
    for (const AlgoMap &m : kAlgos) {
        int a = cudnn_algo_of(m, p.op);
        if (a < 0 || !allowed(p, s, a, nullptr) || !workspace_of(h, p, a, &ws)) continue;
        if (s.workspace_limit && ws > s.workspace_limit) continue;
        take(a, ws);
        return;
    }
    fail(CONV_STATUS_UNSUPPORTED,
         "cuDNN has no %s algorithm for %s %s%s%s%s", op_name(p.op), dtype_name(c.dtype),
         c.g->describe().c_str(), s.math == CONV_MATH_STRICT ? " under CONV_MATH_STRICT" : "",
         s.deterministic ? " in deterministic mode" : "",
         s.workspace_limit ? format(" within the workspace limit of %zu bytes", s.workspace_limit).c_str() : "");
}

struct Scalars {
    double d1 = 1, d0 = 0;
    float f1 = 1, f0 = 0;
    const void *one(conv_dtype_t t) const { return t == CONV_DTYPE_FLOAT64 ? (const void *)&d1 : (const void *)&f1; }
    const void *zero(conv_dtype_t t) const { return t == CONV_DTYPE_FLOAT64 ? (const void *)&d0 : (const void *)&f0; }
};

// Workspace regions: [x as cuDNN sees it][w, y channels-first][bias-gradient
// scratch][cuDNN's].
struct Regions {
    void *pad, *w, *y, *sums, *cudnn;
};
Regions regions(const Plan &p, void *ws) {
    char *b = static_cast<char *>(ws);
    if (p.degenerate) return {nullptr, nullptr, nullptr, b, nullptr};
    char *w = b + align_up(p.pad_bytes), *y = w + align_up(p.w_bytes), *s = y + align_up(p.y_bytes);
    return {b, w, y, s, s + align_up(p.sums_bytes)};
}

// Is there any algorithm cuDNN supports for these descriptors?
bool supported(cudnnHandle_t h, const Plan &p);

void epilogues(const Plan &p, const Call &c, cudaStream_t st, const Regions &r,
               bool fused_done = false) {
    const ConvGeometry &g = *c.g;
    if (p.bias_act && !fused_done) {
        if (g.transposed)  // the user's output is x
            check_cuda(kernels::bias_act(st, c.dtype, p.cl, g.n, g.c, g.in_size(), c.x, c.bias, p.relu),
                       "bias/activation kernel");
        else
            check_cuda(kernels::bias_act(st, c.dtype, p.cl, g.n, g.k, g.out_size(), c.y, c.bias, p.relu),
                       "bias/activation kernel");
    }
    if (p.sums) {
        if (p.sums_on_x)
            check_cuda(kernels::channel_sums(st, c.dtype, p.cl, g.n, g.c, g.in_size(), c.x, c.bias, r.sums),
                       "bias-gradient kernel");
        else
            check_cuda(kernels::channel_sums(st, c.dtype, p.cl, g.n, g.k, g.out_size(), c.y, c.bias, r.sums),
                       "bias-gradient kernel");
    }
}

// A tensor without elements somewhere: the output is zeros (a sum of no
// products), then the epilogues.
void run_degenerate(const Plan &p, const Call &c, cudaStream_t st, const Regions &r) {
    const ConvGeometry &g = *c.g;
    size_t es = dtype_size(c.dtype);
    switch (c.op) {
    case CONV_OP_FORWARD:
        check_cuda(cudaMemsetAsync(c.y, 0, (size_t)elements(g.n, g.k, g.out) * es, st), "cudaMemsetAsync");
        break;
    case CONV_OP_BACKWARD_DATA:
        check_cuda(cudaMemsetAsync(c.x, 0, (size_t)elements(g.n, g.c, g.in) * es, st), "cudaMemsetAsync");
        break;
    default:
        check_cuda(cudaMemsetAsync(c.w, 0, (size_t)(g.k * g.cg() * g.kernel_size()) * es, st),
                   "cudaMemsetAsync");
        break;
    }
    epilogues(p, c, st, r);
}

void pad_input(const Plan &p, const Call &c, cudaStream_t st, void *dst) {
    const ConvGeometry &g = *c.g;
    check_cuda(kernels::window_copy(st, c.dtype, p.cl, p.desc_cl, g.n, g.c, p.x_sp, p.xp_sp,
                                    p.offset, c.x, dst),
               "padding kernel");
}

void crop_output(const Plan &p, const Call &c, cudaStream_t st, const void *src) {
    const ConvGeometry &g = *c.g;
    int64_t back[3] = {-p.offset[0], -p.offset[1], -p.offset[2]};
    check_cuda(kernels::window_copy(st, c.dtype, p.desc_cl, p.cl, g.n, g.c, p.xp_sp, p.x_sp, back,
                                    src, c.x),
               "cropping kernel");
}

// w (k, cg, kernel) or y (n, k, out) between the user's channels-last
// memory and a channels-first buffer.
void relayout_w(const Call &c, cudaStream_t st, const void *src, void *dst, bool to_cf) {
    const ConvGeometry &g = *c.g;
    const int64_t zero[3] = {0, 0, 0};
    check_cuda(kernels::window_copy(st, c.dtype, to_cf, !to_cf, g.k, g.cg(), g.kernel, g.kernel,
                                    zero, src, dst),
               "filter layout kernel");
}
void relayout_y(const Call &c, cudaStream_t st, const void *src, void *dst, bool to_cf) {
    const ConvGeometry &g = *c.g;
    const int64_t zero[3] = {0, 0, 0};
    check_cuda(kernels::window_copy(st, c.dtype, to_cf, !to_cf, g.n, g.k, g.out, g.out, zero, src,
                                    dst),
               "output layout kernel");
}

bool supported(cudnnHandle_t h, const Plan &p) {
    size_t ws;
    for (const AlgoMap &m : kAlgos) {
        int a = cudnn_algo_of(m, p.op);
        if (a >= 0 && workspace_of(h, p, a, &ws)) return true;
    }
    return false;
}

// The plan's descriptors: the user's layout, or channels-first when cuDNN
// has nothing for the channels-last ones.
std::shared_ptr<Plan> build_supported(cudnnHandle_t h, const Call &c, const Settings &s) {
    std::shared_ptr<Plan> p = build(c, s, false);
    if (!p->degenerate && p->cl && !supported(h, *p)) p = build(c, s, true);
    return p;
}

}  // namespace

// ------------------------------------------------------------------ engine

bool built() noexcept { return true; }

std::string build_versions() {
    return format("CUDA %d.%d, cuDNN %d.%d.%d", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10,
                  CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
}

std::shared_ptr<DeviceRuntime> open(int index) {
    std::string why;
    int n = device_count(&why);
    if (index < 0 || index >= n)
        fail(CONV_STATUS_NOT_AVAILABLE, "CUDA device %d requested, but %s", index,
             n == 0 ? why.c_str()
                    : format("there %s %d GPU%s (0..%d)", n == 1 ? "is" : "are", n,
                             n == 1 ? "" : "s", n - 1).c_str());
    return std::make_shared<Device>(index);
}

void set_stream(DeviceRuntime &rt, void *stream) { device_of(rt).set_stream(stream); }
void *get_stream(DeviceRuntime &rt) { return device_of(rt).stream(); }


Prepared prepare(DeviceRuntime &rt, const Call &c, const Settings &s, conv_algo_t forced,
                 const std::function<conv_algo_t()> &tuned) {
    Device &d = device_of(rt);
    PlanKey key = make_key(c, s, forced);
    std::shared_ptr<const Plan> cached = d.find_plan(key);
    if (cached && (forced != CONV_ALGO_AUTO || cached->generation == s.tuning_generation))
        return {cached, cached->algo, cached->total()};
    DeviceGuard guard(d.index());
    cudnnHandle_t h = cudnn_handle(d.index(), d.stream());
    std::shared_ptr<Plan> p = build_supported(h, c, s);
    choose(h, *p, c, s, forced, tuned);
    p->generation = s.tuning_generation;
    d.put_plan(key, p);
    return {p, p->algo, p->total()};
}

void run(DeviceRuntime &rt, const Call &c, const Prepared &prep, void *ws) {
    Device &d = device_of(rt);
    const Plan &p = *prep.plan;
    DeviceGuard guard(d.index());
    cudaStream_t st = d.stream();
    Regions r = regions(p, ws);
    if (p.degenerate) {
        run_degenerate(p, c, st, r);
        return;
    }
    cudnnHandle_t h = cudnn_handle(d.index(), st);
    static const Scalars k;
    const void *one = k.one(c.dtype), *zero = k.zero(c.dtype);
    bool fused_done = false;
    switch (c.op) {
    case CONV_OP_FORWARD: {
        const void *x = c.x, *w = c.w;
        void *y = p.relayout ? r.y : c.y;
        if (p.pad || p.relayout) {
            pad_input(p, c, st, r.pad);
            x = r.pad;
        }
        if (p.relayout) {
            relayout_w(c, st, c.w, r.w, true);
            w = r.w;
        }
        if (p.fused && p.fused_ok.load(std::memory_order_relaxed)) {
            cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
                h, one, p.x, x, p.w, w, p.conv, (cudnnConvolutionFwdAlgo_t)p.cudnn_algo,
                r.cudnn, p.cudnn_ws, zero, p.y, y, p.bias, c.bias, p.act, p.y, y);
            if (s == CUDNN_STATUS_SUCCESS) {
                fused_done = true;
            } else {
                if (CUDNN_STATUS_CATEGORY(s) != CUDNN_STATUS_NOT_SUPPORTED &&
                    CUDNN_STATUS_CATEGORY(s) != CUDNN_STATUS_BAD_PARAM)
                    throw_cudnn(s, "cudnnConvolutionBiasActivationForward");
                // Refused before any write: convolve, then our bias/ReLU kernel.
                char discard[256];
                cudnnGetLastErrorString(discard, sizeof discard);
                p.fused_ok.store(false, std::memory_order_relaxed);
            }
        }
        if (!fused_done)
            check_cudnn(cudnnConvolutionForward(h, one, p.x, x, p.w, w, p.conv,
                                                (cudnnConvolutionFwdAlgo_t)p.cudnn_algo, r.cudnn,
                                                p.cudnn_ws, zero, p.y, y),
                        "cudnnConvolutionForward");
        if (p.relayout) relayout_y(c, st, r.y, c.y, false);
        break;
    }
    case CONV_OP_BACKWARD_DATA: {
        const void *w = c.w, *dy = c.y;
        void *dx = p.pad || p.relayout ? r.pad : c.x;
        if (p.relayout) {
            relayout_w(c, st, c.w, r.w, true);
            relayout_y(c, st, c.y, r.y, true);
            w = r.w;
            dy = r.y;
        }
        check_cudnn(cudnnConvolutionBackwardData(h, one, p.w, w, p.y, dy, p.conv,
                                                 (cudnnConvolutionBwdDataAlgo_t)p.cudnn_algo,
                                                 r.cudnn, p.cudnn_ws, zero, p.x, dx),
                    "cudnnConvolutionBackwardData");
        if (p.pad || p.relayout) crop_output(p, c, st, r.pad);
        break;
    }
    default: {
        const void *x = c.x, *dy = c.y;
        void *dw = p.relayout || p.w_scratch ? r.w : c.w;
        if (p.pad || p.relayout) {
            pad_input(p, c, st, r.pad);
            x = r.pad;
        }
        if (p.relayout) {
            relayout_y(c, st, c.y, r.y, true);
            dy = r.y;
        }
        check_cudnn(cudnnConvolutionBackwardFilter(h, one, p.x, x, p.y, dy, p.conv,
                                                   (cudnnConvolutionBwdFilterAlgo_t)p.cudnn_algo,
                                                   r.cudnn, p.cudnn_ws, zero, p.w, dw),
                    "cudnnConvolutionBackwardFilter");
        if (p.relayout) relayout_w(c, st, r.w, c.w, false);
        if (p.w_scratch)
            check_cuda(cudaMemcpyAsync(c.w, r.w, filter_bytes(*c.g, c.dtype), cudaMemcpyDeviceToDevice, st),
                       "cudaMemcpyAsync");
        break;
    }
    }
    epilogues(p, c, st, r, fused_done);
}

std::vector<Trial> find(DeviceRuntime &rt, const Call &c, const Settings &s, Workspace &ws) {
    Device &d = device_of(rt);
    DeviceGuard guard(d.index());
    cudnnHandle_t h = cudnn_handle(d.index(), d.stream());
    std::shared_ptr<Plan> p = build_supported(h, c, s);
    if (p->degenerate) {  // nothing to time: every algorithm writes zeros
        ws.reserve(p->total());
        return {{CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM, 0.0, p->total() ? p->total() + 64 : 0}};
    }

    // The bound: a wrapped workspace's size, else the context's limit, else
    // the largest need among the candidates, at most half the free memory.
    size_t fixed = p->fixed();
    size_t limit;
    if (!ws.owned()) {
        limit = ws.size() > fixed + 64 ? ws.size() - fixed - 64 : 0;
    } else if (s.workspace_limit) {
        limit = s.workspace_limit;
    } else {
        size_t most = 0, need;
        for (const Perf &r : heuristics(h, *p))
            if (r.status == CUDNN_STATUS_SUCCESS && allowed(*p, s, r.algo, &r) &&
                workspace_of(h, *p, r.algo, &need))
                most = std::max(most, need);
        limit = std::min(most, d.free_memory() / 2);
    }
    void *base = ws.reserve(fixed + limit);  // may throw: nothing written yet
    Regions r = regions(*p, base);
    cudaStream_t st = d.stream();

    // The operands as cuDNN sees them (padded, channels-first), as run() does.
    const void *x = c.x, *w = c.w, *y = c.y;
    void *out_x = p->pad || p->relayout ? r.pad : c.x;
    void *out_w = p->relayout || p->w_scratch ? r.w : c.w, *out_y = p->relayout ? r.y : c.y;
    if (c.op != CONV_OP_BACKWARD_DATA && (p->pad || p->relayout)) {
        pad_input(*p, c, st, r.pad);
        x = r.pad;
    }
    if (p->relayout && c.op != CONV_OP_BACKWARD_FILTER) {
        relayout_w(c, st, c.w, r.w, true);
        w = r.w;
    }
    if (p->relayout && c.op != CONV_OP_FORWARD) {
        relayout_y(c, st, c.y, r.y, true);
        y = r.y;
    }

    std::vector<Perf> perfs;
    int n = 0;
    switch (c.op) {
    case CONV_OP_FORWARD: {
        cudnnConvolutionFwdAlgoPerf_t res[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        check_cudnn(cudnnFindConvolutionForwardAlgorithmEx(h, p->x, x, p->w, w, p->conv, p->y, out_y,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                                           res, r.cudnn, limit),
                    "cudnnFindConvolutionForwardAlgorithmEx");
        for (int i = 0; i < n; ++i) perfs.push_back(to_perf(res[i]));
        break;
    }
    case CONV_OP_BACKWARD_DATA: {
        cudnnConvolutionBwdDataAlgoPerf_t res[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        check_cudnn(cudnnFindConvolutionBackwardDataAlgorithmEx(
                        h, p->w, w, p->y, y, p->conv, p->x, out_x,
                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, res, r.cudnn, limit),
                    "cudnnFindConvolutionBackwardDataAlgorithmEx");
        for (int i = 0; i < n; ++i) perfs.push_back(to_perf(res[i]));
        break;
    }
    default: {
        cudnnConvolutionBwdFilterAlgoPerf_t res[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        check_cudnn(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                        h, p->x, x, p->y, y, p->conv, p->w, out_w,
                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, res, r.cudnn, limit),
                    "cudnnFindConvolutionBackwardFilterAlgorithmEx");
        for (int i = 0; i < n; ++i) perfs.push_back(to_perf(res[i]));
        break;
    }
    }
    std::vector<Trial> trials;
    for (const Perf &pf : perfs) {
        if (pf.status != CUDNN_STATUS_SUCCESS || pf.memory > limit || !allowed(*p, s, pf.algo, &pf))
            continue;
        conv_algo_t id = id_of(c.op, pf.algo);
        bool seen = false;
        for (const Trial &t : trials) seen = seen || t.algo == id;
        if (!seen) trials.push_back({id, (double)pf.time, fixed + pf.memory + 64});
    }
    if (trials.empty())
        fail(CONV_STATUS_UNSUPPORTED,
             "no cuDNN %s algorithm could run for %s %s within a workspace of %zu bytes%s%s",
             op_name(c.op), dtype_name(c.dtype), c.g->describe().c_str(), limit,
             s.math == CONV_MATH_STRICT ? " under CONV_MATH_STRICT" : "",
             s.deterministic ? " in deterministic mode" : "");
    std::stable_sort(trials.begin(), trials.end(),
                     [](const Trial &a, const Trial &b) { return a.ms < b.ms; });
    return trials;
}

size_t filter_bytes(const ConvGeometry &g, conv_dtype_t dtype) {
    return (size_t)(g.k * g.cg() * g.kernel[0] * g.kernel[1] * g.kernel[2]) * dtype_size(dtype);
}

size_t wgrad_scratch_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    if (op != CONV_OP_BACKWARD_FILTER || g.groups < 2) return 0;
    const size_t w = filter_bytes(g, dtype);
    return w + std::max<size_t>(w, 64 << 10);
}

double time_launches(DeviceRuntime &rt, const std::function<void()> &launch, int runs) {
    Device &d = device_of(rt);
    DeviceGuard guard(d.index());
    cudaStream_t st = d.stream();
    struct Events {  // destroyed on every way out
        cudaEvent_t start = nullptr, stop = nullptr;
        ~Events() {
            if (start) cudaEventDestroy(start);
            if (stop) cudaEventDestroy(stop);
        }
    } ev;
    check_cuda(cudaEventCreate(&ev.start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&ev.stop), "cudaEventCreate");
    launch();  // warm-up: first-use costs out of the figure
    std::vector<float> ms;
    for (int i = 0; i < runs; ++i) {
        check_cuda(cudaEventRecord(ev.start, st), "cudaEventRecord");
        launch();
        check_cuda(cudaEventRecord(ev.stop, st), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
        float t = 0;
        check_cuda(cudaEventElapsedTime(&t, ev.start, ev.stop), "cudaEventElapsedTime");
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

}  // namespace conv::cuda
