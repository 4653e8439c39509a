// The ABI boundary: every entry point runs its body through guarded(), which
// turns any exception into a status and the per-thread last-error message,
// and clears the message on success.
#pragma once

#include <new>
#include <system_error>

#include "conv.h"
#include "core/error.h"

namespace conv::api {

void set_last_error(const char *message) noexcept;
void clear_last_error() noexcept;  // on success: no store where the message is empty already

template <class F>
conv_status_t guarded(F &&body) noexcept {
    try {
        body();
        clear_last_error();
        return CONV_STATUS_SUCCESS;
    } catch (const Error &e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        set_last_error("out of host memory");
        return CONV_STATUS_OUT_OF_MEMORY;
    } catch (const std::system_error &e) {
        // A thread or a lock the system could not provide: a resource
        // exhausted, like memory.
        set_last_error(e.what());
        return CONV_STATUS_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        set_last_error(e.what());
        return CONV_STATUS_INTERNAL_ERROR;
    } catch (...) {
        set_last_error("unknown internal error");
        return CONV_STATUS_INTERNAL_ERROR;
    }
}

}  // namespace conv::api
