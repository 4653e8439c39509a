/* --peak with two CPUs or more: how long a cache line takes to go from one
 * CPU to another and back, the cost a multi-thread pass pays at each
 * parallel region's start and end and for every line one thread writes and
 * another reads. On a virtual machine it is the host's choice: on 2 vCPUs of
 * a Zen 4 it moved between 55-90 ns and 340-380 ns within minutes, and
 * 2-thread timings of small layers moved with it, so a 2-thread figure
 * means little without it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "convbench.h"

enum { kTrips = 20000, kRuns = 5 };

typedef struct {
    /* -2: the far side not pinned yet, -1: it could not be; then odd: the
     * far side's move, even: the near side's */
    _Alignas(64) atomic_long turn;
    int far_cpu;
} link_probe;

static int pin_to(pthread_t t, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(t, sizeof set, &set);
}

static long wait_while(link_probe *p, long value)
{
    long v;
    while ((v = atomic_load_explicit(&p->turn, memory_order_acquire)) == value) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    return v;
}

/* The far CPU's side: pinned, answers each odd turn with the next even one. */
static void *answer(void *arg)
{
    link_probe *p = arg;
    const int pinned = pin_to(pthread_self(), p->far_cpu) == 0;
    atomic_store_explicit(&p->turn, pinned ? 0 : -1, memory_order_release);
    if (!pinned)
        return NULL;
    for (long i = 0; i < kTrips; i++) {
        if (wait_while(p, 2 * i) < 0)  /* the near side could not pin itself */
            return NULL;
        atomic_store_explicit(&p->turn, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

/* One run from the calling thread, pinned to near_cpu once the far side
 * has pinned itself (so that the far thread never starts on a CPU the near
 * one is spinning on): ns per round trip, or -1 where a thread could not be
 * made or pinned. */
static double one_run(int near_cpu, int far_cpu)
{
    link_probe p = {.far_cpu = far_cpu};
    atomic_init(&p.turn, -2);
    pthread_t t;
    if (pthread_create(&t, NULL, answer, &p) != 0)
        return -1;
    double ns = -1;
    if (wait_while(&p, -2) == 0) {
        if (pin_to(pthread_self(), near_cpu) == 0) {
            double start = cb_now_ns();
            for (long i = 0; i < kTrips; i++) {
                atomic_store_explicit(&p.turn, 2 * i + 1, memory_order_release);
                wait_while(&p, 2 * i + 1);
            }
            ns = (cb_now_ns() - start) / kTrips;
        } else {
            atomic_store_explicit(&p.turn, -1, memory_order_release);
        }
    }
    pthread_join(t, NULL);
    return ns;
}

double cb_line_round_trip_ns(int *near_cpu, int *far_cpu)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -1;
    int cpus[2], n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[n++] = c;
    if (n < 2)
        return -1;
    double runs[kRuns];
    int ok = 1;
    for (int r = 0; r < kRuns && ok; r++)
        ok = (runs[r] = one_run(cpus[0], cpus[1])) >= 0;
    /* The caller's affinity back as it was. */
    sched_setaffinity(0, sizeof allowed, &allowed);
    if (!ok)
        return -1;
    *near_cpu = cpus[0], *far_cpu = cpus[1];
    return cb_median(runs, kRuns);
}
