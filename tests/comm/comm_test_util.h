/*
 * comm_test_util.h -- helpers of the communication tests (no CMocka, so the
 * MPI and GPU programs use them too): ranks as threads, failures recorded by
 * worker threads for the main thread to report, element access for the
 * four dtypes with reference roundings written independently of libconv's,
 * and the expected result of a reduction of integer-valued data.
 */
#ifndef COMM_TEST_UTIL_H
#define COMM_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "conv.h"

/* ------------------------------------------------------------ ranks */

typedef void (*ct_rank_fn)(int rank, int nranks, void *user);

/* Runs fn(rank, n, user) on n threads (rank 0 on a new thread too) and
 * joins them. Returns 0, or -1 when a thread could not be started. */
int ct_run_ranks(int n, ct_rank_fn fn, void *user);

/* Records the first failure (of any thread) since ct_reset(). */
void ct_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ct_reset(void);
/* The first failure's text, or NULL. */
const char *ct_failure(void);

/* In a void function run by a rank: record and return on a bad status. */
#define CT_OK(expr)                                                                   \
    do {                                                                              \
        conv_status_t ct_s_ = (expr);                                                 \
        if (ct_s_ != CONV_STATUS_SUCCESS) {                                           \
            ct_fail("%s:%d: %s -> %s: %s", __FILE__, __LINE__, #expr,                 \
                    conv_status_string(ct_s_), conv_last_error());                    \
            return;                                                                   \
        }                                                                             \
    } while (0)
#define CT_STATUS(expr, want)                                                         \
    do {                                                                              \
        conv_status_t ct_s_ = (expr);                                                 \
        if (ct_s_ != (want)) {                                                        \
            ct_fail("%s:%d: %s -> %s, want %s: %s", __FILE__, __LINE__, #expr,        \
                    conv_status_string(ct_s_), conv_status_string(want),              \
                    conv_last_error());                                               \
            return;                                                                   \
        }                                                                             \
    } while (0)
#define CT_TRUE(cond, ...)                                                            \
    do {                                                                              \
        if (!(cond)) {                                                                \
            ct_fail(__VA_ARGS__);                                                     \
            return;                                                                   \
        }                                                                             \
    } while (0)

double ct_now(void);          /* seconds, monotonic */
void ct_sleep(double seconds);

/* ---------------------------------------------------------- elements */

size_t ct_size(conv_dtype_t d);
const char *ct_dtype_name(conv_dtype_t d);
/* Element i of a buffer of dtype d, as a double. */
double ct_get(conv_dtype_t d, const void *p, int64_t i);
/* Stores v rounded to the dtype (nearest, ties to even). */
void ct_set(conv_dtype_t d, void *p, int64_t i, double v);
/* float -> binary16 / bfloat16 bits, rounding to nearest even, written
 * independently of libconv (binary16 through the compiler's _Float16 where
 * it has one). */
uint16_t ct_to_half(float f);
uint16_t ct_to_bf16(float f);

/* The integer value rank r contributes at element i: -8..8 (sums of up to
 * 8 ranks are exact in every dtype). */
double ct_value(int rank, int64_t i, int salt);
/* Fills p with ct_value(rank, i, salt) for i < count. */
void ct_fill(conv_dtype_t d, void *p, int64_t count, int rank, int salt);
/* The expected reduction of ct_value over n ranks at i: the exact sum, or
 * for average the float (double for FLOAT64) sum divided by n, rounded to
 * the dtype as conv.h specifies. */
double ct_expected(conv_dtype_t d, int n, int64_t i, int salt, int average);
/* 0 when p[i] == expected for every i < count (bit for bit after rounding
 * to the dtype), else the first bad index + 1. */
int64_t ct_check(conv_dtype_t d, const void *p, int64_t count, int n, int salt, int average);

extern const conv_dtype_t ct_dtypes[4];

#endif
