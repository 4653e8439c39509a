/* guard_memory.c -- see guard_memory.h. Each block is its own mapping:
 * the data pages plus one PROT_NONE page on the guarded side. A small
 * table maps a block's address back to its mapping for guard_free. */
#include "guard_memory.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct mapping {
    void *block; /* what guard_alloc returned */
    void *base;  /* the whole mapping */
    size_t length;
} mapping;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mapping *table;
static size_t used, capacity;

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static int remember(void *block, void *base, size_t length)
{
    int ok = 1;
    pthread_mutex_lock(&lock);
    if (used == capacity) {
        size_t grown = capacity ? 2 * capacity : 64;
        mapping *t = realloc(table, grown * sizeof *t);
        if (t) {
            table = t;
            capacity = grown;
        } else {
            ok = 0;
        }
    }
    if (ok)
        table[used++] = (mapping){block, base, length};
    pthread_mutex_unlock(&lock);
    return ok;
}

void *guard_alloc(size_t bytes, size_t alignment, guard_side side)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > page)
        return NULL;
    if (bytes > SIZE_MAX / 2)
        return NULL;
    const size_t data = round_up(round_up(bytes, alignment), page);
    const size_t length = data + page;
    char *base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    char *guard = side == GUARD_AFTER ? base + data : base;
    char *block = side == GUARD_AFTER ? guard - round_up(bytes, alignment) : base + page;
    if (mprotect(guard, page, PROT_NONE) != 0 || !remember(block, base, length)) {
        munmap(base, length);
        return NULL;
    }
    return block;
}

void guard_free(void *block)
{
    if (!block)
        return;
    mapping m = {0};
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < used; i++)
        if (table[i].block == block) {
            m = table[i];
            table[i] = table[--used];
            break;
        }
    pthread_mutex_unlock(&lock);
    if (m.base)
        munmap(m.base, m.length);
    else
        abort(); /* not ours, or freed twice: a test bug worth a crash */
}

void *guard_alloc_fn(void *user, size_t bytes, size_t alignment)
{
    return guard_alloc(bytes, alignment, *(const guard_side *)user);
}

void guard_free_fn(void *user, void *block)
{
    (void)user;
    guard_free(block);
}

long guard_live_blocks(void)
{
    pthread_mutex_lock(&lock);
    long n = (long)used;
    pthread_mutex_unlock(&lock);
    return n;
}
