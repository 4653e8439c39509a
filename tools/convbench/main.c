/*
 * main.c -- convbench: options, device and context, the suites, the report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convbench.h"

#define MAX_SUITES 16 /* room for every built-in suite */

typedef struct run_list {
    const char *name;
    const cb_layer *layers;
    int n;
} run_list;

/* The --layer set, else --suite (a name or "all"), else `fallback`. */
static int select_suites(const cb_options *o, const char *fallback, run_list *out)
{
    if (o->n_custom) {
        out[0] = (run_list){"custom", o->custom, o->n_custom};
        return 1;
    }
    const char *want = o->suite ? o->suite : fallback;
    int n = 0;
    for (int i = 0; i < cb_n_suites && n < MAX_SUITES; i++)
        if (strcmp(want, "all") == 0 || strcmp(want, cb_suites[i].name) == 0)
            out[n++] = (run_list){cb_suites[i].name, cb_suites[i].layers, cb_suites[i].n_layers};
    return n;
}

static void column_widths(const run_list *s, int *nw, int *sw)
{
    char shape[96];
    *nw = 5;
    *sw = 5;
    for (int i = 0; i < s->n; i++) {
        int len = (int)strlen(s->layers[i].name);
        *nw = len > *nw ? len : *nw;
        cb_layer_shape(&s->layers[i], shape, sizeof shape);
        len = (int)strlen(shape);
        *sw = len > *sw ? len : *sw;
    }
}

static void list_suites(const run_list *sel, int n_sel)
{
    for (int s = 0; s < n_sel; s++) {
        const cb_suite *suite = cb_find_suite(sel[s].name);
        int nw, sw, total = 0;
        char shape[96];
        column_widths(&sel[s], &nw, &sw);
        for (int i = 0; i < sel[s].n; i++)
            total += sel[s].layers[i].count;
        printf("%s%s%s%s: %d layers, %d convolutions\n", sel[s].name, suite ? " (" : "",
               suite ? suite->about : "", suite ? ")" : "", sel[s].n, total);
        for (int i = 0; i < sel[s].n; i++) {
            cb_layer_shape(&sel[s].layers[i], shape, sizeof shape);
            printf("  %-*s x%-3d %s\n", nw, sel[s].layers[i].name, sel[s].layers[i].count, shape);
        }
    }
}

/* Device, context, thread count and workspace; returns 0 or an exit status. */
static int open_bench(const cb_options *o, cb_bench *b)
{
    int gpus = 0;
    if (conv_device_count(CONV_DEVICE_CUDA, &gpus) != CONV_STATUS_SUCCESS)
        gpus = 0;
    b->opt = o;
    b->device = o->device >= 0 ? (conv_device_t)o->device
                               : gpus > 0 ? CONV_DEVICE_CUDA : CONV_DEVICE_CPU;
    if (b->device == CONV_DEVICE_CUDA && gpus == 0) {
        fprintf(stderr, "convbench: --device cuda: no usable CUDA GPU (this libconv was built "
                        "without CUDA, or the machine has none); try --device cpu\n");
        return 2;
    }
    conv_status_t s;
    const char *call = "conv_context_create";
    s = conv_context_create(b->device, 0, &b->ctx);
    if (s == CONV_STATUS_SUCCESS && o->math >= 0) {
        call = "conv_context_set_math";
        s = conv_context_set_math(b->ctx, (conv_math_t)o->math);
    }
    if (s == CONV_STATUS_SUCCESS && b->device == CONV_DEVICE_CPU) {
        call = "conv_context_set_threads";
        if (o->threads)
            s = conv_context_set_threads(b->ctx, o->threads);
        if (s == CONV_STATUS_SUCCESS)
            s = conv_context_get_threads(b->ctx, &b->threads);
    }
    if (s == CONV_STATUS_SUCCESS) {
        call = "conv_workspace_create";
        s = conv_workspace_create(b->ctx, &b->ws);
    }
    if (s == CONV_STATUS_SUCCESS && b->device == CONV_DEVICE_CUDA) {
        call = "conv_tensor_create";
        s = conv_tensor_create(b->ctx, o->dtype, o->layout, 3, (const int64_t[]){1, 1, 1},
                               &b->sync);
    }
    if (s != CONV_STATUS_SUCCESS) {
        fprintf(stderr, "convbench: %s: %s: %s\n", call, conv_status_string(s),
                conv_last_error());
        return 1;
    }
    if (o->peer) { /* after the context: the peer takes its thread count */
        char err[2048]; /* room for the places a missing library was looked for */
        int rc = o->peer->open(b, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "convbench: --peer %s: %s\n", o->peer->name, err);
            return rc;
        }
        b->peer_open = 1;
    }
    return 0;
}

