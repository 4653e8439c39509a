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

#define ALGO_WIDTH 16 /* the longest name, winograd_4x4_3x3 */

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
    /* OpenBLAS's own thread count: libconv's CPU engine sets it to 1 when the
     * context is created and parallelises around the GEMMs itself, so 1 here
     * means the context's threads are libconv's; cores is what OpenBLAS sees. */
    int blas_threads = openblas_get_num_threads();
    char rounds[48] = "";
    if (o->rounds > 1)
        snprintf(rounds, sizeof rounds, ", %d rounds%s", o->rounds, o->peer ? " alternating with the peer" : "");
    printf("libconv %s | device %s | %s %s | batch %lld | threads %s | %s%s | OpenBLAS %s, "
           "%d thread%s, %d cores (%s)\n",
           conv_version_string(), b->device == CONV_DEVICE_CUDA ? "cuda:0" : "cpu",
           cb_dtype_name(o->dtype), cb_layout_name(o->layout), (long long)o->batch, threads,
           o->prepared ? "plans, weights prepared" : "one-shot calls", rounds,
           openblas_get_corename(), blas_threads, blas_threads == 1 ? "" : "s",
           openblas_get_num_procs(), openblas_get_config());
    if (b->device == CONV_DEVICE_CPU) {
        char name[256] = ""; /* "cpu <model> (<isa>)": the CPU every figure is from */
        conv_context_get_device_name(b->ctx, name, sizeof name);
        printf("%s\n", name);
    }
    if (b->device == CONV_DEVICE_CUDA) {
        char name[256] = "";
        conv_context_get_device_name(b->ctx, name, sizeof name);
        conv_math_t m = CONV_MATH_DEFAULT;
        conv_context_get_math(b->ctx, &m);
        printf("gpu %s | math %s\n", name,
               m == CONV_MATH_FAST ? "fast (TF32 allowed)" : m == CONV_MATH_STRICT ? "strict" : "default");
    }
    if (o->peer) {
        char line[CB_PEER_LINE];
        o->peer->describe(b, line, sizeof line);
        printf("peer %s\n", line);
    }
    if (conv_version() != CONV_VERSION_NUMBER)
        printf("warning: the loaded libconv is %u, convbench was built against %u\n",
               conv_version(), (unsigned)CONV_VERSION_NUMBER);
    const char *core = getenv("OPENBLAS_CORETYPE");
    if (core)
        printf("warning: OPENBLAS_CORETYPE=%s is set: OpenBLAS uses that core's kernels, "
               "which may be slower than the ones it would pick\n",
               core);
}

void cb_print_table_head(const cb_options *o, const char *suite, int nw, int sw)
{
    const cb_suite *s = cb_find_suite(suite);
    printf("\n== %s%s%s%s\n", suite, s ? " (" : "", s ? s->about : "", s ? ")" : "");
    printf("%-*s %4s  %-*s  %-10s  %-*s %10s %9s  ", nw, "layer", "n", sw, "shape", "op",
           ALGO_WIDTH, "algorithm", "ms", "GFLOP/s");
    if (o->peer)
        printf("%10s %6s  ", "peer ms", "ratio");
    printf("check\n");
}

/* The peer's two columns: its median and the ratio (peer ms / ms, > 1:
 * libconv faster; the median of the rounds' ratios, runner.c). */
static void print_peer_columns(const cb_row *r)
{
    switch (r->peer_status) {
    case CB_PEER_OK:
        printf("%10.3f %6.2f  ", r->peer_ms, r->ratio);
        break;
    case CB_PEER_NA: printf("%10s %6s  ", "n/a", "-"); break;
    case CB_PEER_FAILED: printf("%10s %6s  ", "FAILED", "-"); break;
    case CB_PEER_NOT_RUN: printf("%10s %6s  ", "-", "-"); break;
    }
}

void cb_print_row(const cb_options *o, const cb_row *r, int nw, int sw)
{
    printf("%-*s %4d  %-*s  %-10s  %-*s ", nw, r->layer->name, r->layer->count, sw, r->shape,
           cb_op_name(r->op), ALGO_WIDTH, r->algo);
    if (r->status != CB_ROW_OK) {
        printf("%s: %s\n", r->status == CB_ROW_SKIPPED ? "n/a" : "FAILED", r->error);
        return;
    }
    printf("%10.3f %9.2f  ", r->ms, gflops(r->flops, r->ms));
    if (o->peer)
        print_peer_columns(r);
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
    if (o->peer && r->peer_status == CB_PEER_FAILED)
        printf("%*s%s: %s\n", nw + 2, "", o->peer->name, r->peer_error);
}

/* Count-weighted sums over one pass (op < 0: every pass). */
typedef struct totals {
    double ms, flops;
    int convs, left_out;
    double peer_ms;   /* rows the peer ran */
    int peer_convs, peer_left_out;
    double both_ms, both_peer_ms; /* rows both ran: the ratio's */
    int both_convs;
} totals;

