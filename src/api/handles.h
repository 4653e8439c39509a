// The C handles are the C++ objects, each behind a magic tag checked at every
// entry point: a handle of the wrong kind (a tensor passed as a descriptor)
// or, often, one already destroyed is refused with INVALID_HANDLE instead of
// being misread.
#pragma once

#include <cstdint>

#include "conv.h"
#include "core/context.h"
#include "core/params.h"
#include "core/tensor.h"
#include "core/workspace.h"

enum : uint32_t {
    kContextMagic = 0x31585443u,    // "CTX1"
    kWorkspaceMagic = 0x3153574bu,  // "KWS1"
    kTensorMagic = 0x3152534eu,     // "NSR1"
    kDescMagic = 0x31435344u,       // "DSC1"
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

namespace conv::api {

template <class H>
constexpr uint32_t magic_of();
template <> constexpr uint32_t magic_of<conv_context_s>() { return kContextMagic; }
template <> constexpr uint32_t magic_of<conv_workspace_s>() { return kWorkspaceMagic; }
template <> constexpr uint32_t magic_of<conv_tensor_s>() { return kTensorMagic; }
template <> constexpr uint32_t magic_of<conv_desc_s>() { return kDescMagic; }

template <class H>
constexpr const char *kind_of();
template <> constexpr const char *kind_of<conv_context_s>() { return "context"; }
template <> constexpr const char *kind_of<conv_workspace_s>() { return "workspace"; }
template <> constexpr const char *kind_of<conv_tensor_s>() { return "tensor"; }
template <> constexpr const char *kind_of<conv_desc_s>() { return "descriptor"; }

// The object behind a handle; throws INVALID_HANDLE naming the argument.
template <class H>
H &checked(H *h, const char *arg) {
    if (!h) fail(CONV_STATUS_INVALID_HANDLE, "%s is NULL: a %s handle is required", arg, kind_of<H>());
    if (h->magic != magic_of<H>())
        fail(CONV_STATUS_INVALID_HANDLE, "%s is not a live %s handle (wrong kind or destroyed)",
             arg, kind_of<H>());
    return *h;
}

// The same for an optional handle: null stays null.
template <class H>
H *checked_optional(H *h, const char *arg) {
    return h ? &checked(h, arg) : nullptr;
}

// Destroys a handle: a null or foreign one is ignored (destroy cannot fail).
template <class H>
void destroy(H *h) {
    if (!h || h->magic != magic_of<H>()) return;
    h->magic = kDeadMagic;
    delete h;
}

template <class P>
P *require(P *p, const char *arg) {
    if (!p) fail(CONV_STATUS_INVALID_ARGUMENT, "%s is NULL", arg);
    return p;
}

}  // namespace conv::api
