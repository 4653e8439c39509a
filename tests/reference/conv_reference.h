/*
 * conv_reference.h -- a naive, direct convolution used to check libconv.
 *
 * Deliberately the simplest possible loops, computed in double precision,
 * sharing no code with the library: tests and convbench compare against it.
 * Data pointers are float or double arrays (see `dtype`), dense, in the
 * layout given by the problem (channels-first or channels-last; filters
 * OI<spatial> or O<spatial>I respectively), exactly as libconv stores them.
 */
#ifndef CONV_REFERENCE_H
#define CONV_REFERENCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types: bfloat16 is read as the float of its 16 bits and stored
 * rounded to nearest, ties to even. */
typedef enum { REF_FLOAT32 = 0, REF_FLOAT64 = 1, REF_BFLOAT16 = 2 } ref_dtype;

typedef struct ref_problem {
    int spatial;           /* 1..3 */
    int channels_last;     /* 0: N C spatial, 1: N spatial C */
    int64_t n, c, k, groups;
    int64_t in[3];         /* input spatial sizes (first `spatial` used) */
    int64_t kernel[3];
    int64_t out[3];        /* output spatial sizes (the caller computes them) */
    int64_t stride[3], dilation[3], pad_begin[3];
    int relu;              /* forward applies max(0, .) after the bias */
} ref_problem;

/* Element counts of x (N,C,in), w (K,C/G,kernel), y (N,K,out). */
int64_t ref_x_elements(const ref_problem *p);
int64_t ref_w_elements(const ref_problem *p);
int64_t ref_y_elements(const ref_problem *p);

/* Linear index of a logical coordinate (n, c, s0, s1, s2 with unused spatial
 * coords 0) in a tensor of the problem's layout; `dims` = N, C, spatial. */
int64_t ref_offset(int spatial, int channels_last, const int64_t *dims, int64_t n, int64_t c,
                   const int64_t *pos);

/* Full passes; outputs are written as `dtype`. `b`/`db` may be NULL. */
void ref_forward(const ref_problem *p, ref_dtype dtype, const void *x, const void *w,
                 const void *b, void *y);
void ref_backward_data(const ref_problem *p, ref_dtype dtype, const void *w, const void *dy,
                       void *dx);
void ref_backward_filter(const ref_problem *p, ref_dtype dtype, const void *x, const void *dy,
                         void *dw, void *db);

/* One element of each pass, by its linear index in the output tensor, in
 * double. `abs_sum` (nullable) receives the sum of |products| that went into
 * it, the scale against which a rounding error is judged. For big layers
 * convbench checks a sample of elements this way. */
double ref_forward_at(const ref_problem *p, ref_dtype dtype, const void *x, const void *w,
                      const void *b, int64_t index, double *abs_sum);
double ref_backward_data_at(const ref_problem *p, ref_dtype dtype, const void *w,
                            const void *dy, int64_t index, double *abs_sum);
double ref_backward_filter_at(const ref_problem *p, ref_dtype dtype, const void *x,
                              const void *dy, int64_t index, double *abs_sum);

#ifdef __cplusplus
}
#endif

#endif
