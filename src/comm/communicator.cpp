#include "comm/communicator.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "comm/kernels.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace conv::comm {

const char *backend_name(conv_comm_backend_t b) {
    switch (b) {
    case CONV_COMM_BACKEND_LOCAL: return "in-process";
    case CONV_COMM_BACKEND_MPI: return "MPI";
    case CONV_COMM_BACKEND_NCCL: return "NCCL";
    default: break;
    }
    return "unknown";
}

const char *state_name(conv_comm_state_t s) {
    switch (s) {
    case CONV_COMM_STATE_OK: return "ok";
    case CONV_COMM_STATE_ABORTED: return "aborted";
    case CONV_COMM_STATE_TIMED_OUT: return "timed out";
    case CONV_COMM_STATE_FAILED: return "failed";
    default: break;
    }
    return "unknown";
}

const char *op_name(conv_reduce_op_t op) {
    switch (op) {
    case CONV_REDUCE_SUM: return "sum";
    case CONV_REDUCE_AVERAGE: return "average";
    default: break;
    }
    return "unknown";
}

double default_timeout() {
    const char *env = std::getenv("CONV_COMM_TIMEOUT");
    if (env && *env) {
        char *end = nullptr;
        double v = std::strtod(env, &end);
        if (end != env && *end == '\0' && v > 0) return v;
    }
    return CONV_COMM_DEFAULT_TIMEOUT;
}

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

Communicator::Communicator(int rank, int size)
    : rank_(rank), size_(size), timeout_(default_timeout()) {}

Communicator::~Communicator() = default;

void Communicator::set_timeout(double seconds) {
    timeout_.store(seconds, std::memory_order_relaxed);
}

void Communicator::set_stream(void *) {
    fail(CONV_STATUS_UNSUPPORTED,
         "conv_comm_set_stream: the %s backend works on host memory and has no CUDA stream",
         backend_name(backend()));
}

std::string Communicator::where(const char *what) const {
    return format("%s on rank %d of %d (%s)", what, rank_, size_, backend_name(backend()));
}

Communicator::CallGuard::CallGuard(Communicator &c, const char *what) : c_(c) {
    bool expected = false;
    if (!c.busy_.compare_exchange_strong(expected, true, std::memory_order_acquire))
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "%s: the communicator is in use by another call (a communicator serves one call at "
             "a time, and a reducer's step in flight uses it)",
             c.where(what).c_str());
}

void Communicator::check_buffer_args(const void *p, int64_t count, conv_dtype_t dtype,
                                     const char *arg, const char *what) const {
    if (!dtype_valid(dtype))
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: unknown dtype %d", what, (int)dtype);
    if (count < 0) fail(CONV_STATUS_INVALID_ARGUMENT, "%s: count %lld < 0", what, (long long)count);
    size_t es = dtype_size(dtype);
    if ((uint64_t)count > (uint64_t)INT64_MAX / es)
        fail(CONV_STATUS_OVERFLOW, "%s: count %lld elements of %zu bytes overflows", what,
             (long long)count, es);
    if (count > 0 && !p)
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: %s is NULL with count %lld", what, arg,
             (long long)count);
}

void Communicator::all_reduce(const void *send, void *recv, int64_t count, conv_dtype_t dtype,
                              conv_reduce_op_t op) {
    const char *what = "all_reduce";
    check_buffer_args(send, count, dtype, "send", what);
    check_buffer_args(recv, count, dtype, "recv", what);
    if (op != CONV_REDUCE_SUM && op != CONV_REDUCE_AVERAGE)
        fail(CONV_STATUS_INVALID_ARGUMENT, "all_reduce: unknown reduce op %d", (int)op);
    if (send != recv && count > 0) {
        size_t bytes = (size_t)count * dtype_size(dtype);
        uintptr_t s = (uintptr_t)send, r = (uintptr_t)recv;
        if (s < r + bytes && r < s + bytes)
            fail(CONV_STATUS_INVALID_ARGUMENT,
                 "all_reduce: send and recv overlap without being equal (%zu bytes each, %lld "
                 "bytes apart)",
                 bytes, (long long)(r > s ? r - s : s - r));
    }
    CallGuard guard(*this, what);
    throw_if_failed(what);
    do_all_reduce(send, recv, count, dtype, op);
}

void Communicator::broadcast(void *buffer, int64_t count, conv_dtype_t dtype, int root) {
    const char *what = "broadcast";
    check_buffer_args(buffer, count, dtype, "buffer", what);
    if (root < 0 || root >= size_)
        fail(CONV_STATUS_INVALID_ARGUMENT, "broadcast: root %d is not a rank of 0..%d", root,
             size_ - 1);
    CallGuard guard(*this, what);
    throw_if_failed(what);
    do_broadcast(buffer, count, dtype, root);
}

void Communicator::barrier() {
    CallGuard guard(*this, "barrier");
    throw_if_failed("barrier");
    do_barrier();
}

void Communicator::synchronize() {
    CallGuard guard(*this, "synchronize");
    throw_if_failed("synchronize");
    do_synchronize();
}

bool Communicator::record_failure(conv_comm_state_t state, const std::string &why) noexcept {
    {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (state_ != CONV_COMM_STATE_OK) return false;
        try {
            reason_ = why;
        } catch (...) {
            reason_.clear();
        }
        state_ = state;
        failed_.store(true, std::memory_order_release);
    }
    do_abort();
    return true;
}

void Communicator::fail_with(conv_comm_state_t state, const std::string &why) {
    record_failure(state, why);
    throw_if_failed(nullptr);
    fail(CONV_STATUS_INTERNAL_ERROR, "communicator failure not recorded");  // unreachable
}

void Communicator::abort(const std::string &why) { record_failure(CONV_COMM_STATE_ABORTED, why); }

conv_comm_state_t Communicator::state(std::string *why) {
    if (!failed_.load(std::memory_order_acquire)) {
        try {
            poll();
        } catch (...) {
            // poll records failures itself; nothing else to report here
        }
    }
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (why) *why = reason_;
    return state_;
}

void Communicator::throw_if_failed(const char *what) {
    if (!failed_.load(std::memory_order_acquire)) return;
    conv_comm_state_t s;
    std::string why;
    {
        std::lock_guard<std::mutex> lock(state_mutex_);
        s = state_;
        why = reason_;
    }
    if (what)
        throw Error(state_status(s),
                    format("%s: the communicator is %s: %s", where(what).c_str(), state_name(s),
                           why.c_str()));
    throw Error(state_status(s), why);
}

void Communicator::control_sum(double *values, int n) {
    std::vector<double> copy(values, values + n);
    all_reduce(copy.data(), values, n, CONV_DTYPE_FLOAT64, CONV_REDUCE_SUM);
}

std::unique_ptr<CommQueue> Communicator::make_queue(void *) {
    return make_host_queue(*this, queue_on_thread());
}

void *Communicator::alloc(size_t bytes) {
    AlignedBuffer b = aligned_alloc_bytes(bytes ? bytes : 1, true);
    return b.release();
}

void Communicator::release(void *p) noexcept {
    if (p) AlignedDeleter{}(p);
}

void Communicator::zero(void *p, size_t bytes, void *) {
    if (bytes) std::memset(p, 0, bytes);
}

void Communicator::copy(void *dst, const void *src, size_t bytes, void *) {
    if (bytes) std::memcpy(dst, src, bytes);
}

void Communicator::sgd(conv_dtype_t dtype, void *w, const void *g, void *h, float *, int64_t n,
                       double lr, double momentum, double decay) {
    sgd_update(dtype, w, g, h, n, lr, momentum, decay);
}

}  // namespace conv::comm