/* --peak, before and after the suite (the host's speed drifts; the totals
 * are read against the first). */
static void print_peak(cb_bench *b, const char *when)
{
    double peak = cb_fma_peak();
    if (!b->fma_peak)
        b->fma_peak = peak;
    if (peak > 0) {
        printf("fma peak %s the suite: %.1f GFLOP/s per thread (12 independent %d-bit FMA "
               "chains, median of 7 runs)\n", when, peak, cb_fma_peak_bits());
        /* Once: what a vector load per FMA leaves of it (kernels whose
         * operands are shifted loads, such as depthwise taps, meet this). */
        if (strcmp(when, "before") == 0)
            printf("fma fed by L1 loads: %.1f GFLOP/s with each FMA's vector loaded aligned, "
                   "%.1f with it 4 bytes off\n", cb_fma_load_peak(0), cb_fma_load_peak(4));
    } else
        printf("fma peak: not measured (no AVX2 or AVX-512 FMA loop on this CPU)\n");
    int near_cpu = 0, far_cpu = 0;
    const double trip = cb_line_round_trip_ns(&near_cpu, &far_cpu);
    if (trip > 0)
        printf("line round trip %s the suite: %.0f ns between CPUs %d and %d (what each parallel region "
               "waits on a few times)\n", when, trip, near_cpu, far_cpu);
    else
        printf("line round trip: not measured (fewer than two CPUs in this thread's affinity, or no thread "
               "could be started or pinned)\n");
}

static void close_bench(cb_bench *b)
{
    if (b->peer_open)
        b->opt->peer->close();
    conv_tensor_destroy(b->sync);
    conv_workspace_destroy(b->ws);
    conv_context_destroy(b->ctx);
}

int main(int argc, char **argv)
{
    static cb_options o; /* static: it holds the custom layers */
    int rc = cb_parse_options(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;

    run_list sel[MAX_SUITES];
    if (o.list) {
        list_suites(sel, select_suites(&o, "all", sel));
        return 0;
    }
    int n_sel = select_suites(&o, "resnet50", sel);

    cb_bench b = {0};
    if ((rc = open_bench(&o, &b)) != 0) {
        close_bench(&b);
        return rc;
    }
    if (o.overhead) {
        cb_print_header(&b);
        rc = cb_run_overhead(&b);
        close_bench(&b);
        return rc;
    }
    int max_rows = 0;
    for (int s = 0; s < n_sel; s++)
        max_rows += 3 * sel[s].n;
    cb_row *rows = calloc((size_t)max_rows, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "convbench: out of memory\n");
        close_bench(&b);
        return 1;
    }

    cb_print_header(&b);
    if (o.peak)
        print_peak(&b, "before");
    /* On a terminal, a progress line ("[12/53] res4a_branch2b ...") while a
     * layer runs, replaced by its rows; elsewhere (a pipe, a file) the rows
     * alone, each as its layer finishes. */
    const int progress = isatty(STDOUT_FILENO);
    int layers = 0, done = 0;
    for (int s = 0; s < n_sel; s++)
        layers += sel[s].n;
    int n_rows = 0;
    for (int s = 0; s < n_sel; s++) {
        int nw, sw, first = n_rows;
        column_widths(&sel[s], &nw, &sw);
        cb_print_table_head(&o, sel[s].name, nw, sw);
        for (int i = 0; i < sel[s].n; i++) {
            if (progress) {
                printf("[%d/%d] %s ...", ++done, layers, sel[s].layers[i].name);
                fflush(stdout);
            }
            int n = cb_run_layer(&b, sel[s].name, &sel[s].layers[i], &rows[n_rows]);
            if (progress)
                printf("\r\033[K");
            for (int j = 0; j < n; j++)
                cb_print_row(&o, &rows[n_rows + j], nw, sw);
            n_rows += n;
            fflush(stdout);
        }
        cb_print_totals(&b, sel[s].name, &rows[first], n_rows - first);
    }

    if (o.peak)
        print_peak(&b, "after");
    int status = 0;
    for (int i = 0; i < n_rows; i++)
        if (rows[i].status == CB_ROW_FAILED || rows[i].verify.status == CB_VERIFY_FAIL)
            status = 1;
    if (o.json && cb_write_json(o.json, &b, rows, n_rows) != 0)
        status = 1;
    free(rows);
    close_bench(&b);
    return status;
}
