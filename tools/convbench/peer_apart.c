/*
 * peer_apart.c -- --peer-apart: the peer in a process of its own, stopped
 * while libconv runs.
 *
 * Why: with several threads, the same process cannot time both libraries
 * at their best. oneDNN's OpenMP threads either sleep between calls
 * (OMP_WAIT_POLICY=passive: every primitive call then pays for waking
 * them, about what a small layer takes, and oneDNN ran MobileNet no faster
 * at 2 threads than at 1) or spin between them (active: oneDNN's best, but
 * its idle threads then took the second CPU from libconv's). Here the peer
 * runs in a child process with OMP_WAIT_POLICY=active, and the child is
 * stopped (SIGSTOP: every thread of it, spinning or not) whenever it is not
 * timing, so libconv's rounds have the machine to themselves while the
 * peer's keep their spinning threads. The rounds still alternate layer by
 * layer, pass by pass, under the same load.
 *
 * The child is a fork of convbench made after the options and the context
 * are set up, so the layers and options it is asked about are at the same
 * addresses in it; it touches no libconv object (fork keeps only the
 * calling thread, not libconv's pool). A pipe each way carries requests
 * (describe, run a pass, close) and the answers (the header line, the row's
 * peer fields). Where the runtime the peer uses is already loaded into
 * convbench (an OpenMP OpenBLAS, say), the child's OMP_WAIT_POLICY comes
 * too late to count: the header line, written by the child, says which
 * policy its runtime was given.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "convbench.h"

enum { REQ_DESCRIBE, REQ_RUN, REQ_CLOSE };

typedef struct request {
    int kind;
    conv_op_t op;
    const cb_layer *l; /* the same address in the child: it is a fork */
} request;

static struct {
    const cb_peer *inner; /* the peer the child runs */
    pid_t pid;            /* the child; 0: none */
    int to_child, from_child;
    int lost; /* the child ended or stopped answering: every later row fails */
    char why_lost[160];
} g;

/* All n bytes through fd, written or read, over short transfers and
 * signals; -1 when the other end is gone. */
static int transfer(int fd, char *c, size_t n, int writing)
{
    while (n) {
        ssize_t k = writing ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const void *p, size_t n) { return transfer(fd, (char *)p, n, 1); }
static int read_all(int fd, void *p, size_t n) { return transfer(fd, p, n, 0); }

/* ------------------------------------------------------------ the child */

static void serve(const cb_bench *b, int in, int out)
{
    double *times = malloc(sizeof(double) * (size_t)cb_timing_slots(b->opt));
    request q;
    while (read_all(in, &q, sizeof q) == 0) {
        if (q.kind == REQ_DESCRIBE) {
            char line[CB_PEER_LINE] = "";
            g.inner->describe(b, line, sizeof line);
            if (write_all(out, line, sizeof line) != 0)
                break;
        } else if (q.kind == REQ_RUN) {
            cb_row r;
            memset(&r, 0, sizeof r);
            r.op = q.op;
            if (!times) {
                r.peer_status = CB_PEER_FAILED;
                snprintf(r.peer_error, sizeof r.peer_error, "malloc: no memory for the timings");
            } else {
                g.inner->run(b, q.l, q.op, times, &r);
            }
            if (write_all(out, &r, sizeof r) != 0)
                break;
        } else {
            break;
        }
    }
    g.inner->close();
    free(times);
}

/* ----------------------------------------------------------- the parent */

static void lose(const char *why)
{
    if (g.lost)
        return;
    g.lost = 1;
    snprintf(g.why_lost, sizeof g.why_lost, "%s", why);
}

/* Stops the child and waits until it is stopped: from here on none of its
 * threads runs. */
static void stop_child(void)
{
    int st;
    if (g.lost || kill(g.pid, SIGSTOP) != 0)
        return lose("the peer's process could not be stopped");
    while (waitpid(g.pid, &st, WUNTRACED) < 0)
        if (errno != EINTR)
            return lose("the peer's process could not be waited for");
    if (!WIFSTOPPED(st))
        lose(WIFSIGNALED(st) ? "the peer's process was killed by a signal"
                             : "the peer's process ended");
}

/* Continues the child, sends q and reads the n-byte answer, stops it again. */
static int ask(const request *q, void *answer, size_t n)
{
    if (g.lost)
        return -1;
    if (kill(g.pid, SIGCONT) != 0 || write_all(g.to_child, q, sizeof *q) != 0 ||
        read_all(g.from_child, answer, n) != 0) {
        lose("the peer's process ended while timing (it crashed, or was killed)");
        return -1;
    }
    stop_child();
    return g.lost ? -1 : 0;
}

static int apart_open(const cb_bench *b, char *err, size_t errlen)
{
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) {
        snprintf(err, errlen, "--peer-apart: pipe: %s", strerror(errno));
        return 1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "--peer-apart: fork: %s", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a stopped child outlives no convbench */
#endif
        /* Read by the OpenMP runtime when the peer's open loads it. */
        setenv("OMP_WAIT_POLICY", "active", 1);
        char why[2048] = "";
        int rc = g.inner->open(b, why, sizeof why);
        if (write_all(up[1], &rc, sizeof rc) == 0 && write_all(up[1], why, sizeof why) == 0 &&
            rc == 0)
            serve(b, down[0], up[1]);
        _exit(0); /* not exit: stdio buffers and atexit handlers are the parent's */
    }
    close(down[0]);
    close(up[1]);
    /* A child that died mid-run makes the next request fail with EPIPE, a row
     * marked failed, rather than kill convbench. */
    signal(SIGPIPE, SIG_IGN);
    g.pid = pid;
    g.to_child = down[1];
    g.from_child = up[0];
    int rc = 1;
    char why[2048];
    if (read_all(g.from_child, &rc, sizeof rc) != 0 || read_all(g.from_child, why, sizeof why) != 0) {
        snprintf(err, errlen, "--peer-apart: the peer's process ended while opening %s",
                 g.inner->name);
        rc = 1;
    } else if (rc != 0) {
        snprintf(err, errlen, "%s", why);
    }
    if (rc != 0) {
        close(g.to_child);
        close(g.from_child);
        waitpid(pid, NULL, 0);
        g.pid = 0;
        return rc;
    }
    stop_child();
    return 0;
}

