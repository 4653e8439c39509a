/*
 * report.c -- what convbench prints: the header line, one row per layer and
 * pass, whole-suite totals, and the same rows as JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h> /* openblas_get_corename, openblas_get_config */

#include "convbench.h"

#define ALGO_WIDTH 12

static double gflops(double flops, double ms)
{
    return ms > 0 ? flops / (ms * 1e6) : NAN;
}

void cb_print_header(const cb_bench *b)
{
    const cb_options *o = b->opt;
    char threads[16] = "-";
    if (b->threads > 0)
        snprintf(threads, sizeof threads, "%d", b->threads);
    printf("libconv %s | device %s | %s %s | batch %lld | threads %s | OpenBLAS %s (%s)\n",
           conv_version_string(), b->device == CONV_DEVICE_CUDA ? "cuda:0" : "cpu",
           cb_dtype_name(o->dtype), cb_layout_name(o->layout), (long long)o->batch, threads,
           openblas_get_corename(), openblas_get_config());
    if (conv_version() != CONV_VERSION_NUMBER)
        printf("warning: the loaded libconv is %u, convbench was built against %u\n",
               conv_version(), (unsigned)CONV_VERSION_NUMBER);
    const char *core = getenv("OPENBLAS_CORETYPE");
    if (core)
        printf("warning: OPENBLAS_CORETYPE=%s is set: OpenBLAS uses that core's kernels, "
               "which may be slower than the ones it would pick\n",
               core);
}

void cb_print_table_head(const char *suite, int nw, int sw)
{
    const cb_suite *s = cb_find_suite(suite);
    printf("\n== %s%s%s%s\n", suite, s ? " (" : "", s ? s->about : "", s ? ")" : "");
    printf("%-*s %4s  %-*s  %-10s  %-*s %10s %9s  %s\n", nw, "layer", "n", sw, "shape", "op",
           ALGO_WIDTH, "algorithm", "ms", "GFLOP/s", "check");
}

void cb_print_row(const cb_row *r, int nw, int sw)
{
    printf("%-*s %4d  %-*s  %-10s  %-*s ", nw, r->layer->name, r->layer->count, sw, r->shape,
           cb_op_name(r->op), ALGO_WIDTH, r->algo);
    if (r->status != CB_ROW_OK) {
        printf("%s: %s\n", r->status == CB_ROW_SKIPPED ? "n/a" : "FAILED", r->error);
        return;
    }
    printf("%10.3f %9.2f  ", r->ms, gflops(r->flops, r->ms));
    const cb_verify_result *v = &r->verify;
    switch (v->status) {
    case CB_VERIFY_NONE: printf("-\n"); break;
    case CB_VERIFY_OK: printf("ok\n"); break;
    case CB_VERIFY_FAIL:
        if (v->nan_count)
            printf("FAIL %lld never written (NaN)", (long long)v->nan_count);
        else
            printf("FAIL max_rel_err %.3g > tol %.3g", v->max_rel_err, v->tol);
        printf("\n%*s%s\n", nw + 2, "", v->detail);
        break;
    }
}

void cb_print_totals(const char *suite, const cb_row *rows, int n_rows, int ops)
{
    printf("-- %s totals, each layer times its count:\n", suite);
    for (int op = 0; op < 3; op++) {
        if (!(ops & (1 << op)))
            continue;
        double ms = 0, flops = 0;
        int convs = 0, left_out = 0;
        for (int i = 0; i < n_rows; i++) {
            const cb_row *r = &rows[i];
            if (r->op != (conv_op_t)op)
                continue;
            if (r->status != CB_ROW_OK) {
                left_out++;
                continue;
            }
            ms += r->layer->count * r->ms;
            flops += r->layer->count * r->flops;
            convs += r->layer->count;
        }
        printf("   %-10s ", cb_op_name((conv_op_t)op));
        if (convs)
            printf("%4d convs %10.3f GFLOP %10.3f ms %9.2f GFLOP/s", convs, flops * 1e-9, ms,
                   gflops(flops, ms));
        else
            printf("no row succeeded");
        if (left_out)
            printf("  (left out: %d failed or n/a)", left_out);
        printf("\n");
    }
}

/* ---------------------------------------------------------------- JSON */

static void json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity: those become null. */
static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

static void json_row(FILE *f, const cb_bench *b, const cb_row *r)
{
    static const char *const status[] = {"ok", "failed", "n/a"};
    const cb_options *o = b->opt;
    int ok = r->status == CB_ROW_OK;
    fputs("  {\"suite\": ", f);
    json_string(f, r->suite);
    fputs(", \"layer\": ", f);
    json_string(f, r->layer->name);
    fprintf(f, ", \"count\": %d, \"shape\": ", r->layer->count);
    json_string(f, r->shape);
    fprintf(f, ", \"op\": \"%s\", \"dtype\": \"%s\", \"layout\": \"%s\", \"batch\": %lld",
            cb_op_name(r->op), cb_dtype_name(o->dtype), cb_layout_name(o->layout),
            (long long)o->batch);
    fputs(", \"threads\": ", f);
    json_number(f, b->threads > 0 ? b->threads : NAN);
    fprintf(f, ", \"device\": \"%s\", \"algorithm\": ",
            b->device == CONV_DEVICE_CUDA ? "cuda" : "cpu");
    json_string(f, r->algo);
    fprintf(f, ", \"status\": \"%s\", \"error\": ", status[r->status]);
    json_string(f, ok ? NULL : r->error);
    fputs(", \"ms\": ", f);
    json_number(f, ok ? r->ms : NAN);
    fputs(", \"min_ms\": ", f);
    json_number(f, ok ? r->min_ms : NAN);
    fprintf(f, ", \"repeats\": %d, \"gflops\": ", r->repeats);
    json_number(f, ok ? gflops(r->flops, r->ms) : NAN);
    fputs(", \"flops\": ", f);
    json_number(f, r->flops);
    fputs(", \"bytes\": ", f);
    json_number(f, r->bytes);
    fprintf(f, ", \"workspace_bytes\": %zu, \"verified\": %s, \"max_rel_err\": ",
            r->workspace_bytes,
            r->verify.status == CB_VERIFY_NONE ? "null"
            : r->verify.status == CB_VERIFY_OK ? "true"
                                               : "false");
    int checked = r->verify.status != CB_VERIFY_NONE;
    json_number(f, checked ? r->verify.max_rel_err : NAN);
    fputs(", \"tol\": ", f);
    json_number(f, checked ? r->verify.tol : NAN);
    fprintf(f, ", \"checked\": %lld, \"nan_count\": %lld}", (long long)r->verify.checked,
            (long long)r->verify.nan_count);
}

int cb_write_json(const char *path, const cb_bench *b, const cb_row *rows, int n_rows)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "convbench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputs("[\n", f);
    for (int i = 0; i < n_rows; i++) {
        json_row(f, b, &rows[i]);
        fputs(i + 1 < n_rows ? ",\n" : "\n", f);
    }
    fputs("]\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "convbench: error writing %s\n", path);
        return -1;
    }
    return 0;
}
