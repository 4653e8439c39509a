#include "cpu/brgemm_conv.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"

namespace conv::cpu::brgemm {
namespace {

using bf16_t = uint16_t;
constexpr int kMaxTaps = 64;  // kernel taps along one axis
constexpr size_t kAlign = 64;

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
size_t align(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// ------------------------------------------------------------ elements

float from_bf16(bf16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// To nearest, ties to even; a NaN stays a (quiet) NaN.
bf16_t to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (bf16_t)(bits >> 16);
}

float load(const void *p, conv_dtype_t dt, int64_t i) {
    return dt == CONV_DTYPE_BFLOAT16 ? from_bf16(((const bf16_t *)p)[i]) : ((const float *)p)[i];
}

void store(void *p, conv_dtype_t dt, int64_t i, float v) {
    if (dt == CONV_DTYPE_BFLOAT16)
        ((bf16_t *)p)[i] = to_bf16(v);
    else
        ((float *)p)[i] = v;
}

// An element of a packed operand in the backend's type.
void put(void *base, int64_t i, float v, bool bf16) {
    if (bf16)
        ((bf16_t *)base)[i] = to_bf16(v);
    else
        ((float *)base)[i] = v;
}

// Element strides of an (N, C, D, H, W) tensor in its layout.
struct Strides {
    int64_t n, c, d, h, w;
};
Strides strides_of(conv_layout_t layout, int64_t c, const int64_t *sp) {
    const int64_t plane = sp[0] * sp[1] * sp[2];
    if (layout == CONV_LAYOUT_CHANNELS_LAST)
        return {plane * c, 1, sp[1] * sp[2] * c, sp[2] * c, c};
    return {plane * c, plane, sp[1] * sp[2], sp[2], 1};
}

// Element (k, c, tap) of a filter of K x C/G x taps in its layout.
int64_t filter_index(const ConvGeometry &g, int64_t k, int64_t c, int64_t tap) {
    const int64_t taps = g.kernel_size(), cg = g.cg();
    return g.layout == CONV_LAYOUT_CHANNELS_LAST ? (k * taps + tap) * cg + c : (k * cg + c) * taps + tap;
}

// --------------------------------------------------------------- shapes

// The reduction and output channels of a tap-sum pass, per group.
struct Channels {
    int64_t in, out;
};
Channels channels_of(const ConvGeometry &g, bool transposed) {
    return transposed ? Channels{g.kg(), g.cg()} : Channels{g.cg(), g.kg()};
}

int64_t padded_in(int64_t channels, Backend be) { return round_up(std::max<int64_t>(channels, 1), format_of(be).k_multiple); }

size_t block_bytes(int64_t cin_padded, Backend be) {
    return (size_t)cin_padded * kBlock * format_of(be).element;
}

// One axis of a tap sum (see brgemm_conv.h): output position q is written
// at q * out_step + out_base and reads the padded input at q * in_step +
// offset[i] for its taps i (tap[i] the kernel index along the axis).
struct Axis {
    int64_t q = 0, out_step = 1, out_base = 0, in_step = 1;
    int ntaps = 0;
    int64_t offset[kMaxTaps];
    int64_t tap[kMaxTaps];
};

// Axis `a` of the forward pass: in_step the stride, offset t * d - pad.
Axis forward_axis(const ConvGeometry &g, int a) {
    Axis x;
    x.q = g.out[a];
    x.in_step = g.stride[a];
    x.ntaps = (int)g.kernel[a];
    for (int t = 0; t < x.ntaps; ++t) {
        x.tap[t] = t;
        x.offset[t] = t * g.dilation[a] - g.pad_begin[a];
    }
    return x;
}

// Axis `a` of backward-data's stride phase p: dx positions i = q * s + p;
// i + pad - t * d must be a multiple of s, and dy's o = (i + pad - t * d) / s
// = q + (p + pad - t * d) / s.
Axis backward_data_axis(const ConvGeometry &g, int a, int64_t p) {
    Axis x;
    const int64_t s = g.stride[a];
    x.q = g.in[a] > p ? ceil_div(g.in[a] - p, s) : 0;
    x.out_step = s;
    x.out_base = p;
    x.in_step = 1;
    for (int64_t t = 0; t < g.kernel[a]; ++t) {
        const int64_t num = p + g.pad_begin[a] - t * g.dilation[a];
        if (((num % s) + s) % s != 0) continue;
        x.tap[x.ntaps] = t;
        x.offset[x.ntaps] = floor_div(num, s);
        ++x.ntaps;
    }
    return x;
}

// The phases of an axis that have outputs: forward has one; backward-data
// one per stride residue that is a dx position.
int64_t phases(const ConvGeometry &g, conv_op_t op, int a) {
    return op == CONV_OP_FORWARD ? 1 : std::min(g.stride[a], g.in[a]);
}

Axis axis_of(const ConvGeometry &g, conv_op_t op, int a, int64_t p) {
    return op == CONV_OP_FORWARD ? forward_axis(g, a) : backward_data_axis(g, a, p);
}

// The zero-padded copy of the input along each axis: `lo` zeros before
// element 0, `len` elements in all -- enough for every read of every phase
// (the last axis's output blocks rounded up to 32 positions).
struct Padded {
    int64_t lo[3], len[3], cin, cin_p;  // channels per group, padded to the reduction multiple
    // Elements from one position to the next: cin_p, plus a cache line where
    // cin_p's bytes are a multiple of 256 -- rows of A 2^k bytes apart fall
    // into the same few L1 sets (a 1x1 layer over 2048 channels ran its
    // kernel at 28 GFLOP/s so).
    int64_t pitch;
    size_t bytes_per_group_image() const { return (size_t)(len[0] * len[1] * len[2] * pitch); }
};

// Whether the tap sum's blocks run along output rows (a forward pass
// strided in H or W), not across the flattened plane (see run_tap_sum).
bool rows_mode(const ConvGeometry &g, conv_op_t op) {
    return op == CONV_OP_FORWARD && (g.stride[1] != 1 || g.stride[2] != 1);
}

Padded padded_of(const ConvGeometry &g, conv_op_t op, Backend be) {
    Padded pd{};
    const int64_t *in = op == CONV_OP_FORWARD ? g.in : g.out;  // what the tap sum reads
    for (int a = 0; a < 3; ++a) {
        int64_t lo = 0, hi = in[a];
        for (int64_t p = 0; p < phases(g, op, a); ++p) {
            const Axis x = axis_of(g, op, a, p);
            if (x.q == 0) continue;
            // rows mode (a strided forward): the last axis's blocks read up to
            // 32 positions; flat mode's overrun lands in the copy's end slack
            const int64_t qr = a == 2 && rows_mode(g, op) ? round_up(x.q, kBlock) : x.q;
            for (int t = 0; t < x.ntaps; ++t) {
                lo = std::max(lo, -x.offset[t]);
                hi = std::max(hi, (qr - 1) * x.in_step + x.offset[t] + 1);
            }
        }
        pd.lo[a] = lo;
        pd.len[a] = lo + hi;
    }
    const Channels ch = channels_of(g, op != CONV_OP_FORWARD);
    pd.cin = ch.in;
    pd.cin_p = padded_in(ch.in, be);
    const int64_t es = (int64_t)format_of(be).element;
    pd.pitch = pd.cin_p * es % 256 == 0 ? pd.cin_p + 64 / es : pd.cin_p;
    return pd;
}

// The input of a tap sum (x forward, dy backward-data) as a zero-padded
// channels-last copy per image and group, in the backend's element type.
void pack_input(const ConvGeometry &g, conv_op_t op, conv_dtype_t dt, const Padded &pd, Backend be,
                const void *src, void *dst, ThreadPool &pool, int threads) {
    const bool fwd = op == CONV_OP_FORWARD, bf16 = format_of(be).element == 2;
    const int64_t *in = fwd ? g.in : g.out, channels = fwd ? g.c : g.k;
    const Strides st = strides_of(g.layout, channels, in);
    const int64_t rows = g.n * g.groups * pd.len[0] * pd.len[1];
    const size_t es = format_of(be).element;
    pool.parallel_for(rows, [&](int64_t row, int) {
        const int64_t hp = row % pd.len[1], dp = row / pd.len[1] % pd.len[0];
        const int64_t grp = row / (pd.len[0] * pd.len[1]) % g.groups, n = row / (pd.len[0] * pd.len[1] * g.groups);
        char *out = (char *)dst + (size_t)row * pd.len[2] * pd.pitch * es;
        const int64_t d = dp - pd.lo[0], h = hp - pd.lo[1];
        if (d < 0 || d >= in[0] || h < 0 || h >= in[1]) {
            std::memset(out, 0, (size_t)pd.len[2] * pd.pitch * es);
            return;
        }
        for (int64_t wp = 0; wp < pd.len[2]; ++wp) {
            char *px = out + (size_t)wp * pd.pitch * es;
            const int64_t w = wp - pd.lo[2];
            int64_t c = 0;
            if (w >= 0 && w < in[2]) {
                const int64_t base = n * st.n + grp * pd.cin * st.c + d * st.d + h * st.h + w * st.w;
                for (; c < pd.cin; ++c) put(px, c, load(src, dt, base + c * st.c), bf16);
            }
            std::memset(px + c * es, 0, (size_t)(pd.pitch - c) * es);
        }
    }, threads);
}

// Scratch of one thread of the tap sum: the C block and the batch's pointers.
size_t slot_bytes(const ConvGeometry &g) {
    return align(kBlock * kBlock * sizeof(float)) + align(2 * sizeof(void *) * (size_t)g.kernel_size());
}

}  // namespace

// -------------------------------------------------------------- routing

Route route(const ConvGeometry &g, conv_dtype_t dtype, conv_math_t math) {
    (void)g;
    if (dtype == CONV_DTYPE_BFLOAT16) {
        const Backend be = tile_backend_or_avx512();
        if (be == Backend::avx512) return {be, "bfloat16 needs AMX tiles, which this process lacks"};
        return {be, nullptr};
    }
    if (dtype != CONV_DTYPE_FLOAT32) return {Backend::avx512, "computes bfloat16 and float32 only"};
    if (math == CONV_MATH_FAST && tile_backend_or_avx512() != Backend::avx512)
        return {tile_backend_or_avx512(), nullptr};  // bf16 products, fp32 sums
    if (cpu_isa() != Isa::avx512) return {Backend::avx512, "float32 needs AVX-512"};
    return {Backend::avx512, nullptr};
}

const char *why_not_geometry(const ConvGeometry &g) {
    for (int a = 0; a < 3; ++a)
        if (g.kernel[a] > kMaxTaps) return "a kernel axis longer than 64 taps";
    if (g.groups > 1 && g.cg() == 1 && g.kg() <= 1)
        return "depthwise: depthwise_direct computes it without padding channels to a block";
    return nullptr;
}

const char *Solver::why_not_dtype(conv_dtype_t dtype) const {
    return dtype == CONV_DTYPE_BFLOAT16 || dtype == CONV_DTYPE_FLOAT32 ? nullptr
                                                                       : "computes bfloat16 and float32 only";
}

const char *Solver::why_not(const ConvGeometry &g, conv_op_t op) const {
    static const char *const kOnly[] = {"computes the forward pass only (brgemm_forward)",
                                        "computes the backward-data pass only (brgemm_backward_data)",
                                        "computes the backward-filter pass only (brgemm_backward_filter)"};
    if (op != op_) return kOnly[op_];
    return why_not_geometry(g);
}

const char *Solver::why_not_problem(const Problem &p) const { return route(p.g, p.dtype, p.math).why; }

size_t Solver::workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype, int threads) const {
    Problem p;
    p.g = g, p.op = op, p.dtype = dtype, p.threads = threads;
    return workspace_bytes(p);
}

// ------------------------------------------------------------- weights

size_t packed_weight_bytes(const ConvGeometry &g, Backend be, bool transposed) {
    const Channels ch = channels_of(g, transposed);
    return (size_t)g.groups * (size_t)ceil_div(ch.out, kBlock) * (size_t)g.kernel_size() *
           block_bytes(padded_in(ch.in, be), be);
}

// An element of w as the packed blocks hold it.
template <class Out>
Out packed(float v) {
    if constexpr (std::is_same_v<Out, bf16_t>)
        return to_bf16(v);
    else
        return v;
}
template <class Out>
Out packed(bf16_t v) {
    if constexpr (std::is_same_v<Out, bf16_t>)
        return v;  // bf16 to bf16: the bits as they are
    else
        return from_bf16(v);
}

// The blocks of output block kb of group grp, every tap's (the taps' blocks
// are consecutive, `block` elements each), from w's rows (a filter, k, its
// (channel, tap) elements in the layout's order) each read in order.
// Element (ci, col) of a tap's block lies at (ci / 2 * 32 + col) * 2 + ci
// % 2 (Pairs) or ci * 32 + col.
template <class Src, class Out, bool Pairs>
void pack_block(const ConvGeometry &g, bool transposed, const Src *w, int64_t grp, int64_t kb, Out *out,
                int64_t block) {
    const Channels ch = channels_of(g, transposed);
    const int64_t taps = g.kernel_size(), cg = g.cg(), cols = std::min<int64_t>(kBlock, ch.out - kb * kBlock);
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    auto put_at = [&](int64_t tap, int64_t ci, int64_t col, Src v) {
        out[tap * block + (Pairs ? (ci / 2 * kBlock + col) * 2 + ci % 2 : ci * kBlock + col)] = packed<Out>(v);
    };
    if (!transposed) {
        // Element (ci, co) is w[grp * Kg + co][ci][tap]: a row a column.
        // The 32 rows walked together, each in order, so that a tap's
        // block is written 32 columns at a time (row by row, the taps'
        // blocks took turns and did not stay in L1: 0.83x).
        const Src *row0 = w + (grp * g.kg() + kb * kBlock) * cg * taps;
        const int64_t row = cg * taps, step = Pairs ? 2 : 1;  // w's rows; a block row's columns
        for (int64_t ci = 0; ci < ch.in; ++ci)
            for (int64_t tap = 0; tap < taps; ++tap) {
                const Src *at = row0 + (last ? tap * cg + ci : ci * taps + tap);
                Out *to = out + tap * block + (Pairs ? ci / 2 * kBlock * 2 + ci % 2 : ci * kBlock);
                for (int64_t col = 0; col < cols; ++col) to[col * step] = packed<Out>(at[col * row]);
            }
        return;
    }
    for (int64_t ci = 0; ci < ch.in; ++ci) {  // element (ci, co) is w[grp * Kg + ci][co][tap]: a row a ci
        const Src *row = w + (grp * g.kg() + ci) * cg * taps;
        const int64_t co0 = kb * kBlock;
        if (last)
            for (int64_t tap = 0; tap < taps; ++tap)
                for (int64_t col = 0; col < cols; ++col) put_at(tap, ci, col, row[tap * cg + co0 + col]);
        else
            for (int64_t col = 0; col < cols; ++col)
                for (int64_t tap = 0; tap < taps; ++tap) put_at(tap, ci, col, row[(co0 + col) * taps + tap]);
    }
}

// Block (group, output block, tap): the padded input channels x 32 output
// channels; pair-interleaved for the tiles, plain rows otherwise. An item
// is a (group, output block) with every tap: w is read once, in order (a
// scalar loop through a dtype switch per element, a block per tap reading
// w at a stride of its taps, was 64% of a one-shot bf16 forward on AMX).
void pack_weights(const ConvGeometry &g, conv_dtype_t dt, Backend be, bool transposed, const void *w,
                  void *out, ThreadPool &pool, int threads) {
    const Channels ch = channels_of(g, transposed);
    const int64_t cin_p = padded_in(ch.in, be), blocks = ceil_div(ch.out, kBlock), taps = g.kernel_size();
    const bool bf16 = format_of(be).element == 2, src16 = dt == CONV_DTYPE_BFLOAT16;  // bf16 blocks are pair-interleaved
    const size_t bb = block_bytes(cin_p, be);
    const int64_t block = cin_p * kBlock;  // elements of one tap's block
    pool.parallel_for(g.groups * blocks, [&](int64_t item, int) {
        const int64_t kb = item % blocks, grp = item / blocks;
        void *blk = (char *)out + (size_t)item * taps * bb;
        std::memset(blk, 0, taps * bb);  // channels and filters past the problem's: zero
        if (src16 && bf16)
            pack_block<bf16_t, bf16_t, true>(g, transposed, (const bf16_t *)w, grp, kb, (bf16_t *)blk, block);
        else if (src16)
            pack_block<bf16_t, float, false>(g, transposed, (const bf16_t *)w, grp, kb, (float *)blk, block);
        else if (bf16)
            pack_block<float, bf16_t, true>(g, transposed, (const float *)w, grp, kb, (bf16_t *)blk, block);
        else
            pack_block<float, float, false>(g, transposed, (const float *)w, grp, kb, (float *)blk, block);
    }, threads);
}

// ------------------------------------------------------------- tap sum

// The padded copy's bytes, with a block of positions of slack after its
// last plane (the junk rows of a flat block read up to 32 positions on).
size_t padded_copy_bytes(const ConvGeometry &g, const Padded &pd, Backend be) {
    return align(((size_t)g.n * (size_t)g.groups * pd.bytes_per_group_image() + (size_t)(kBlock * pd.pitch)) *
                 format_of(be).element);
}

size_t tap_sum_workspace_bytes(const ConvGeometry &g, conv_op_t op, Backend be, int threads) {
    const Padded pd = padded_of(g, op, be);
    return align(packed_weight_bytes(g, be, op != CONV_OP_FORWARD)) + padded_copy_bytes(g, pd, be) +
           (size_t)threads * slot_bytes(g);
}

void run_tap_sum(const ConvArgs &a, Backend be, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *a.g;
    const bool fwd = a.op == CONV_OP_FORWARD;
    const Padded pd = padded_of(g, a.op, be);
    const size_t es = format_of(be).element;
    // The weights: the plan's prepared copy, or packed here.
    const void *packed = a.prepared;
    if (!packed) {
        pack_weights(g, a.dtype, be, !fwd, a.w, ws, pool, threads);
        packed = ws;
    }
    char *xp = (char *)ws + align(packed_weight_bytes(g, be, !fwd));
    char *slots = xp + padded_copy_bytes(g, pd, be);
    pack_input(g, a.op, a.dtype, pd, be, fwd ? a.x : a.y, xp, pool, threads);
    // The slack: zeros, so junk rows stay finite.
    std::memset(xp + (size_t)g.n * (size_t)g.groups * pd.bytes_per_group_image() * es, 0,
                (size_t)(kBlock * pd.pitch) * es);

    const Channels ch = channels_of(g, !fwd);
    const int64_t blocks = ceil_div(ch.out, kBlock), taps = g.kernel_size();
    const size_t bb = block_bytes(pd.cin_p, be), image = pd.bytes_per_group_image() * es;
    void *out = fwd ? a.y : a.x;
    const int64_t *out_sp = fwd ? g.out : g.in;
    const Strides ost = strides_of(g.layout, fwd ? g.k : g.c, out_sp);
    const int64_t col_bytes = pd.pitch * (int64_t)es;  // one padded position
    const bool relu = fwd ? g.activation == CONV_ACTIVATION_RELU : a.relu;
    // A B row: 32 floats, or 32 pairs of bf16 -- 128 bytes either way.
    const int64_t b_row_bytes = kBlock * (int64_t)es * (format_of(be).pair_b ? 2 : 1);

    // Every phase with outputs (at most as many as dx has positions); each
    // is one unstrided tap sum. The 32 rows of a block are 32 output
    // positions along the last axis ("rows" mode) or, where the last two
    // axes read the input at unit steps, along the flattened (H x padded W)
    // plane ("flat" mode): position m = q1 * len[2] + q2 reads the copy at m
    // plus the tap's offset, so a block runs across output rows and a 7x7
    // output wastes 22% of a block, not 78%. Positions past an output row's
    // end (q2 >= Q2) read the padding or the next row: junk rows of C,
    // never stored (rows of C are independent sums).
    for (int64_t p0 = 0; p0 < phases(g, a.op, 0); ++p0)
    for (int64_t p1 = 0; p1 < phases(g, a.op, 1); ++p1)
    for (int64_t p2 = 0; p2 < phases(g, a.op, 2); ++p2) {
        const Axis x0 = axis_of(g, a.op, 0, p0), x1 = axis_of(g, a.op, 1, p1), x2 = axis_of(g, a.op, 2, p2);
        if (x0.q == 0 || x1.q == 0 || x2.q == 0) continue;
        const int count = x0.ntaps * x1.ntaps * x2.ntaps;
        const bool flat = !rows_mode(g, a.op);  // unit steps along H and W
        // rows mode: a line is one output row (q0, q1); flat: one plane q0
        const int64_t lines = flat ? x0.q : x0.q * x1.q;
        const int64_t line_len = flat ? (x1.q - 1) * pd.len[2] + x2.q : x2.q;
        const int64_t mblocks = ceil_div(line_len, kBlock);
        const int64_t a_step = flat ? col_bytes : x2.in_step * col_bytes;  // between rows of A
        pool.parallel_for(g.n * g.groups * lines * blocks, [&](int64_t item, int slot) {
            const int64_t kb = item % blocks, line = item / blocks % lines;
            const int64_t ng = item / (blocks * lines), grp = ng % g.groups, n = ng / g.groups;
            const int64_t q0 = flat ? line : line / x1.q, q1 = flat ? 0 : line % x1.q;
            char *mine = slots + (size_t)slot * slot_bytes(g);
            float *c = (float *)mine;
            const void **aptr = (const void **)(mine + align(kBlock * kBlock * sizeof(float)));
            const void **bptr = aptr + taps;
            // The taps' first A rows (position 0 of the line) and weight blocks.
            int i = 0;
            const char *img = xp + (size_t)(n * g.groups + grp) * image;
            for (int t0 = 0; t0 < x0.ntaps; ++t0)
                for (int t1 = 0; t1 < x1.ntaps; ++t1) {
                    const int64_t d = q0 * x0.in_step + x0.offset[t0] + pd.lo[0];
                    const int64_t h = q1 * x1.in_step + x1.offset[t1] + pd.lo[1];
                    const char *row = img + ((d * pd.len[1] + h) * pd.len[2]) * col_bytes;
                    for (int t2 = 0; t2 < x2.ntaps; ++t2, ++i) {
                        aptr[i] = row + (x2.offset[t2] + pd.lo[2]) * col_bytes;
                        const int64_t tap = (x0.tap[t0] * g.kernel[1] + x1.tap[t1]) * g.kernel[2] + x2.tap[t2];
                        bptr[i] = (const char *)packed + (size_t)((grp * blocks + kb) * taps + tap) * bb;
                    }
                }
            const int64_t cols = std::min<int64_t>(kBlock, ch.out - kb * kBlock);
            const int64_t o0 = q0 * x0.out_step + x0.out_base;
            const int64_t chan0 = grp * ch.out + kb * kBlock;
            TileScope scope(be);
            for (int64_t mb = 0; mb < mblocks; ++mb) {
                const int64_t m0 = mb * kBlock, shift = m0 * a_step;
                for (int j = 0; j < count; ++j) aptr[j] = (const char *)aptr[j] + shift;
                run(be, {count, aptr, bptr, a_step, b_row_bytes, pd.cin_p}, c, false);
                for (int j = 0; j < count; ++j) aptr[j] = (const char *)aptr[j] - shift;
                const int64_t rows = std::min<int64_t>(kBlock, line_len - m0);
                for (int64_t r = 0; r < rows; ++r) {
                    const int64_t m = m0 + r;
                    const int64_t qa = flat ? m / pd.len[2] : q1, qb = flat ? m % pd.len[2] : m;
                    if (qb >= x2.q) continue;  // past an output row's end: junk
                    const int64_t o1 = qa * x1.out_step + x1.out_base, o2 = qb * x2.out_step + x2.out_base;
                    const int64_t base = n * ost.n + o0 * ost.d + o1 * ost.h + o2 * ost.w;
                    for (int64_t j = 0; j < cols; ++j) {
                        float v = c[r * kBlock + j];
                        if (a.bias) v += load(a.bias, a.dtype, chan0 + j);
                        if (relu && v < 0) v = 0;  // NaN stays NaN
                        store(out, a.dtype, base + (chan0 + j) * ost.c, v);
                    }
                }
            }
        }, threads);
    }
}

// ------------------------------------------------------ backward-filter

namespace {

// Per thread: dy's row as B (positions x 32 filters), the input rows a tap
// reads, split by column phase (padded column j = q * s + phase at
// [phase][channel][q]), A (the tiles' zero-tailed copy of one tap's
// positions), and the sums of every tap's 32 x 32 block.
struct FilterSlot {
    int64_t positions;  // output positions along the last axis, padded to the reduction multiple
    int64_t phase_len;  // columns of one phase of a padded input row
    size_t b_bytes, row_bytes, a_bytes, acc_bytes;
    size_t bytes() const { return b_bytes + row_bytes + a_bytes + acc_bytes; }
};

FilterSlot filter_slot(const ConvGeometry &g, Backend be) {
    FilterSlot s;
    const int64_t sw = g.stride[2];
    s.positions = round_up(std::max<int64_t>(g.out[2], 1), std::max(format_of(be).k_multiple, 2));
    // Tap tw reads phase (tw * d) % s from column (tw * d) / s on, `positions` of them.
    s.phase_len = ((g.kernel[2] - 1) * g.dilation[2]) / sw + s.positions + 1;
    const size_t es = format_of(be).element;
    s.b_bytes = align((size_t)s.positions * kBlock * es);
    s.row_bytes = align((size_t)(sw * kBlock * s.phase_len) * es);
    s.a_bytes = align((size_t)s.positions * kBlock * es);
    s.acc_bytes = align((size_t)g.kernel_size() * kBlock * kBlock * sizeof(float));
    return s;
}

template <class S, class D>
D convert(S v);
template <>
float convert<float, float>(float v) { return v; }
template <>
bf16_t convert<float, bf16_t>(float v) { return to_bf16(v); }
template <>
bf16_t convert<bf16_t, bf16_t>(bf16_t v) { return v; }

// The pass with source elements S (the tensors' dtype) and packed ones D
// (the backend's).
template <class S, class D>
void backward_filter(const ConvArgs &a, Backend be, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *a.g;
    const FilterSlot fs = filter_slot(g, be);
    const bool pairs = format_of(be).pair_b, tiles = be != Backend::avx512;
    const int64_t kblocks = ceil_div(g.kg(), kBlock), cblocks = ceil_div(g.cg(), kBlock);
    const int64_t taps = g.kernel_size(), P = fs.positions, OW = g.out[2], L = fs.phase_len;
    const int64_t sw = g.stride[2], dw = g.dilation[2], pw = g.pad_begin[2], W = g.in[2];
    const Strides xs = strides_of(g.layout, g.c, g.in), ys = strides_of(g.layout, g.k, g.out);
    const S *x = (const S *)a.x, *dy = (const S *)a.y;
    pool.parallel_for(g.groups * kblocks * cblocks, [&](int64_t item, int slot) {
        const int64_t cb = item % cblocks, kb = item / cblocks % kblocks, grp = item / (cblocks * kblocks);
        char *mine = (char *)ws + (size_t)slot * fs.bytes();
        D *bmat = (D *)mine;
        D *rows = (D *)(mine + fs.b_bytes);
        D *amat = (D *)(mine + fs.b_bytes + fs.row_bytes);
        float *acc = (float *)(mine + fs.b_bytes + fs.row_bytes + fs.a_bytes);
        std::memset(acc, 0, (size_t)taps * kBlock * kBlock * sizeof(float));
        std::memset(bmat, 0, fs.b_bytes);  // filters past K and positions past OW stay 0
        const int64_t k0 = grp * g.kg() + kb * kBlock, c0 = grp * g.cg() + cb * kBlock;
        const int64_t kn = std::min<int64_t>(kBlock, g.kg() - kb * kBlock);
        const int64_t cn = std::min<int64_t>(kBlock, g.cg() - cb * kBlock);
        TileScope scope(be);
        for (int64_t n = 0; n < g.n; ++n)
            for (int64_t od = 0; od < g.out[0]; ++od)
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                    // B: dy's row, positions x filters (pairs of positions on the tiles).
                    const S *yrow = dy + n * ys.n + od * ys.d + oh * ys.h;
                    for (int64_t j = 0; j < kn; ++j)
                        for (int64_t p = 0; p < OW; ++p)
                            bmat[pairs ? (p / 2 * kBlock + j) * 2 + p % 2 : p * kBlock + j] =
                                convert<S, D>(yrow[p * ys.w + (k0 + j) * ys.c]);
                    for (int64_t td = 0; td < g.kernel[0]; ++td)
                        for (int64_t th = 0; th < g.kernel[1]; ++th) {
                            const int64_t id = od * g.stride[0] + td * g.dilation[0] - g.pad_begin[0];
                            const int64_t ih = oh * g.stride[1] + th * g.dilation[1] - g.pad_begin[1];
                            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) continue;
                            // The 32 channels' input row, zero-padded, split by column phase.
                            std::memset(rows, 0, fs.row_bytes);
                            const S *xrow = x + n * xs.n + id * xs.d + ih * xs.h;
                            for (int64_t ph = 0; ph < sw; ++ph) {
                                // padded column q * sw + ph is input column q * sw + ph - pw
                                const int64_t q_lo = std::max<int64_t>(0, ceil_div(std::max<int64_t>(pw - ph, 0), sw));
                                const int64_t q_hi = std::min(L, ceil_div(std::max<int64_t>(W + pw - ph, 0), sw));
                                for (int64_t r = 0; r < cn; ++r) {
                                    D *dst = rows + (ph * kBlock + r) * L;
                                    const S *src = xrow + (c0 + r) * xs.c + (ph - pw) * xs.w;
                                    for (int64_t q = q_lo; q < q_hi; ++q) dst[q] = convert<S, D>(src[q * sw * xs.w]);
                                }
                            }
                            for (int64_t tw = 0; tw < g.kernel[2]; ++tw) {
                                const int64_t ph = tw * dw % sw, q0 = tw * dw / sw;
                                const D *arow = rows + (ph * kBlock) * L + q0;
                                const void *ap = arow, *bp = bmat;
                                int64_t a_row_bytes = L * (int64_t)sizeof(D), k = OW;
                                if (tiles) {  // 32-position chunks: a copy with a zero tail
                                    for (int64_t r = 0; r < kBlock; ++r) {
                                        std::memcpy(amat + r * P, arow + r * L, (size_t)OW * sizeof(D));
                                        std::memset(amat + r * P + OW, 0, (size_t)(P - OW) * sizeof(D));
                                    }
                                    ap = amat, a_row_bytes = P * (int64_t)sizeof(D), k = P;
                                }
                                const int64_t tap = (td * g.kernel[1] + th) * g.kernel[2] + tw;
                                run(be, {1, &ap, &bp, a_row_bytes, kBlock * (int64_t)sizeof(D) * (pairs ? 2 : 1), k},
                                    acc + tap * kBlock * kBlock, true);
                            }
                        }
                }
        for (int64_t tap = 0; tap < taps; ++tap)
            for (int64_t r = 0; r < cn; ++r)
                for (int64_t j = 0; j < kn; ++j)
                    store(a.w, a.dtype, filter_index(g, k0 + j, cb * kBlock + r, tap),
                          acc[(tap * kBlock + r) * kBlock + j]);
    }, threads);
}

}  // namespace

size_t backward_filter_workspace_bytes(const ConvGeometry &g, Backend be, int threads) {
    return (size_t)threads * filter_slot(g, be).bytes();
}

// dw[k][c][tap] = sum over images and output positions of dy[k] x[c at the
// tap's input position]. Items: (group, block of 32 filters, block of 32
// channels), each summing over every image and row in one fixed order
// (bit-identical results at any thread count).
void run_backward_filter(const ConvArgs &a, Backend be, void *ws, ThreadPool &pool, int threads) {
    const bool bf16_in = a.dtype == CONV_DTYPE_BFLOAT16, bf16_packed = format_of(be).element == 2;
    if (bf16_in)
        backward_filter<bf16_t, bf16_t>(a, be, ws, pool, threads);
    else if (bf16_packed)
        backward_filter<float, bf16_t>(a, be, ws, pool, threads);
    else
        backward_filter<float, float>(a, be, ws, pool, threads);
    if (a.bias)
        channel_sums({a.g->layout, a.g->n, a.g->k, a.g->out_size()}, a.dtype, a.y, a.bias, pool, threads);
}

}  // namespace conv::cpu::brgemm
