/*
 * test_tuning_file.c -- conv_context_save_tuning / conv_context_load_tuning
 * with good and bad files. A good file round-trips and its choices apply.
 * Every bad one is refused -- every truncation, every single-byte
 * corruption (three bit patterns at every offset), another format version,
 * another libconv version, another device, an unknown algorithm, a wrong
 * entry count, trailing data, an empty file -- with BAD_FILE and a message,
 * and the context's table is unchanged afterwards (shown by saving it again
 * and comparing bytes). Missing files, directories and unwritable paths give
 * IO_ERROR.
 */
#define _GNU_SOURCE /* mkdtemp, symlink */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static conv_context_t ctx;
static char dir[256];
static char path_good[320], path_bad[320], path_check[320];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/conv-tuning-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path_good, sizeof path_good, "%s/good.tuning", dir);
    snprintf(path_bad, sizeof path_bad, "%s/bad.tuning", dir);
    snprintf(path_check, sizeof path_check, "%s/check.tuning", dir);
    return conv_context_create(CONV_DEVICE_CPU, 0, &ctx) == CONV_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    conv_context_destroy(ctx);
    remove(path_good);
    remove(path_bad);
    remove(path_check);
    rmdir(dir);
    return 0;
}

/* ------------------------------------------------------------- files */

typedef struct text {
    char *data;
    size_t len;
} text;

static text read_file(const char *path)
{
    text t = {NULL, 0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    t.data = malloc((size_t)n + 1);
    t.len = fread(t.data, 1, (size_t)n, f);
    t.data[t.len] = '\0';
    fclose(f);
    assert_int_equal(t.len, (size_t)n);
    return t;
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The file format's checksum: FNV-1a 64 of every byte before its line. */
static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A file from its body (header and entries, each line ending in '\n'):
 * the checksum and closing lines are appended, correctly. */
static text with_checksum(const char *body)
{
    text t;
    size_t n = strlen(body);
    t.data = malloc(n + 64);
    t.len = (size_t)snprintf(t.data, n + 64, "%schecksum %016llx\nend\n", body,
                             (unsigned long long)fnv1a(body, n));
    return t;
}

/* The body of a good file: everything before its checksum line. */
static char *body_of(const text *good)
{
    char *at = strstr(good->data, "checksum ");
    assert_non_null(at);
    size_t n = (size_t)(at - good->data);
    char *b = malloc(n + 1);
    memcpy(b, good->data, n);
    b[n] = '\0';
    return b;
}

/* Replaces the first line starting with `prefix` by `line` (no '\n'). */
static char *replace_line(const char *body, const char *prefix, const char *line)
{
    const char *at = strstr(body, prefix);
    assert_non_null(at);
    const char *end = strchr(at, '\n');
    assert_non_null(end);
    size_t n = strlen(body) + strlen(line) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - body), body, line, end);
    return out;
}

/* ----------------------------------------------------- the context's table */

/* The context's table as bytes: saved to path_check and read back. */
static text table_bytes(void)
{
    assert_ok(conv_context_save_tuning(ctx, path_check));
    return read_file(path_check);
}

static int same_text(const text *a, const text *b)
{
    return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* Loading `data` fails with `want`; the message is non-empty (and contains
 * `says` when given); the table is byte for byte `before`. */
static void expect_refused(const char *what, const char *data, size_t len, conv_status_t want,
                           const char *says, const text *before, int check_table)
{
    write_file(path_bad, data, len);
    conv_status_t s = conv_context_load_tuning(ctx, path_bad);
    if (s != want)
        fail_msg("%s: status %d (%s), want %d; message \"%s\"", what, (int)s,
                 conv_status_string(s), (int)want, conv_last_error());
    if (!conv_last_error()[0])
        fail_msg("%s: empty message", what);
    if (says && !strstr(conv_last_error(), says))
        fail_msg("%s: message \"%s\" does not say \"%s\"", what, conv_last_error(), says);
    if (check_table) {
        text now = table_bytes();
        if (!same_text(&now, before))
            fail_msg("%s: the refused file changed the context's table", what);
        free(now.data);
    }
}

/* Fills the table by searching two problems (a 1x1 and a 3x3 layer). */
static void tune_two_problems(void)
{
    const int64_t in[2] = {9, 9}, k1[2] = {1, 1}, k3[2] = {3, 3};
    const int64_t *kernels[2] = {k1, k3};
    tu_rng r;
    tu_seed(&r, 17);
    for (int i = 0; i < 2; i++) {
        tu_problem tp;
        tu_case c;
        conv_desc_t d;
        int count = 0;
        conv_algo_t best, chosen;
        tu_problem_init(&tp, 2, 2, 4, 6, in, kernels[i]);
        assert_true(tu_resolve(&tp));
        assert_ok(tu_case_make(&c, ctx, &tp, 0));
        assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
        tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
        assert_ok(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, NULL, 1,
                                       &best, NULL, NULL, &count));
        assert_int_equal(count, 1);
        assert_ok(conv_chosen_algorithm(ctx, d, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, &chosen));
        assert_int_equal(chosen, best);
        conv_desc_destroy(d);
        tu_case_free(&c);
    }
}

