/*
 * layer.c -- one layer: output size, the shape summary, and the --layer
 * spec syntax.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convbench.h"

const char cb_layer_syntax[] =
    "  --layer SPEC: comma-separated key=value pairs; lists are 'x'-separated per\n"
    "  spatial axis (D x H x W order), one value applies to every axis:\n"
    "    c=64            input channels (required)\n"
    "    k=64            output channels (default: c)\n"
    "    in=56x56        input size; 1 to 3 values give a 1-D, 2-D or 3-D layer (required)\n"
    "    kernel=3x3      kernel size (required)\n"
    "    stride=1        stride (default 1)\n"
    "    pad=1           padding; B:E pads B before and E after (pad=1:0x1:0) (default 0)\n"
    "    dil=1           dilation (default 1)\n"
    "    groups=1        groups; groups=c is depthwise (default 1)\n"
    "    count=1         occurrences, weights the totals (default 1)\n"
    "    name=custom     row label (default: custom)\n"
    "  e.g. --layer c=64,k=64,in=56x56,kernel=3x3,stride=1,pad=1\n";

int64_t cb_out_size(const cb_layer *l, int a)
{
    int64_t extent = (l->kernel[a] - 1) * l->dilation[a] + 1;
    return (l->in[a] + l->pad_begin[a] + l->pad_end[a] - extent) / l->stride[a] + 1;
}

/* Appends to buf at *pos, never past len. */
static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    if (*pos >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos += (size_t)n;
}

static int all_equal(const int64_t *v, int n)
{
    for (int i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return 1;
}

/* " s2" when every axis agrees, " s1x2x2" when not; `always_list` writes
 * every axis regardless (sizes read better as 56x56). */
static void put_axes(char *buf, size_t len, size_t *pos, const char *tag, const int64_t *v,
                     int n, int always_list)
{
    int m = (always_list || !all_equal(v, n)) ? n : 1;
    put(buf, len, pos, "%s", tag);
    for (int i = 0; i < m; i++)
        put(buf, len, pos, "%s%lld", i ? "x" : "", (long long)v[i]);
}

void cb_layer_shape(const cb_layer *l, char *buf, size_t len)
{
    size_t pos = 0;
    int n = l->spatial;
    buf[0] = '\0';
    put(buf, len, &pos, "%lld->%lld", (long long)l->c, (long long)l->k);
    put_axes(buf, len, &pos, " ", l->in, n, 1);
    put_axes(buf, len, &pos, " k", l->kernel, n, 1);
    put_axes(buf, len, &pos, " s", l->stride, n, 0);
    if (memcmp(l->pad_begin, l->pad_end, sizeof(int64_t) * (size_t)n) == 0) {
        put_axes(buf, len, &pos, " p", l->pad_begin, n, 0);
    } else {
        int m = (all_equal(l->pad_begin, n) && all_equal(l->pad_end, n)) ? 1 : n;
        put(buf, len, &pos, " p");
        for (int i = 0; i < m; i++)
            put(buf, len, &pos, "%s%lld:%lld", i ? "x" : "", (long long)l->pad_begin[i],
                (long long)l->pad_end[i]);
    }
    int64_t ones[CB_MAX_SPATIAL] = {1, 1, 1};
    if (memcmp(l->dilation, ones, sizeof(int64_t) * (size_t)n) != 0)
        put_axes(buf, len, &pos, " d", l->dilation, n, 0);
    if (l->groups != 1)
        put(buf, len, &pos, " g%lld", (long long)l->groups);
}

/* ------------------------------------------------------------- parsing */

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A whole-string integer in [lo, 2^31); the bound keeps every product of
 * two fields (kernel x dilation) inside int64_t. Returns 0 or -1. */
static int parse_int(const char *s, int64_t lo, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v >= ((long long)1 << 31))
        return -1;
    *out = v;
    return 0;
}

/* An 'x'-separated list of `n` values, or one value for every axis. Items
 * are "V", or "B:E" when `end` is given (then `out` gets B, `end` gets E). */