static void apart_describe(const cb_bench *b, char *buf, size_t len)
{
    (void)b;
    char line[CB_PEER_LINE];
    const request q = {REQ_DESCRIBE, CONV_OP_FORWARD, NULL};
    if (ask(&q, line, sizeof line) != 0)
        snprintf(buf, len, "%s: %s", g.inner->name, g.why_lost);
    else
        snprintf(buf, len, "%s | in a process of its own, stopped while libconv runs", line);
}

static void apart_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times,
                      cb_row *r)
{
    (void)b;
    (void)times;
    cb_row a;
    const request q = {REQ_RUN, op, l};
    if (ask(&q, &a, sizeof a) != 0) {
        r->peer_status = CB_PEER_FAILED;
        snprintf(r->peer_error, sizeof r->peer_error, "%s", g.why_lost);
        return;
    }
    r->peer_status = a.peer_status;
    r->peer_ms = a.peer_ms;
    r->peer_min_ms = a.peer_min_ms;
    r->peer_repeats = a.peer_repeats;
    memcpy(r->peer_error, a.peer_error, sizeof r->peer_error);
    memcpy(r->peer_impl, a.peer_impl, sizeof r->peer_impl);
    r->peer_reorders = a.peer_reorders;
}

static void apart_close(void)
{
    if (!g.pid)
        return;
    if (!g.lost) {
        const request q = {REQ_CLOSE, CONV_OP_FORWARD, NULL};
        kill(g.pid, SIGCONT);
        write_all(g.to_child, &q, sizeof q);
    } else {
        kill(g.pid, SIGKILL);
    }
    close(g.to_child);
    close(g.from_child);
    while (waitpid(g.pid, NULL, 0) < 0 && errno == EINTR) {
    }
    g.pid = 0;
}

const cb_peer *cb_peer_apart(const cb_peer *inner)
{
    static cb_peer apart;
    g.inner = inner;
    apart = *inner;
    apart.open = apart_open;
    apart.describe = apart_describe;
    apart.run = apart_run;
    apart.close = apart_close;
    return &apart;
}
