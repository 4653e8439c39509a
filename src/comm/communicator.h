// The communicator interface behind conv_comm_t, and the pieces every
// backend shares: argument checks, the one-call-at-a-time guard, the
// timeout, and the sticky failure state (the first failure wins and every
// later collective fails with it).
//
// A backend implements the do_* collectives on memory of its device, plus
// the memory helpers the reducer needs (host ones by default). The reducer
// (comm/reducer.h) is written against this interface and CommQueue alone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "conv.h"
#include "core/error.h"

namespace conv::comm {

const char *backend_name(conv_comm_backend_t b);
const char *state_name(conv_comm_state_t s);
const char *op_name(conv_reduce_op_t op);

// The status a failed communicator's calls return (one place to change
// should the status enum grow TIMEOUT/ABORTED values).
inline conv_status_t state_status(conv_comm_state_t) { return CONV_STATUS_BACKEND_ERROR; }

// The default timeout of new communicators: CONV_COMM_TIMEOUT from the
// environment when it parses as a positive number, else the header's.
double default_timeout();

// Seconds on a monotonic clock.
double now_seconds();

class CommQueue;

// The fused SGD step on device memory (cuda::sgd_update): comm has no
// kernels of its own and does not depend on the CUDA engine, so the API
// hands a device communicator this when the engine is built
// (dispatch::gpu_sgd). Arguments as Communicator::sgd, then the stream and
// device to run on.
using DeviceSgd = void (*)(conv_dtype_t dtype, void *w, const void *g, void *h, float *master,
                           int64_t n, double lr, double momentum, double decay, void *stream,
                           int device);

class Communicator {
public:
    Communicator(int rank, int size);
    virtual ~Communicator();
    Communicator(const Communicator &) = delete;
    Communicator &operator=(const Communicator &) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    virtual conv_comm_backend_t backend() const = 0;
    virtual conv_device_t device() const { return CONV_DEVICE_CPU; }
    virtual int device_index() const { return 0; }

    double timeout() const { return timeout_.load(std::memory_order_relaxed); }
    void set_timeout(double seconds);  // validated by the API
    virtual void set_stream(void *stream);

    // Collectives: check arguments, take the call guard, check the sticky
    // state, run the backend. Any backend failure records the state and
    // throws (BACKEND_ERROR); argument errors throw without touching it.
    void all_reduce(const void *send, void *recv, int64_t count, conv_dtype_t dtype,
                    conv_reduce_op_t op);
    void broadcast(void *buffer, int64_t count, conv_dtype_t dtype, int root);
    void barrier();
    void synchronize();

    // Any thread, any time. The first reason given is kept.
    void abort(const std::string &why);

    // OK, or the sticky failure and its reason (backends may poll here).
    conv_comm_state_t state(std::string *why);
    // Throws the sticky failure, if any, for `what` ("all_reduce").
    void throw_if_failed(const char *what);

    // Sums `n` doubles over the ranks into every rank's `values` (host
    // memory whatever the backend): the reducer's control messages.
    virtual void control_sum(double *values, int n);

    // The reducer's ordered, asynchronous reductions (see CommQueue).
    // `stream`: the compute stream (NCCL), ignored on the host.
    virtual std::unique_ptr<CommQueue> make_queue(void *stream);

    // Memory on the communicator's device, for the reducer. alloc returns
    // zero-filled memory 64-byte aligned, or throws OUT_OF_MEMORY.
    virtual void *alloc(size_t bytes);
    virtual void release(void *p) noexcept;
    virtual void zero(void *p, size_t bytes, void *stream);
    virtual void copy(void *dst, const void *src, size_t bytes, void *stream);
    // The fused SGD step over n elements (kernels.h's sgd_update). `master`:
    // an fp32 copy of half-precision weights on a device (the reducer's, or
    // null), which the device step keeps the weights in between steps.
    virtual void sgd(conv_dtype_t dtype, void *w, const void *g, void *h, float *master, int64_t n,
                     double lr, double momentum, double decay);
    // Whether sgd() wants a master copy for half-precision weights.
    virtual bool sgd_keeps_master() const { return false; }
    // Device communicators: the kernel their sgd() runs (null: UNSUPPORTED).
    virtual void set_device_sgd(DeviceSgd) {}
    // The stream collectives run on (NCCL), for copies ordered with them;
    // nullptr on the host.
    virtual void *collective_stream() { return nullptr; }
    // Host backends run their queue's collectives on a thread of libconv
    // when true; otherwise on the thread that submits (MPI below
    // MPI_THREAD_SERIALIZED).
    virtual bool queue_on_thread() const { return true; }

    // "all_reduce on rank 1 of 4 (in-process)": for messages.
    std::string where(const char *what) const;

protected:
    virtual void do_all_reduce(const void *send, void *recv, int64_t count, conv_dtype_t dtype,
                               conv_reduce_op_t op) = 0;
    virtual void do_broadcast(void *buffer, int64_t count, conv_dtype_t dtype, int root) = 0;
    virtual void do_barrier() = 0;
    virtual void do_synchronize() {}
    // Backend part of an abort (wake waiters, ncclCommAbort); called once,
    // after the state is set, outside the state mutex.
    virtual void do_abort() noexcept {}
    // A backend's chance to notice a failure asynchronously (NCCL).
    virtual void poll() {}

    // Records a failure (unless one is recorded), runs do_abort for the
    // first one, and throws the recorded failure.
    [[noreturn]] void fail_with(conv_comm_state_t state, const std::string &why);
    // Records without throwing; true when this was the first failure.
    bool record_failure(conv_comm_state_t state, const std::string &why) noexcept;
    // Whether a failure is recorded (cheap: for polling loops).
    bool has_failed() const { return failed_.load(std::memory_order_acquire); }

private:
    // One call at a time: the guard refuses a second concurrent caller.
    class CallGuard {
    public:
        CallGuard(Communicator &c, const char *what);
        ~CallGuard() { c_.busy_.store(false, std::memory_order_release); }

    private:
        Communicator &c_;
    };
    void check_buffer_args(const void *p, int64_t count, conv_dtype_t dtype, const char *arg,
                           const char *what) const;

    const int rank_;
    const int size_;
    std::atomic<double> timeout_;
    std::atomic<bool> busy_{false};
    std::atomic<bool> failed_{false};  // fast path for state checks
    mutable std::mutex state_mutex_;
    conv_comm_state_t state_ = CONV_COMM_STATE_OK;
    std::string reason_;
};

// An ordered queue of in-place reductions running alongside the caller:
// the reducer's buckets. Host backends run them on a thread; NCCL on its
// stream after the compute stream's work. `wait` ends a step: it blocks
// (host) or makes the compute stream wait (NCCL), then throws the first
// failure of the step, if any. Not thread-safe: the reducer serialises.
class CommQueue {
public:
    virtual ~CommQueue() = default;
    virtual void submit(void *data, int64_t count, conv_dtype_t dtype, conv_reduce_op_t op) = 0;
    virtual void wait() = 0;
    // Whether a submitted reduction is unfinished (host), for destroy.
    virtual bool busy() = 0;
    // The last step's busy time of the communication (host; 0 otherwise).
    virtual double busy_seconds() const { return 0.0; }
    // Starts a new step's accounting.
    virtual void reset_stats() {}
};

// The host queue: a thread of libconv (or the submitting thread) runs the
// communicator's blocking all_reduce in submission order.
std::unique_ptr<CommQueue> make_host_queue(Communicator &comm, bool on_thread);

}  // namespace conv::comm
