// A replacement of the global operator new / delete for test_oom: counts the
// blocks allocated through it (so a test can show that libconv frees
// everything it allocated) and, when armed, fails every allocation after the
// first `budget` ones -- bad_alloc thrown from anywhere inside libconv. The
// program's definitions replace the C++ runtime's for the whole process,
// libconv.so included (that is how operator new replacement works).
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "failing_new.h"

namespace {

std::atomic<long> g_budget{-1};  // < 0: disarmed
std::atomic<long> g_calls{0};    // allocations since armed
std::atomic<long> g_failed{0};   // allocations refused since armed
std::atomic<long> g_live{0};     // blocks allocated and not yet freed, ever

void *allocate(std::size_t bytes, std::size_t align) noexcept {
    long budget = g_budget.load(std::memory_order_relaxed);
    if (budget >= 0 && g_calls.fetch_add(1, std::memory_order_relaxed) >= budget) {
        g_failed.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    if (bytes == 0) bytes = 1;
    void *p;
    if (align > alignof(std::max_align_t))
        p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    else
        p = std::malloc(bytes);
    if (p) g_live.fetch_add(1, std::memory_order_relaxed);
    return p;
}

void release(void *p) noexcept {
    if (!p) return;
    g_live.fetch_sub(1, std::memory_order_relaxed);
    std::free(p);
}

void *allocate_or_throw(std::size_t bytes, std::size_t align) {
    void *p = allocate(bytes, align);
    if (!p) throw std::bad_alloc();
    return p;
}

}  // namespace

extern "C" {
void tu_new_arm(long budget) {
    g_calls.store(0);
    g_failed.store(0);
    g_budget.store(budget);
}
void tu_new_disarm(void) { g_budget.store(-1); }
long tu_new_calls(void) { return g_calls.load(); }
long tu_new_failed(void) { return g_failed.load(); }
long tu_new_live(void) { return g_live.load(); }
}

void *operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void *operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return allocate(n, 0); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return allocate(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) {
    return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a) {
    return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    return allocate(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    return allocate(n, static_cast<std::size_t>(a));
}

void operator delete(void *p) noexcept { release(p); }
void operator delete[](void *p) noexcept { release(p); }
void operator delete(void *p, std::size_t) noexcept { release(p); }
void operator delete[](void *p, std::size_t) noexcept { release(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { release(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { release(p); }
void operator delete(void *p, std::align_val_t) noexcept { release(p); }
void operator delete[](void *p, std::align_val_t) noexcept { release(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { release(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { release(p); }
