// The C handles are the C++ objects. Every live handle is recorded, with its
// kind, in a registry that each entry point consults before touching the
// object: a pointer that is not a live handle of the expected kind -- a
// tensor passed as a descriptor, a destroyed handle, a stray pointer -- is
// refused with INVALID_HANDLE without being read. Destroying a handle twice
// is a no-op. A destroyed handle goes undetected only once its address has
// been reused for a new handle of the same kind. Each object also carries a
// magic tag, checked as a second line of defence.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "conv.h"
#include "core/context.h"
#include "core/error.h"
#include "core/params.h"
#include "core/tensor.h"
#include "core/workspace.h"
#include "dispatch/plan.h"

enum : uint32_t {
    kContextMagic = 0x31585443u,    // "CTX1"
    kWorkspaceMagic = 0x3153574bu,  // "KWS1"
    kTensorMagic = 0x3152534eu,     // "NSR1"
    kDescMagic = 0x31435344u,       // "DSC1"
    kPlanMagic = 0x314e4c50u,       // "PLN1"
    kDeadMagic = 0xdeadbeefu,
};

struct conv_context_s {
    uint32_t magic = kContextMagic;
    conv::Context impl;
    template <class... A>
    explicit conv_context_s(A &&...a) : impl(static_cast<A &&>(a)...) {}
};

struct conv_workspace_s {
    uint32_t magic = kWorkspaceMagic;
    conv::Workspace impl;
    template <class... A>
    explicit conv_workspace_s(A &&...a) : impl(static_cast<A &&>(a)...) {}
};

struct conv_tensor_s {
    uint32_t magic = kTensorMagic;
    conv::Tensor impl;
    template <class... A>
    explicit conv_tensor_s(A &&...a) : impl(static_cast<A &&>(a)...) {}
};

struct conv_desc_s {
    uint32_t magic = kDescMagic;
    conv::ConvParams impl;
};

struct conv_plan_s {
    uint32_t magic = kPlanMagic;
    std::shared_ptr<conv::dispatch::Plan> impl;
    explicit conv_plan_s(std::shared_ptr<conv::dispatch::Plan> p) : impl(std::move(p)) {}
};

