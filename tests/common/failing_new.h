/*
 * failing_new.h -- control of the operator new replacement in
 * failing_new.cpp (linked into test_oom only).
 */
#ifndef FAILING_NEW_H
#define FAILING_NEW_H

#ifdef __cplusplus
extern "C" {
#endif

/* From now on the first `budget` allocations through operator new succeed
 * and every later one fails (bad_alloc), until disarmed. */
void tu_new_arm(long budget);
void tu_new_disarm(void);
/* Allocations attempted / refused since the last tu_new_arm. */
long tu_new_calls(void);
long tu_new_failed(void);
/* Blocks allocated through operator new and not yet freed (process-wide). */
long tu_new_live(void);

#ifdef __cplusplus
}
#endif

#endif
