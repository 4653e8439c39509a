/*
 * test_address_limit.c -- under an address-space limit (ulimit -v, here
 * setrlimit(RLIMIT_AS) from inside, set a little above what the process
 * already uses) every pass returns -- SUCCESS, equal to the reference, or
 * OUT_OF_MEMORY -- and never hangs.
 *
 * Each OpenBLAS GEMM takes a 128 MiB packing buffer from OpenBLAS's pool,
 * mapped on a thread's first call, and OpenBLAS retries a failed mmap
 * forever. The limit leaves room for one such buffer, so with 4 threads
 * computing GEMMs at once the others cannot map theirs: before libconv
 * checked the room first (src/cpu/blas.cpp), the pass never returned and
 * ctest's timeout failed the test. Now those GEMMs are computed by
 * libconv's own loops.
 *
 * Runs with OPENBLAS_NUM_THREADS=1 (tests/CMakeLists.txt): OpenBLAS's own
 * worker threads, started when the library is loaded and never used by
 * libconv, map their buffers at their start and would race with the limit
 * (docs/errors.md, "Memory"). Not under sanitizers (their shadow memory
 * cannot live under a limit).
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { kThreads = 4 };
static const rlim_t kHeadroom = (rlim_t)200 << 20; /* one OpenBLAS buffer, and the data */

static conv_context_t ctx;
static struct rlimit saved;

static long vm_size_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmSize:", 7) == 0) kb = strtol(line + 7, NULL, 10);
    if (f) fclose(f);
    return kb;
}

static int setup(void **state)
{
    (void)state;
    if (conv_context_create(CONV_DEVICE_CPU, 0, &ctx) != CONV_STATUS_SUCCESS ||
        conv_context_set_threads(ctx, kThreads) != CONV_STATUS_SUCCESS)
        return -1;
    long kb = vm_size_kb();
    if (kb <= 0 || getrlimit(RLIMIT_AS, &saved) != 0) return -1;
    struct rlimit lim = saved;
    lim.rlim_cur = (rlim_t)kb * 1024 + kHeadroom;
    if (saved.rlim_max != RLIM_INFINITY && lim.rlim_cur > saved.rlim_max) return -1;
    return setrlimit(RLIMIT_AS, &lim) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    setrlimit(RLIMIT_AS, &saved);
    conv_context_destroy(ctx);
    return 0;
}

/* The three passes of the GEMM algorithms, both dtypes, batch 8 so that
 * all 4 threads compute GEMMs at once; each exactly equal to the reference
 * (integer data). */
static void test_gemm_passes_return(void **state)
{
    (void)state;
    static const conv_algo_t algos[] = {CONV_ALGO_IM2COL_GEMM, CONV_ALGO_GEMM_1X1};
    tu_rng r;
    tu_seed(&r, 19);
    char failure[1024];
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++)
        for (int d = 0; d < 2; d++)
            for (int op = 0; op < 3; op++) {
                const int64_t in[2] = {12, 12};
                const int64_t kernel[2] = {3, 3}, one[2] = {1, 1};
                tu_problem tp;
                tu_problem_init(&tp, 2, 8, 16, 24, in,
                                algos[a] == CONV_ALGO_GEMM_1X1 ? one : kernel);
                tp.dtype = d ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
                tp.algo = algos[a];
                tp.bias = op != CONV_OP_BACKWARD_DATA;
                assert_true(tu_resolve(&tp));
                char what[128];
                snprintf(what, sizeof what, "%s %s %s", conv_algo_name(tp.algo),
                         d ? "fp64" : "fp32", tu_op_name((conv_op_t)op));
                if (tu_run_checked(ctx, NULL, &tp, (conv_op_t)op, &r, 0, 0, what, failure,
                                   sizeof failure))
                    fail_msg("%s", failure);
            }
}

/* What does not fit is OUT_OF_MEMORY, not a hang or a crash. */
static void test_too_large_is_out_of_memory(void **state)
{
    (void)state;
    const int64_t dims[4] = {1, 1, 1, (int64_t)1 << 28}; /* 1 GiB of floats */
    conv_tensor_t t = NULL;
    assert_int_equal(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4,
                                        dims, &t),
                     CONV_STATUS_OUT_OF_MEMORY);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_passes_return),
        cmocka_unit_test(test_too_large_is_out_of_memory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
