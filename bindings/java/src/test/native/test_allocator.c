/* A counting host allocator for the Java tests (Context.setAllocator takes
 * the addresses of native functions). Not part of the jar. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>

static volatile long allocations, releases;
static volatile jlong last_user;

static void *test_alloc(void *user, size_t bytes, size_t alignment) {
    __atomic_add_fetch(&allocations, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&last_user, (jlong)(intptr_t)user, __ATOMIC_SEQ_CST);
    return aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

static void test_free(void *user, void *memory) {
    __atomic_add_fetch(&releases, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&last_user, (jlong)(intptr_t)user, __ATOMIC_SEQ_CST);
    free(memory);
}

JNIEXPORT jlong JNICALL Java_org_libconv_TestAllocator_allocFunction(JNIEnv *env, jclass cls) {
    return (jlong)(intptr_t)&test_alloc;
}

JNIEXPORT jlong JNICALL Java_org_libconv_TestAllocator_freeFunction(JNIEnv *env, jclass cls) {
    return (jlong)(intptr_t)&test_free;
}

JNIEXPORT jlong JNICALL Java_org_libconv_TestAllocator_allocations(JNIEnv *env, jclass cls) {
    return __atomic_load_n(&allocations, __ATOMIC_SEQ_CST);
}

JNIEXPORT jlong JNICALL Java_org_libconv_TestAllocator_releases(JNIEnv *env, jclass cls) {
    return __atomic_load_n(&releases, __ATOMIC_SEQ_CST);
}

JNIEXPORT jlong JNICALL Java_org_libconv_TestAllocator_lastUser(JNIEnv *env, jclass cls) {
    return __atomic_load_n(&last_user, __ATOMIC_SEQ_CST);
}
