/*
 * guard_memory.h -- memory placed against a PROT_NONE page, for the tests
 * and the fuzz target: a kernel that reads or writes one byte past the end
 * of a buffer (GUARD_AFTER), or before its start (GUARD_BEFORE), crashes
 * at once instead of touching its neighbour -- what a caller whose tensor
 * ends at a page (mmap, a large malloc, a framework's allocator) sees.
 *
 * A vector access that relies on its mask to stay inside a buffer is
 * tested here too: on the CPUs seen so far, masked-off lanes of a plain
 * masked move never fault, but those of a masked VEXTRACT*X4 to memory do
 * (issue 28).
 */
#ifndef GUARD_MEMORY_H
#define GUARD_MEMORY_H

#include <stddef.h>

typedef enum guard_side {
    GUARD_AFTER = 0,  /* the block ends where a PROT_NONE page starts */
    GUARD_BEFORE = 1  /* the block starts where a PROT_NONE page ends */
} guard_side;

/* `bytes` bytes aligned to `alignment` (a power of two, at most a page),
 * against a guard page on `side`; with GUARD_AFTER the end is at the guard
 * exactly when bytes is a multiple of the alignment. NULL when mmap fails.
 * A block of 0 bytes is a valid pointer into nothing: any access faults.
 * Thread-safe. */
void *guard_alloc(size_t bytes, size_t alignment, guard_side side);
/* Unmaps a block from guard_alloc; NULL is a no-op. */
void guard_free(void *block);

/* guard_alloc and guard_free as a conv_alloc_fn_t / conv_free_fn_t pair
 * (conv_context_set_allocator): `user` points to a guard_side. */
void *guard_alloc_fn(void *user, size_t bytes, size_t alignment);
void guard_free_fn(void *user, void *block);

/* Blocks allocated and not yet freed (a leak check for tests). */
long guard_live_blocks(void);

#endif