static int parse_axes(const char *key, const char *val, int n, int64_t lo, int64_t *out,
                      int64_t *end, char *err, size_t errlen)
{
    char tmp[128];
    if (strlen(val) >= sizeof tmp)
        return fail(err, errlen, "%s=%s: too long", key, val);
    strcpy(tmp, val);
    int m = 0;
    char *save = NULL;
    for (char *item = strtok_r(tmp, "x", &save); item; item = strtok_r(NULL, "x", &save)) {
        if (m == n)
            return fail(err, errlen, "%s=%s: more than %d values for a %d-D layer", key, val,
                        n, n);
        char *colon = end ? strchr(item, ':') : NULL;
        if (colon)
            *colon = '\0';
        if (parse_int(item, lo, &out[m]) ||
            (end && parse_int(colon ? colon + 1 : item, lo, &end[m])))
            return fail(err, errlen, "%s=%s: expected integers >= %lld%s", key, val,
                        (long long)lo, end ? " (or B:E pairs)" : "");
        m++;
    }
    if (m != 1 && m != n)
        return fail(err, errlen, "%s=%s: %d values for a %d-D layer (give 1 or %d)", key, val,
                    m, n, n);
    for (int i = m; i < n; i++) {
        out[i] = out[0];
        if (end)
            end[i] = end[0];
    }
    return 0;
}

int cb_parse_layer(const char *spec, cb_layer *l, char *err, size_t errlen)
{
    static const char *const keys[] = {"name", "c", "k", "in", "kernel", "stride",
                                       "pad", "dil", "groups", "count"};
    enum { NAME, C, K, IN, KERNEL, STRIDE, PAD, DIL, GROUPS, COUNT, NKEYS };
    const char *val[NKEYS] = {0};

    /* The copy lives as long as the program: the layer's name points into it. */
    char *copy = strdup(spec);
    if (!copy)
        return fail(err, errlen, "out of memory");
    char *save = NULL;
    for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return fail(err, errlen, "'%s' is not key=value", kv);
        *eq = '\0';
        int i = 0;
        while (i < NKEYS && strcmp(kv, keys[i]) != 0)
            i++;
        if (i == NKEYS)
            return fail(err, errlen, "unknown key '%s'", kv);
        if (val[i])
            return fail(err, errlen, "'%s' given twice", kv);
        val[i] = eq + 1;
    }
    if (!val[C] || !val[IN] || !val[KERNEL])
        return fail(err, errlen, "c=, in= and kernel= are required");

    memset(l, 0, sizeof *l);
    l->name = val[NAME] ? val[NAME] : "custom";
    int n = 1;
    for (const char *p = val[IN]; *p; p++)
        n += *p == 'x';
    if (n > CB_MAX_SPATIAL)
        return fail(err, errlen, "in=%s: 1 to %d sizes", val[IN], CB_MAX_SPATIAL);
    l->spatial = n;
    int64_t count = 1;
    l->groups = 1;
    if (parse_int(val[C], 1, &l->c) || (val[K] && parse_int(val[K], 1, &l->k)) ||
        (val[GROUPS] && parse_int(val[GROUPS], 1, &l->groups)) ||
        (val[COUNT] && (parse_int(val[COUNT], 1, &count) || count > 1000000)))
        return fail(err, errlen, "c, k, groups and count must be positive integers");
    l->count = (int)count;
    if (!val[K])
        l->k = l->c;
    if (parse_axes("in", val[IN], n, 1, l->in, NULL, err, errlen) ||
        parse_axes("kernel", val[KERNEL], n, 1, l->kernel, NULL, err, errlen) ||
        parse_axes("stride", val[STRIDE] ? val[STRIDE] : "1", n, 1, l->stride, NULL, err,
                   errlen) ||
        parse_axes("pad", val[PAD] ? val[PAD] : "0", n, 0, l->pad_begin, l->pad_end, err,
                   errlen) ||
        parse_axes("dil", val[DIL] ? val[DIL] : "1", n, 1, l->dilation, NULL, err, errlen))
        return -1;
    if (l->c % l->groups || l->k % l->groups)
        return fail(err, errlen, "c=%lld and k=%lld must both be divisible by groups=%lld",
                    (long long)l->c, (long long)l->k, (long long)l->groups);
    for (int a = 0; a < n; a++)
        if (cb_out_size(l, a) < 1)
            return fail(err, errlen, "the dilated kernel does not fit the padded input on axis %d",
                        a);
    return 0;
}