namespace conv::api {

template <class H>
constexpr uint32_t magic_of();
template <> constexpr uint32_t magic_of<conv_context_s>() { return kContextMagic; }
template <> constexpr uint32_t magic_of<conv_workspace_s>() { return kWorkspaceMagic; }
template <> constexpr uint32_t magic_of<conv_tensor_s>() { return kTensorMagic; }
template <> constexpr uint32_t magic_of<conv_desc_s>() { return kDescMagic; }
template <> constexpr uint32_t magic_of<conv_plan_s>() { return kPlanMagic; }

template <class H>
constexpr const char *kind_of();
template <> constexpr const char *kind_of<conv_context_s>() { return "context"; }
template <> constexpr const char *kind_of<conv_workspace_s>() { return "workspace"; }
template <> constexpr const char *kind_of<conv_tensor_s>() { return "tensor"; }
template <> constexpr const char *kind_of<conv_desc_s>() { return "descriptor"; }
template <> constexpr const char *kind_of<conv_plan_s>() { return "plan"; }

// The set of live handles and their kinds (magic values), sharded by
// address so that threads checking handles rarely meet on one mutex. Never
// destroyed: handles may be destroyed from static destructors of a program.
class HandleRegistry {
public:
    struct Kind {
        uint32_t magic;    // the kind's tag, 0 for "not a live handle"
        const char *name;  // "tensor", for messages
    };
    // Buckets allocated up front: later inserts allocate only their node,
    // which the matching remove frees (what test_oom's accounting expects).
    HandleRegistry() {
        for (Shard &s : shards_) s.live.reserve(16);
    }
    void add(const void *h, Kind kind) {  // may throw bad_alloc
        Shard &s = shard(h);
        std::lock_guard<std::mutex> lock(s.mutex);
        s.live[h] = kind;
    }
    // Removes h when it is live with this kind; false otherwise.
    bool remove(const void *h, uint32_t magic) noexcept {
        Shard &s = shard(h);
        std::lock_guard<std::mutex> lock(s.mutex);
        auto it = s.live.find(h);
        if (it == s.live.end() || it->second.magic != magic) return false;
        s.live.erase(it);
        epoch_.fetch_add(1, std::memory_order_release);  // every cached answer is stale
        return true;
    }
    // The kind of a live handle; magic 0 when h is none. Each thread keeps
    // the last few live handles it saw, valid while no handle anywhere has
    // been destroyed since (the epoch): a steady state of calls on the same
    // handles takes no lock. Only live answers are cached, so a handle
    // created at a once-refused address is seen at once.
    Kind kind(const void *h) noexcept {
        struct Cached {
            const void *h;
            uint64_t epoch;
            Kind kind;
        };
        // 32 slots by a multiplicative hash of the address: in 8 slots a
        // call's five or six handles share one 9 times in 10 (by chance), and
        // two handles sharing a slot evict each other: both went to the lock
        // on every call.
        static thread_local Cached cache[32];
        uint64_t epoch = epoch_.load(std::memory_order_acquire);
        Cached &c = cache[(reinterpret_cast<uintptr_t>(h) * 0x9E3779B97F4A7C15ull) >> 59];
        if (c.h == h && c.epoch == epoch) return c.kind;
        Kind k{0u, "none"};
        {
            Shard &s = shard(h);
            std::lock_guard<std::mutex> lock(s.mutex);
            auto it = s.live.find(h);
            if (it != s.live.end()) k = it->second;
        }
        if (k.magic) c = Cached{h, epoch, k};
        return k;
    }

private:
    static constexpr int kShards = 64;
    struct Shard {
        std::mutex mutex;
        std::unordered_map<const void *, Kind> live;
    };
    Shard &shard(const void *h) noexcept {
        uint64_t a = reinterpret_cast<uintptr_t>(h);
        return shards_[(a * 0x9E3779B97F4A7C15ull) >> 58];  // top 6 bits: 64 shards
    }
    Shard shards_[kShards];
    std::atomic<uint64_t> epoch_{1};  // bumped by every remove; caches start at 0
};

inline HandleRegistry &registry() {
    static HandleRegistry *r = new HandleRegistry();  // intentionally never freed
    return *r;
}

// Creates a handle object and records it; nothing is left behind on failure.
template <class H, class... A>
H *make_handle(A &&...args) {
    auto h = std::make_unique<H>(static_cast<A &&>(args)...);
    registry().add(h.get(), {magic_of<H>(), kind_of<H>()});
    return h.release();
}

// The object behind a handle; throws INVALID_HANDLE naming the argument.
template <class H>
H &checked(H *h, const char *arg) {
    if (!h) fail(CONV_STATUS_INVALID_HANDLE, "%s is NULL: a %s handle is required", arg, kind_of<H>());
    HandleRegistry::Kind kind = registry().kind(h);
    if (kind.magic == 0)
        fail(CONV_STATUS_INVALID_HANDLE,
             "%s is not a live libconv handle (destroyed, or never created by libconv): a %s "
             "handle is required",
             arg, kind_of<H>());
    if (kind.magic != magic_of<H>())
        fail(CONV_STATUS_INVALID_HANDLE, "%s is a %s handle: a %s handle is required", arg,
             kind.name, kind_of<H>());
    if (h->magic != magic_of<H>())
        fail(CONV_STATUS_INVALID_HANDLE, "%s: the %s handle is corrupt (its tag was overwritten)",
             arg, kind_of<H>());
    return *h;
}

// The same for an optional handle: null stays null.
template <class H>
H *checked_optional(H *h, const char *arg) {
    return h ? &checked(h, arg) : nullptr;
}

// Destroys a handle: a null, foreign or already destroyed one is ignored
// (destroy cannot fail).
template <class H>
void destroy(H *h) noexcept {
    if (!h || !registry().remove(h, magic_of<H>())) return;
    h->magic = kDeadMagic;
    delete h;
}

template <class P>
P *require(P *p, const char *arg) {
    if (!p) fail(CONV_STATUS_INVALID_ARGUMENT, "%s is NULL", arg);
    return p;
}

}  // namespace conv::api