/* --------------------------------------------------------------- tests */

static void test_round_trip(void **state)
{
    (void)state;
    assert_ok(conv_context_clear_tuning(ctx));
    text empty = table_bytes();
    tune_two_problems();
    assert_ok(conv_context_save_tuning(ctx, path_good));
    text good = read_file(path_good);
    assert_true(strncmp(good.data, "libconv-tuning 2\nlibrary ", 25) == 0);
    assert_non_null(strstr(good.data, "\nentries 2\n"));
    /* clear, load, save again: the same bytes */
    assert_ok(conv_context_clear_tuning(ctx));
    text cleared = table_bytes();
    assert_true(same_text(&cleared, &empty));
    assert_ok(conv_context_load_tuning(ctx, path_good));
    text again = table_bytes();
    assert_true(same_text(&again, &good));
    /* a file with no entries loads too, and adds nothing */
    write_file(path_bad, empty.data, empty.len);
    assert_ok(conv_context_load_tuning(ctx, path_bad));
    text still = table_bytes();
    assert_true(same_text(&still, &good));
    /* no temporary file is left beside the saved ones */
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        if (strstr(e->d_name, ".tmp"))
            fail_msg("temporary file %s left in %s", e->d_name, dir);
    closedir(d);
    free(empty.data);
    free(good.data);
    free(cleared.data);
    free(again.data);
    free(still.data);
}

/* Every prefix of a good file is refused and changes nothing. */
static void test_truncated(void **state)
{
    (void)state;
    assert_ok(conv_context_clear_tuning(ctx));
    tune_two_problems();
    assert_ok(conv_context_save_tuning(ctx, path_good));
    text good = read_file(path_good);
    assert_ok(conv_context_clear_tuning(ctx)); /* failed loads must leave it empty */
    text empty = table_bytes();
    for (size_t len = 0; len < good.len; len++) {
        char what[64];
        snprintf(what, sizeof what, "first %zu of %zu bytes", len, good.len);
        expect_refused(what, good.data, len, CONV_STATUS_BAD_FILE, NULL, &empty, len % 16 == 0);
    }
    expect_refused("empty file", "", 0, CONV_STATUS_BAD_FILE, "truncated", &empty, 1);
    text now = table_bytes();
    assert_true(same_text(&now, &empty));
    free(now.data);
    free(good.data);
    free(empty.data);
}

