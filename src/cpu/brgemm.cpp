#include "cpu/brgemm.h"

#include <algorithm>
#include <cstring>

#include "cpu/avx512.h"
#include "cpu/tiles.h"

namespace conv::cpu::brgemm {
namespace {

// The 2 x 2 tile block over the batch: per batch element, per 32-element
// chunk of the reduction, two A tiles (rows 0-15, 16-31), two B tiles
// (columns 0-15, 16-31) and four tdpbf16ps. The pair-rows of a B chunk are
// 16 rows of the packed block.
template <class Ops>
void tile_block(const Batch &bt, float *c, bool accumulate) {
    constexpr long kCLd = kBlock * sizeof(float);
    if (accumulate)
        Ops::load_c(c, kCLd);
    else
        Ops::zero_c();
    const int64_t chunks = bt.k / tiles::kChunk;
    const long as = (long)bt.a_row_bytes, bs = (long)bt.b_row_bytes;
    for (int i = 0; i < bt.count; ++i) {
        const char *a = (const char *)bt.a[i], *b = (const char *)bt.b[i];
        for (int64_t q = 0; q < chunks; ++q) {
            const char *aq = a + q * tiles::kRowBytes, *bq = b + q * tiles::kRows * bs;
            Ops::load_a(aq, aq + tiles::kRows * as, as);
            Ops::load_b(bq, bq + tiles::kRowBytes, bs);
            Ops::dot4();
        }
    }
    Ops::store_c(c, kCLd);
}

#if CONV_HAVE_AVX512_KERNELS
// fp32: 8 rows x 32 columns of C in 16 registers, a B row in two, one
// broadcast of A per row and reduction step, over reduction steps
// [k0, k1) of one batch element; C from memory unless `fresh`.
CONV_TARGET_AVX512 void avx512_rows(const char *a, int64_t a_row_bytes, const char *b,
                                    int64_t b_row_bytes, int64_t k0, int64_t k1, float *c, bool fresh) {
    __m512 acc[8][2];
    const float *arow[8];
    for (int r = 0; r < 8; ++r) {
        arow[r] = (const float *)(a + r * a_row_bytes);
        for (int j = 0; j < 2; ++j)
            acc[r][j] = fresh ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * kBlock + 16 * j);
    }
    for (int64_t k = k0; k < k1; ++k) {
        const float *brow = (const float *)(b + k * b_row_bytes);
        const __m512 b0 = _mm512_loadu_ps(brow), b1 = _mm512_loadu_ps(brow + 16);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
            const __m512 av = _mm512_set1_ps(arow[r][k]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < 8; ++r)
        for (int j = 0; j < 2; ++j) _mm512_storeu_ps(c + r * kBlock + 16 * j, acc[r][j]);
}
#endif

// The reduction in chunks of kKc steps, each chunk's B rows (8 KiB) and A
// rows (8 KiB) reused from L1 by the four 8-row blocks: a B of thousands of
// rows (a 1x1 layer over 2048 channels: 256 KiB) was otherwise streamed from
// L2 once per 8 rows.
constexpr int64_t kKc = 64;

void avx512_block(const Batch &bt, float *c, bool accumulate) {
#if CONV_HAVE_AVX512_KERNELS
    bool fresh = !accumulate;
    for (int i = 0; i < bt.count; ++i) {
        const char *a = (const char *)bt.a[i], *b = (const char *)bt.b[i];
        for (int64_t k0 = 0; k0 < bt.k; k0 += kKc) {
            const int64_t k1 = std::min(bt.k, k0 + kKc);
            for (int r0 = 0; r0 < kBlock; r0 += 8)
                avx512_rows(a + r0 * bt.a_row_bytes, bt.a_row_bytes, b, bt.b_row_bytes, k0, k1,
                            c + r0 * kBlock, fresh);
            fresh = false;
        }
    }
    if (fresh) std::memset(c, 0, kBlock * kBlock * sizeof(float));  // an empty batch
#else
    (void)bt, (void)c, (void)accumulate;
#endif
}

}  // namespace

Format format_of(Backend b) {
    if (b == Backend::avx512) return {sizeof(float), 1, false};
    return {sizeof(uint16_t), tiles::kChunk, true};
}

void run(Backend be, const Batch &batch, float *c, bool accumulate) {
    switch (be) {
    case Backend::avx512: avx512_block(batch, c, accumulate); return;
#if CONV_HAVE_HW_TILES
    case Backend::tiles_hw: tile_block<tiles::HwTiles>(batch, c, accumulate); return;
#else
    case Backend::tiles_hw: return;
#endif
    case Backend::tiles_emulated: tile_block<tiles::EmuTiles>(batch, c, accumulate); return;
    }
}

TileScope::TileScope(Backend be) : be_(be) {
#if CONV_HAVE_HW_TILES
    if (be_ == Backend::tiles_hw) tiles::HwTiles::configure();
#endif
    if (be_ == Backend::tiles_emulated) tiles::EmuTiles::configure();
}

TileScope::~TileScope() {
#if CONV_HAVE_HW_TILES
    if (be_ == Backend::tiles_hw) tiles::HwTiles::release();
#endif
    if (be_ == Backend::tiles_emulated) tiles::EmuTiles::release();
}

Backend tile_backend_or_avx512() {
    switch (tile_backend()) {
    case TileBackend::hardware: return Backend::tiles_hw;
    case TileBackend::emulated: return Backend::tiles_emulated;
    default: return Backend::avx512;
    }
}

}  // namespace conv::cpu::brgemm