static totals sum_rows(const cb_row *rows, int n_rows, int op)
{
    totals t = {0};
    for (int i = 0; i < n_rows; i++) {
        const cb_row *r = &rows[i];
        int count = r->layer->count;
        if (op >= 0 && r->op != (conv_op_t)op)
            continue;
        if (r->status == CB_ROW_OK) {
            t.ms += count * r->ms;
            t.flops += count * r->flops;
            t.convs += count;
        } else {
            t.left_out++;
        }
        if (r->peer_status == CB_PEER_OK) {
            t.peer_ms += count * r->peer_ms;
            t.peer_convs += count;
        } else {
            t.peer_left_out++;
        }
        if (r->status == CB_ROW_OK && r->peer_status == CB_PEER_OK) {
            t.both_ms += count * r->ms;
            t.both_peer_ms += count * r->peer_ms;
            t.both_convs += count;
        }
    }
    return t;
}

static void print_totals_line(const cb_bench *b, const char *label, const totals *t)
{
    const cb_options *o = b->opt;
    printf("   %-10s ", label);
    if (t->convs) {
        printf("%4d convs %10.3f GFLOP %10.3f ms %9.2f GFLOP/s", t->convs, t->flops * 1e-9,
               t->ms, gflops(t->flops, t->ms));
        if (b->fma_peak > 0 && b->threads > 0)
            printf(" = %3.0f%% of peak", 100 * gflops(t->flops, t->ms) / (b->fma_peak * b->threads));
    } else {
        printf("no row succeeded");
    }
    if (t->left_out)
        printf("  (left out: %d failed or n/a)", t->left_out);
    if (o->peer) {
        printf(" | %s ", o->peer->name);
        if (!t->peer_convs) {
            printf("n/a");
        } else {
            printf("%10.3f ms", t->peer_ms);
            if (t->peer_left_out)
                printf(" (%d convs; left out: %d rows)", t->peer_convs, t->peer_left_out);
            if (t->both_convs && t->both_ms > 0) {
                printf("  ratio %.2f", t->both_peer_ms / t->both_ms);
                if (t->both_convs != t->convs || t->both_convs != t->peer_convs)
                    printf(" over the %d convs both ran", t->both_convs);
            }
        }
    }
    printf("\n");
}

void cb_print_totals(const cb_bench *b, const char *suite, const cb_row *rows, int n_rows)
{
    const cb_options *o = b->opt;
    printf("-- %s totals, each layer times its count%s:\n", suite,
           o->peer ? "; ratio = peer ms / libconv ms, > 1: libconv faster" : "");
    int n_ops = 0;
    for (int op = 0; op < 3; op++) {
        if (!(o->ops & (1 << op)))
            continue;
        totals t = sum_rows(rows, n_rows, op);
        print_totals_line(b, cb_op_name((conv_op_t)op), &t);
        n_ops++;
    }
    /* With a peer and several passes: the suite as a whole (a training step
     * when all three are selected). */
    if (o->peer && n_ops > 1) {
        totals t = sum_rows(rows, n_rows, -1);
        print_totals_line(b, "all passes", &t);
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
    /* The geometry as numbers, for other tools (tools/convbench/torch_peer.py). */
    const cb_layer *l = r->layer;
    fprintf(f, ", \"c\": %lld, \"k\": %lld, \"groups\": %lld", (long long)l->c, (long long)l->k,
            (long long)l->groups);
    const char *const arr_name[] = {"in", "kernel", "stride", "pad_begin", "pad_end", "dilation"};
    const int64_t *arr[] = {l->in, l->kernel, l->stride, l->pad_begin, l->pad_end, l->dilation};
    for (int a = 0; a < 6; a++) {
        fprintf(f, ", \"%s\": [", arr_name[a]);
        for (int i = 0; i < l->spatial; i++)
            fprintf(f, "%s%lld", i ? ", " : "", (long long)arr[a][i]);
        fputc(']', f);
    }
    fprintf(f, ", \"math\": %d", o->math);
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
    fprintf(f, ", \"checked\": %lld, \"nan_count\": %lld", (long long)r->verify.checked,
            (long long)r->verify.nan_count);
    fprintf(f, ", \"prepared\": %s", o->prepared ? "true" : "false");
    fprintf(f, ", \"peer_apart\": %s", o->peer_apart ? "true" : "false");
    /* The peer's median for the same layer and pass and the implementation
     * it ran; null when it did not run (no --peer, f64 with oneDNN, or a
     * failure the text output shows). */
    fputs(", \"peer\": ", f);
    json_string(f, o->peer ? o->peer->name : NULL);
    fputs(", \"peer_ms\": ", f);
    json_number(f, r->peer_status == CB_PEER_OK ? r->peer_ms : NAN);
    fputs(", \"peer_impl\": ", f);
    json_string(f, r->peer_status == CB_PEER_OK && r->peer_impl[0] ? r->peer_impl : NULL);
    /* --peer-reorders: how many reorders its timed call ran beside the
     * primitive (0 where the caller's layouts are the primitive's). */
    fputs(", \"peer_reorders\": ", f);
    if (o->peer_reorders && r->peer_status == CB_PEER_OK)
        fprintf(f, "%d", r->peer_reorders);
    else
        fputs("null", f);
    fprintf(f, ", \"rounds\": %d, \"ratio\": ", r->rounds);
    json_number(f, r->peer_status == CB_PEER_OK ? r->ratio : NAN);
    /* The spread of the rounds' ratios: how far the host moved them. */
    fputs(", \"ratio_low\": ", f);
    json_number(f, r->peer_status == CB_PEER_OK ? r->ratio_low : NAN);
    fputs(", \"ratio_high\": ", f);
    json_number(f, r->peer_status == CB_PEER_OK ? r->ratio_high : NAN);
    fputc('}', f);
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