/* Every single-byte corruption of a good file is refused. */
static void test_corrupt(void **state)
{
    (void)state;
    assert_ok(conv_context_clear_tuning(ctx));
    tune_two_problems();
    assert_ok(conv_context_save_tuning(ctx, path_good));
    text good = read_file(path_good);
    assert_ok(conv_context_clear_tuning(ctx));
    text empty = table_bytes();
    const unsigned char masks[3] = {0x01, 0x20, 0x80};
    char *bad = malloc(good.len);
    int refused = 0;
    for (size_t i = 0; i < good.len; i++) {
        for (int m = 0; m < 3; m++) {
            memcpy(bad, good.data, good.len);
            bad[i] = (char)(bad[i] ^ masks[m]);
            char what[64];
            snprintf(what, sizeof what, "byte %zu ^ 0x%02x", i, masks[m]);
            expect_refused(what, bad, good.len, CONV_STATUS_BAD_FILE, NULL, &empty, i % 32 == 0);
            refused++;
        }
    }
    print_message("%d corrupted files refused\n", refused);
    /* a corrupted key with a stale checksum names the checksum */
    char *b = body_of(&good);
    char *key = strstr(b, "\nfwd ");
    assert_non_null(key);
    memcpy(bad, good.data, good.len);
    bad[(key - b) + 2] ^= 0x01;
    expect_refused("key", bad, good.len, CONV_STATUS_BAD_FILE, "checksum", &empty, 1);
    /* a NUL byte in the middle */
    memcpy(bad, good.data, good.len);
    bad[good.len / 2] = '\0';
    expect_refused("NUL", bad, good.len, CONV_STATUS_BAD_FILE, NULL, &empty, 1);
    /* Windows line ends */
    text crlf;
    crlf.data = malloc(2 * good.len);
    crlf.len = 0;
    for (size_t i = 0; i < good.len; i++) {
        if (good.data[i] == '\n')
            crlf.data[crlf.len++] = '\r';
        crlf.data[crlf.len++] = good.data[i];
    }
    expect_refused("CRLF", crlf.data, crlf.len, CONV_STATUS_BAD_FILE, NULL, &empty, 1);
    free(crlf.data);
    free(b);
    free(bad);
    free(good.data);
    free(empty.data);
}

