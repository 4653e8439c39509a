// Errors inside libconv are C++ exceptions carrying a conv_status_t and a
// message that names the numbers involved; the C shim (src/api) turns them
// into a status and the per-thread last-error text. Nothing else throws
// across a layer on purpose.
#pragma once

#include <stdexcept>
#include <string>

#include "conv.h"

namespace conv {

class Error : public std::runtime_error {
public:
    Error(conv_status_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    conv_status_t status() const noexcept { return status_; }

private:
    conv_status_t status_;
};

// printf-style formatting into a std::string (messages only, never hot).
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] void fail(conv_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace conv
