// The handles of the communication layer: conv_comm_t and conv_reducer_t,
// checked through the same registry and magic tags as the others
// (api/handles.h). A communicator handle shares its object with the
// reducers created on it, so destroying the handle first is safe.
#pragma once

#include <memory>

#include "api/handles.h"
#include "comm/communicator.h"
#include "comm/reducer.h"

enum : uint32_t {
    kCommMagic = 0x314d4f43u,     // "COM1"
    kReducerMagic = 0x31434452u,  // "RDC1"
};

struct conv_comm_s {
    uint32_t magic = kCommMagic;
    std::shared_ptr<conv::comm::Communicator> impl;
    explicit conv_comm_s(std::shared_ptr<conv::comm::Communicator> c) : impl(std::move(c)) {}
};

struct conv_reducer_s {
    uint32_t magic = kReducerMagic;
    conv::comm::Reducer impl;
    conv_reducer_s(std::shared_ptr<conv::comm::Communicator> c, conv_dtype_t dtype)
        : impl(std::move(c), dtype) {}
};

namespace conv::api {
template <> constexpr uint32_t magic_of<conv_comm_s>() { return kCommMagic; }
template <> constexpr uint32_t magic_of<conv_reducer_s>() { return kReducerMagic; }
template <> constexpr const char *kind_of<conv_comm_s>() { return "communicator"; }
template <> constexpr const char *kind_of<conv_reducer_s>() { return "reducer"; }
}  // namespace conv::api