/* Well-formed files (correct checksums) that must still be refused. */
static void test_foreign(void **state)
{
    (void)state;
    assert_ok(conv_context_clear_tuning(ctx));
    tune_two_problems();
    assert_ok(conv_context_save_tuning(ctx, path_good));
    text good = read_file(path_good);
    text before = table_bytes(); /* failed loads keep these two entries */
    char *body = body_of(&good);
    struct {
        const char *what, *prefix, *line, *says;
    } cases[] = {
        {"another libconv", "library ", "library 0.0.9", "different libconv"},
        {"a later libconv", "library ", "library 1.0.0", "different libconv"},
        {"another device", "device ", "device cpu Imaginary CPU 9000", "another device"},
        {"another device kind", "device ", "device cuda NVIDIA H100", "another device"},
        {"format 1", "libconv-tuning", "libconv-tuning 1", "format version"},
        {"not a tuning file", "libconv-tuning", "hello", "not a libconv tuning file"},
        {"more entries than listed", "entries ", "entries 1", NULL},
        {"fewer entries than listed", "entries ", "entries 3", NULL},
        {"negative count", "entries ", "entries -1", "entry count"},
        {"count with sign", "entries ", "entries +2", "entry count"},
        {"count with junk", "entries ", "entries 2x", "entry count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *b = replace_line(body, cases[i].prefix, cases[i].line);
        text t = with_checksum(b);
        expect_refused(cases[i].what, t.data, t.len, CONV_STATUS_BAD_FILE, cases[i].says, &before,
                       1);
        free(t.data);
        free(b);
    }
    /* an algorithm this build does not have; an entry without a tab */
    char *b = replace_line(body, "fwd ", "fwd some problem\twarp_drive");
    text t = with_checksum(b);
    expect_refused("unknown algorithm", t.data, t.len, CONV_STATUS_BAD_FILE, "warp_drive", &before,
                   1);
    free(t.data);
    free(b);
    b = replace_line(body, "fwd ", "fwd some problem without a tab");
    t = with_checksum(b);
    expect_refused("entry without algorithm", t.data, t.len, CONV_STATUS_BAD_FILE, "malformed",
                   &before, 1);
    free(t.data);
    free(b);
    b = replace_line(body, "fwd ", "fwd \x01\tim2col_gemm");
    t = with_checksum(b);
    expect_refused("control character in a key", t.data, t.len, CONV_STATUS_BAD_FILE, "key",
                   &before, 1);
    free(t.data);
    free(b);
    /* trailing data after "end" */
    char *tail = malloc(good.len + 8);
    memcpy(tail, good.data, good.len);
    memcpy(tail + good.len, "more\n", 5);
    expect_refused("data after end", tail, good.len + 5, CONV_STATUS_BAD_FILE, "after", &before,
                   1);
    free(tail);
    /* the checksum line missing */
    t = with_checksum(body);
    char *cut = strstr(t.data, "checksum ");
    memcpy(cut, "end\n", 5);
    expect_refused("no checksum", t.data, strlen(t.data), CONV_STATUS_BAD_FILE, "checksum",
                   &before, 1);
    free(t.data);
    /* and the unmodified body with a recomputed checksum is the good file */
    t = with_checksum(body);
    assert_true(same_text(&t, &good));
    free(t.data);
    free(body);
    free(good.data);
    free(before.data);
}

static void test_io_errors(void **state)
{
    (void)state;
    assert_ok(conv_context_clear_tuning(ctx));
    tune_two_problems();
    text before = table_bytes();
    char path[400];
    snprintf(path, sizeof path, "%s/does-not-exist.tuning", dir);
    assert_status(conv_context_load_tuning(ctx, path), CONV_STATUS_IO_ERROR);
    assert_non_null(strstr(conv_last_error(), "does-not-exist"));
    assert_status(conv_context_load_tuning(ctx, dir), CONV_STATUS_IO_ERROR); /* a directory */
    assert_status(conv_context_load_tuning(ctx, ""), CONV_STATUS_IO_ERROR);
    snprintf(path, sizeof path, "%s/no-such-dir/out.tuning", dir);
    assert_status(conv_context_save_tuning(ctx, path), CONV_STATUS_IO_ERROR);
    assert_true(conv_last_error()[0] != '\0');
    assert_status(conv_context_save_tuning(ctx, dir), CONV_STATUS_IO_ERROR); /* over a directory */
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    text now = table_bytes();
    assert_true(same_text(&now, &before));
    free(now.data);
    free(before.data);
}

/* Saving follows no symbolic link another user could plant. At the old
 * predictable temporary names (<path>.tmp.<pid>.<serial>) links to a victim
 * file: the save must succeed without touching the victim (before, fopen
 * followed the link and overwrote it). At the target itself: IO_ERROR
 * naming it, the link and its victim untouched, no temporary left. The file
 * saved gets the mode fopen would give (0666 less the umask). */
static int count_temporaries(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static void test_symlinks(void **state)
{
    (void)state;
    assert_ok(conv_context_clear_tuning(ctx));
    tune_two_problems();
    char victim[400], target[400], link[460];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(target, sizeof target, "%s/linked.tuning", dir);
    const char precious[] = "not to be overwritten\n";
    write_file(victim, precious, sizeof precious - 1);
    enum { kSerials = 4096 }; /* every save of this process so far, and more */
    for (int i = 0; i < kSerials; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", target, (long)getpid(), i);
        assert_int_equal(symlink(victim, link), 0);
    }
    mode_t old_mask = umask(022);
    assert_ok(conv_context_save_tuning(ctx, target));
    umask(old_mask);
    text v = read_file(victim);
    assert_int_equal(v.len, sizeof precious - 1);
    assert_memory_equal(v.data, precious, v.len);
    free(v.data);
    struct stat st;
    assert_int_equal(lstat(target, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_ok(conv_context_load_tuning(ctx, target)); /* what was saved is the table */
    for (int i = 0; i < kSerials; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", target, (long)getpid(), i);
        assert_int_equal(lstat(link, &st), 0); /* still the planted links */
        assert_true(S_ISLNK(st.st_mode));
        assert_int_equal(unlink(link), 0);
    }
    assert_int_equal(count_temporaries(), 0);

    /* a link at the target */
    assert_int_equal(unlink(target), 0);
    assert_int_equal(symlink(victim, target), 0);
    assert_status(conv_context_save_tuning(ctx, target), CONV_STATUS_IO_ERROR);
    assert_non_null(strstr(conv_last_error(), "symbolic link"));
    assert_non_null(strstr(conv_last_error(), target));
    assert_int_equal(lstat(target, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    v = read_file(victim);
    assert_int_equal(v.len, sizeof precious - 1);
    assert_memory_equal(v.data, precious, v.len);
    free(v.data);
    assert_int_equal(count_temporaries(), 0);
    assert_int_equal(unlink(target), 0);
    assert_int_equal(unlink(victim), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt),    cmocka_unit_test(test_foreign),
        cmocka_unit_test(test_io_errors),  cmocka_unit_test(test_symlinks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
