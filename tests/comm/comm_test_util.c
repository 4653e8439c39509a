#define _POSIX_C_SOURCE 200809L
#include "comm_test_util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const conv_dtype_t ct_dtypes[4] = {CONV_DTYPE_FLOAT32, CONV_DTYPE_FLOAT64, CONV_DTYPE_FLOAT16,
                                   CONV_DTYPE_BFLOAT16};

/* ------------------------------------------------------------ ranks */

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static char g_failure[2048];
static int g_failed;

void ct_fail(const char *fmt, ...)
{
    pthread_mutex_lock(&g_mutex);
    if (!g_failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_failure, sizeof g_failure, fmt, ap);
        va_end(ap);
        g_failed = 1;
    }
    pthread_mutex_unlock(&g_mutex);
}

void ct_reset(void)
{
    pthread_mutex_lock(&g_mutex);
    g_failed = 0;
    g_failure[0] = '\0';
    pthread_mutex_unlock(&g_mutex);
}

const char *ct_failure(void)
{
    const char *r;
    pthread_mutex_lock(&g_mutex);
    r = g_failed ? g_failure : NULL;
    pthread_mutex_unlock(&g_mutex);
    return r;
}

typedef struct rank_arg {
    ct_rank_fn fn;
    int rank, n;
    void *user;
} rank_arg;

static void *rank_main(void *p)
{
    rank_arg *a = (rank_arg *)p;
    a->fn(a->rank, a->n, a->user);
    return NULL;
}

int ct_run_ranks(int n, ct_rank_fn fn, void *user)
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    rank_arg *a = calloc((size_t)n, sizeof *a);
    int started = 0, rc = 0;
    if (!t || !a) {
        free(t);
        free(a);
        return -1;
    }
    for (int r = 0; r < n; ++r) {
        a[r].fn = fn;
        a[r].rank = r;
        a[r].n = n;
        a[r].user = user;
        if (pthread_create(&t[r], NULL, rank_main, &a[r]) != 0) {
            rc = -1;
            break;
        }
        ++started;
    }
    for (int r = 0; r < started; ++r) pthread_join(t[r], NULL);
    free(t);
    free(a);
    return rc;
}

double ct_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ct_sleep(double seconds)
{
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------- elements */

size_t ct_size(conv_dtype_t d)
{
    return d == CONV_DTYPE_FLOAT64 ? 8 : d == CONV_DTYPE_FLOAT32 ? 4 : 2;
}

const char *ct_dtype_name(conv_dtype_t d)
{
    switch (d) {
    case CONV_DTYPE_FLOAT32: return "fp32";
    case CONV_DTYPE_FLOAT64: return "fp64";
    case CONV_DTYPE_FLOAT16: return "fp16";
    case CONV_DTYPE_BFLOAT16: return "bf16";
    default: return "?";
    }
}

static float bits_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t float_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static double half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, -24);
    return s * ldexp((double)(m | 0x400), e - 25);
}

uint16_t ct_to_half(float f)
{
#if defined(__FLT16_MAX__)
    _Float16 h = (_Float16)f;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
#else
    /* nearest of the two neighbours among all finite halves, by search */
    if (isnan(f)) return 0x7e00;
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a >= 65520.0) return sign | 0x7c00;
    uint16_t lo = 0, hi = 0x7bff;
    while (lo < hi) { /* largest half <= a */
        uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if (half_value(mid) <= a) lo = mid; else hi = (uint16_t)(mid - 1);
    }
    double dl = a - half_value(lo), du = half_value((uint16_t)(lo + 1)) - a;
    if (du < dl || (du == dl && (lo & 1))) ++lo;
    return sign | lo;
#endif
}

uint16_t ct_to_bf16(float f)
{
    if (isnan(f)) return 0x7fc0;
    uint32_t b = float_bits(f);
    uint32_t lo = b & 0xffff0000u;         /* toward zero */
    uint32_t hi = lo + 0x10000u;           /* next away from zero */
    double a = fabs((double)f), vl = fabs((double)bits_float(lo)), vh = fabs((double)bits_float(hi));
    double dl = a - vl, dh = vh - a;
    uint32_t pick = (dh < dl || (dh == dl && ((lo >> 16) & 1))) ? hi : lo;
    return (uint16_t)(pick >> 16);
}

double ct_get(conv_dtype_t d, const void *p, int64_t i)
{
    switch (d) {
    case CONV_DTYPE_FLOAT32: return ((const float *)p)[i];
    case CONV_DTYPE_FLOAT64: return ((const double *)p)[i];
    case CONV_DTYPE_FLOAT16: return half_value(((const uint16_t *)p)[i]);
    default: return (double)bits_float((uint32_t)((const uint16_t *)p)[i] << 16);
    }
}

void ct_set(conv_dtype_t d, void *p, int64_t i, double v)
{
    switch (d) {
    case CONV_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CONV_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case CONV_DTYPE_FLOAT16: ((uint16_t *)p)[i] = ct_to_half((float)v); break;
    default: ((uint16_t *)p)[i] = ct_to_bf16((float)v); break;
    }
}

double ct_value(int rank, int64_t i, int salt)
{
    return (double)((i * 7 + (int64_t)rank * 13 + (int64_t)salt * 5) % 17) - 8.0;
}

void ct_fill(conv_dtype_t d, void *p, int64_t count, int rank, int salt)
{
    for (int64_t i = 0; i < count; ++i) ct_set(d, p, i, ct_value(rank, i, salt));
}

double ct_expected(conv_dtype_t d, int n, int64_t i, int salt, int average)
{
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += ct_value(r, i, salt);
    if (!average) return sum;
    if (d == CONV_DTYPE_FLOAT64) return sum / n;
    float q = (float)sum / (float)n;  /* the float sum is exact */
    if (d == CONV_DTYPE_FLOAT16) return half_value(ct_to_half(q));
    if (d == CONV_DTYPE_BFLOAT16) return (double)bits_float((uint32_t)ct_to_bf16(q) << 16);
    return q;
}

int64_t ct_check(conv_dtype_t d, const void *p, int64_t count, int n, int salt, int average)
{
    const size_t es = ct_size(d);
    unsigned char want[8];
    for (int64_t i = 0; i < count; ++i) {
        ct_set(d, want, 0, ct_expected(d, n, i, salt, average));
        if (memcmp(want, (const unsigned char *)p + (size_t)i * es, es) != 0) return i + 1;
    }
    return 0;
}
