// The NCCL backend: one rank per GPU, device memory (compiled only with
// CONV_COMM_HAVE_NCCL). NOT TESTED ON THIS PROJECT'S CI, which has no GPU:
// tests/comm/test_comm_nccl.c runs it where a GPU is present.
//
// Loading: libnccl.so.2 (or $CONV_NCCL_LIBRARY) and the CUDA runtime are
// opened with dlopen (core/shared_library.h) when first needed, not linked. libconv.so therefore loads, and every other
// backend works, on machines without CUDA or NCCL; the NCCL functions then
// fail with NOT_AVAILABLE, naming what is missing. Only nccl.h and
// cuda_runtime_api.h are needed to compile (for the types and prototypes).
//
// Non-blocking communicators (ncclConfig_t.blocking = 0): every NCCL call
// returns at once, possibly with ncclInProgress, and is completed by polling
// ncclCommGetAsyncError -- so that initialisation can time out and
// ncclCommAbort can end anything. Every NCCL call on a communicator is made
// under its mutex (each is short), and so is the abort: after the abort the
// handle is gone and no call uses it again.
//
// Collectives are enqueued on the communicator's stream and return. A
// watchdog thread per communicator (PyTorch's ProcessGroupNCCL does the
// same) follows the enqueued collectives through CUDA events: one that is
// still running after the timeout, or an asynchronous NCCL error, aborts
// the communicator (sticky), so that the GPU work ends and the next call
// fails rather than waits.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/backends.h"
#include "core/dtype.h"
#include "core/shared_library.h"

static_assert(NCCL_UNIQUE_ID_BYTES <= CONV_COMM_UNIQUE_ID_BYTES,
              "CONV_COMM_UNIQUE_ID_BYTES must hold an ncclUniqueId");

namespace conv::comm {
namespace {

// ------------------------------------------------------------------ loading

#define CONV_NCCL_FUNCS(X)                                                                  \
    X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommGetAsyncError)   \
    X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort) X(ncclAllReduce) X(ncclBroadcast) \
    X(ncclGroupStart) X(ncclGroupEnd) X(ncclGetErrorString)
#define CONV_CUDART_FUNCS(X)                                                                  \
    X(cudaGetDeviceCount) X(cudaGetDevice) X(cudaSetDevice) X(cudaGetErrorString)            \
    X(cudaStreamCreateWithFlags) X(cudaStreamDestroy) X(cudaStreamQuery) X(cudaStreamWaitEvent) \
    X(cudaEventCreateWithFlags) X(cudaEventDestroy) X(cudaEventRecord) X(cudaEventQuery)      \
    X(cudaFree) X(cudaMemset) X(cudaMemsetAsync) X(cudaMemcpyAsync)

struct Api {
#define CONV_NCCL_FN(name) decltype(&::name) name = nullptr;
    CONV_NCCL_FUNCS(CONV_NCCL_FN)
    CONV_CUDART_FUNCS(CONV_NCCL_FN)
#undef CONV_NCCL_FN
    // (cudaMalloc has C++ template overloads in cuda_runtime.h)
    cudaError_t (*cudaMalloc)(void **, size_t) = nullptr;
    int devices = 0;
    std::string error;  // why not usable, "" when usable
};

const Api &api() {
    static const Api *loaded = [] {
        Api *a = new Api();  // never freed: the libraries stay loaded
        auto *nccl = new SharedLibrary("NCCL", "CONV_NCCL_LIBRARY", {"libnccl.so.2"});
#define CONV_LOAD(name) nccl->get(#name, a->name);
        CONV_NCCL_FUNCS(CONV_LOAD)
#undef CONV_LOAD
        if (!nccl->ok()) {
            a->error = nccl->error();
            return a;
        }
#if defined(CONV_HAVE_CUDA) && CONV_HAVE_CUDA
        // libconv's CUDA engine links the CUDA runtime: use that one, so
        // that streams, events and memory are the engine's.
#define CONV_LINKED(name) a->name = &::name;
        CONV_CUDART_FUNCS(CONV_LINKED)
#undef CONV_LINKED
        a->cudaMalloc = [](void **p, size_t n) { return ::cudaMalloc(p, n); };
#else
        const std::string cudart = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
        auto *rt = new SharedLibrary("the CUDA runtime", nullptr, {cudart.c_str(), "libcudart.so"});
#define CONV_LOAD(name) rt->get(#name, a->name);
        CONV_CUDART_FUNCS(CONV_LOAD)
        CONV_LOAD(cudaMalloc)
#undef CONV_LOAD
        if (!rt->ok()) {
            a->error = rt->error();
            return a;
        }
#endif
        int version = 0;
        a->ncclGetVersion(&version);
        if (version < 21400) {  // non-blocking communicators, ncclAvg, bfloat16
            a->error = format("the NCCL library is version %d; libconv needs 2.14 or later",
                              version);
            return a;
        }
        cudaError_t e = a->cudaGetDeviceCount(&a->devices);
        if (e != cudaSuccess || a->devices <= 0) {
            a->devices = 0;
            a->error = e != cudaSuccess
                           ? format("no usable GPU: %s", a->cudaGetErrorString(e))
                           : std::string("no GPU is present");
        }
        return a;
    }();
    return *loaded;
}

const Api &require_api(const char *what) {
    const Api &a = api();
    if (!a.error.empty()) fail(CONV_STATUS_NOT_AVAILABLE, "%s: %s", what, a.error.c_str());
    return a;
}

void check_device(const Api &a, int device, const char *what) {
    if (device < 0 || device >= a.devices)
        fail(CONV_STATUS_INVALID_ARGUMENT, "%s: GPU %d does not exist (%d present)", what, device,
             a.devices);
}

// Makes `device` current for the scope, restoring the caller's device.
class DeviceGuard {
public:
    DeviceGuard(const Api &a, int device) : a_(a) {
        if (a_.cudaGetDevice(&saved_) != cudaSuccess) saved_ = -1;
        if (saved_ != device) a_.cudaSetDevice(device);
    }
    ~DeviceGuard() {
        int now = -1;
        if (saved_ >= 0 && a_.cudaGetDevice(&now) == cudaSuccess && now != saved_)
            a_.cudaSetDevice(saved_);
    }

private:
    const Api &a_;
    int saved_ = -1;
};

ncclDataType_t nccl_type(conv_dtype_t d) {
    switch (d) {
    case CONV_DTYPE_FLOAT64: return ncclFloat64;
    case CONV_DTYPE_FLOAT16: return ncclFloat16;
    case CONV_DTYPE_BFLOAT16: return ncclBfloat16;
    default: return ncclFloat32;
    }
}

// Waits for a non-blocking communicator's pending call (ncclInProgress).
// Returns ncclSuccess, an error, or ncclInProgress at the deadline.
ncclResult_t settle(const Api &a, ncclComm_t comm, ncclResult_t rc, double deadline) {
    while (rc == ncclInProgress) {
        ncclResult_t st = ncclSuccess;
        if (a.ncclCommGetAsyncError(comm, &st) != ncclSuccess) return ncclInternalError;
        if (st != ncclInProgress) return st;
        if (now_seconds() > deadline) return ncclInProgress;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return rc;
}

// --------------------------------------------------------------- communicator

class NcclCommunicator final : public Communicator {
public:
    NcclCommunicator(const Api &a, ncclComm_t comm, int rank, int size, int device)
        : Communicator(rank, size), a_(a), comm_(comm), device_(device) {
        DeviceGuard g(a_, device_);
        cuda(a_.cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking), "stream");
        stream_ = own_stream_;
        cuda(a_.cudaMalloc(&scratch_, kScratchBytes), "scratch memory");
        watchdog_ = std::thread([this] { watch(); });
    }

    ~NcclCommunicator() override {
        {
            std::lock_guard<std::mutex> lock(wd_mutex_);
            stop_ = true;
        }
        wd_cv_.notify_all();
        if (watchdog_.joinable()) watchdog_.join();
        DeviceGuard g(a_, device_);
        {
            std::lock_guard<std::mutex> lock(nccl_mutex_);
            if (comm_) {  // finalize (waits for enqueued work), then destroy
                double deadline = now_seconds() + timeout();
                ncclResult_t rc = settle(a_, comm_, a_.ncclCommFinalize(comm_), deadline);
                if (rc == ncclSuccess)
                    a_.ncclCommDestroy(comm_);
                else
                    a_.ncclCommAbort(comm_);
                comm_ = nullptr;
            }
        }
        for (auto &p : pending_) a_.cudaEventDestroy(p.first);
        for (cudaEvent_t e : free_events_) a_.cudaEventDestroy(e);
        if (scratch_) a_.cudaFree(scratch_);
        if (own_stream_) a_.cudaStreamDestroy(own_stream_);
    }

    conv_comm_backend_t backend() const override { return CONV_COMM_BACKEND_NCCL; }
    conv_device_t device() const override { return CONV_DEVICE_CUDA; }
    int device_index() const override { return device_; }

    void set_stream(void *stream) override {
        std::lock_guard<std::mutex> lock(nccl_mutex_);
        stream_ = stream ? static_cast<cudaStream_t>(stream) : own_stream_;
    }
    cudaStream_t stream() {
        std::lock_guard<std::mutex> lock(nccl_mutex_);
        return stream_;
    }

    void control_sum(double *values, int n) override {
        throw_if_failed("control_sum");
        size_t bytes = (size_t)n * sizeof(double);
        double *dev = nullptr;
        {
            DeviceGuard g(a_, device_);
            cuda(a_.cudaMalloc(reinterpret_cast<void **>(&dev), bytes ? bytes : 8), "control");
        }
        struct Free {
            const Api &a;
            void *p;
            ~Free() { a.cudaFree(p); }
        } free_dev{a_, dev};
        copy(dev, values, bytes, stream(), cudaMemcpyHostToDevice);
        all_reduce(dev, dev, n, CONV_DTYPE_FLOAT64, CONV_REDUCE_SUM);
        copy(values, dev, bytes, stream(), cudaMemcpyDeviceToHost);
        synchronize();
    }

    std::unique_ptr<CommQueue> make_queue(void *stream) override;

    void *alloc(size_t bytes) override {
        DeviceGuard g(a_, device_);
        void *p = nullptr;
        cudaError_t e = a_.cudaMalloc(&p, bytes ? bytes : 1);
        if (e != cudaSuccess)
            fail(CONV_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes on GPU %d: %s", bytes,
                 device_, a_.cudaGetErrorString(e));
        e = a_.cudaMemset(p, 0, bytes);
        if (e != cudaSuccess) {
            a_.cudaFree(p);
            fail(CONV_STATUS_BACKEND_ERROR, "cudaMemset: %s", a_.cudaGetErrorString(e));
        }
        return p;
    }
    void release(void *p) noexcept override {
        if (!p) return;
        DeviceGuard g(a_, device_);
        a_.cudaFree(p);
    }
    void zero(void *p, size_t bytes, void *stream) override {
        DeviceGuard g(a_, device_);
        cuda(a_.cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync");
    }
    void copy(void *dst, const void *src, size_t bytes, void *stream) override {
        copy(dst, src, bytes, static_cast<cudaStream_t>(stream), cudaMemcpyDeviceToDevice);
    }
    // On the communicator's stream, by the CUDA engine's kernel.
    void sgd(conv_dtype_t dtype, void *w, const void *g, void *h, float *master, int64_t n,
             double lr, double momentum, double decay) override {
        if (!device_sgd_)
            fail(CONV_STATUS_UNSUPPORTED,
                 "conv_reducer_apply_sgd on GPU memory needs libconv's CUDA engine (its update "
                 "kernel), which this build does not have");
        if (n > 0) device_sgd_(dtype, w, g, h, master, n, lr, momentum, decay, stream(), device_);
    }
    bool sgd_keeps_master() const override { return true; }
    void set_device_sgd(DeviceSgd f) override { device_sgd_ = f; }
    bool queue_on_thread() const override { return false; }
    void *collective_stream() override { return stream(); }

    // Records an event on `stream` and makes the collective stream wait.
    void wait_for(cudaStream_t compute, cudaEvent_t ev) {
        DeviceGuard g(a_, device_);
        cuda(a_.cudaEventRecord(ev, compute), "cudaEventRecord");
        cuda(a_.cudaStreamWaitEvent(stream(), ev, 0), "cudaStreamWaitEvent");
    }
    void make_wait(cudaStream_t compute, cudaEvent_t ev) {
        DeviceGuard g(a_, device_);
        cuda(a_.cudaEventRecord(ev, stream()), "cudaEventRecord");
        cuda(a_.cudaStreamWaitEvent(compute, ev, 0), "cudaStreamWaitEvent");
    }
    cudaEvent_t new_event() {
        DeviceGuard g(a_, device_);
        cudaEvent_t ev;
        cuda(a_.cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
        return ev;
    }
    void destroy_event(cudaEvent_t ev) noexcept {
        DeviceGuard g(a_, device_);
        a_.cudaEventDestroy(ev);
    }

protected:
    void do_all_reduce(const void *send, void *recv, int64_t count, conv_dtype_t dtype,
                       conv_reduce_op_t op) override {
        if (count == 0) return;
        enqueue("all_reduce", [&](ncclComm_t c, cudaStream_t s) {
            return a_.ncclAllReduce(send, recv, (size_t)count, nccl_type(dtype),
                                    op == CONV_REDUCE_AVERAGE ? ncclAvg : ncclSum, c, s);
        });
    }

    void do_broadcast(void *buffer, int64_t count, conv_dtype_t dtype, int root) override {
        if (count == 0) return;
        enqueue("broadcast", [&](ncclComm_t c, cudaStream_t s) {
            return a_.ncclBroadcast(buffer, buffer, (size_t)count, nccl_type(dtype), root, c, s);
        });
    }

    void do_barrier() override {
        enqueue("barrier", [&](ncclComm_t c, cudaStream_t s) {
            return a_.ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, c, s);
        });
        do_synchronize();
    }

    void do_synchronize() override {
        const double limit = timeout();
        const double deadline = now_seconds() + limit;
        for (;;) {
            cudaError_t e;
            {
                DeviceGuard g(a_, device_);
                e = a_.cudaStreamQuery(stream());
            }
            if (e == cudaSuccess) break;
            if (e != cudaErrorNotReady)
                fail_with(CONV_COMM_STATE_FAILED,
                          where("synchronize") + ": " + a_.cudaGetErrorString(e));
            poll();
            throw_if_failed("synchronize");
            if (now_seconds() > deadline)
                fail_with(CONV_COMM_STATE_TIMED_OUT,
                          format("%s timed out after %g s waiting for the GPU work",
                                 where("synchronize").c_str(), limit));
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        poll();
        throw_if_failed("synchronize");
    }

    void do_abort() noexcept override {
        std::lock_guard<std::mutex> lock(nccl_mutex_);
        if (comm_) {
            DeviceGuard g(a_, device_);
            a_.ncclCommAbort(comm_);
            comm_ = nullptr;
        }
        wd_cv_.notify_all();
    }

    void poll() override {
        ncclResult_t st = ncclSuccess;
        {
            std::lock_guard<std::mutex> lock(nccl_mutex_);
            if (!comm_ || a_.ncclCommGetAsyncError(comm_, &st) != ncclSuccess) return;
        }
        if (st != ncclSuccess && st != ncclInProgress)
            record_failure(CONV_COMM_STATE_FAILED,
                           format("NCCL reported an asynchronous error on rank %d of %d: %s",
                                  rank(), size(), a_.ncclGetErrorString(st)));
    }

private:
    static constexpr size_t kScratchBytes = 256;

    void cuda(cudaError_t e, const char *what) {
        if (e != cudaSuccess)
            fail(CONV_STATUS_BACKEND_ERROR, "CUDA error (%s) on GPU %d: %s", what, device_,
                 a_.cudaGetErrorString(e));
    }

    void copy(void *dst, const void *src, size_t bytes, cudaStream_t s, cudaMemcpyKind kind) {
        if (!bytes) return;
        DeviceGuard g(a_, device_);
        cuda(a_.cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    }

    // One NCCL call: made under the mutex, completed (host side) within the
    // timeout, then followed by the watchdog through an event.
    template <class Call>
    void enqueue(const char *what, Call &&call) {
        const double limit = timeout();
        const double deadline = now_seconds() + limit;
        ncclResult_t rc;
        cudaStream_t s;
        {
            std::lock_guard<std::mutex> lock(nccl_mutex_);
            DeviceGuard g(a_, device_);
            s = stream_;
            rc = comm_ ? settle(a_, comm_, call(comm_, s), deadline) : ncclInvalidUsage;
        }
        if (rc == ncclInProgress)
            fail_with(CONV_COMM_STATE_TIMED_OUT,
                      format("%s timed out after %g s", where(what).c_str(), limit));
        if (rc != ncclSuccess) {
            throw_if_failed(what);  // aborted meanwhile
            fail_with(CONV_COMM_STATE_FAILED,
                      where(what) + ": " + a_.ncclGetErrorString(rc));
        }
        cudaEvent_t ev;
        {
            std::lock_guard<std::mutex> lock(wd_mutex_);
            if (free_events_.empty()) {
                ev = new_event();
            } else {
                ev = free_events_.back();
                free_events_.pop_back();
            }
        }
        {
            DeviceGuard g(a_, device_);
            cudaError_t e = a_.cudaEventRecord(ev, s);
            std::lock_guard<std::mutex> lock(wd_mutex_);
            if (e != cudaSuccess) {
                free_events_.push_back(ev);
                return;  // not followed; synchronize still bounds it
            }
            pending_.emplace_back(ev, now_seconds());
        }
        wd_cv_.notify_all();
    }

    // The watchdog: the oldest pending collective must end within the
    // timeout; NCCL's asynchronous errors are noticed here too.
    void watch() {
        a_.cudaSetDevice(device_);
        std::unique_lock<std::mutex> lock(wd_mutex_);
        while (!stop_) {
            wd_cv_.wait_for(lock, std::chrono::milliseconds(pending_.empty() ? 500 : 20));
            if (stop_ || has_failed()) continue;
            while (!pending_.empty()) {
                cudaError_t e = a_.cudaEventQuery(pending_.front().first);
                if (e == cudaErrorNotReady) break;
                free_events_.push_back(pending_.front().first);
                pending_.pop_front();
            }
            double started = pending_.empty() ? 0.0 : pending_.front().second;
            lock.unlock();
            poll();
            double limit = timeout();
            if (started > 0 && !has_failed() && now_seconds() - started > limit)
                record_failure(CONV_COMM_STATE_TIMED_OUT,
                               format("a collective on rank %d of %d (NCCL, GPU %d) was still "
                                      "running after the timeout of %g s",
                                      rank(), size(), device_, limit));
            lock.lock();
        }
    }

    const Api &a_;
    std::mutex nccl_mutex_;
    ncclComm_t comm_;
    int device_;
    cudaStream_t own_stream_ = nullptr;
    cudaStream_t stream_ = nullptr;
    DeviceSgd device_sgd_ = nullptr;
    void *scratch_ = nullptr;
    // watchdog
    std::mutex wd_mutex_;
    std::condition_variable wd_cv_;
    std::deque<std::pair<cudaEvent_t, double>> pending_;
    std::vector<cudaEvent_t> free_events_;
    bool stop_ = false;
    std::thread watchdog_;
};

// The reducer's queue on a GPU: each bucket's reduction waits (on the GPU)
// for the compute stream's work at the time of the mark, and the end of a
// step makes the compute stream wait for the reductions. No host sync.
class NcclQueue final : public CommQueue {
public:
    NcclQueue(NcclCommunicator &c, cudaStream_t compute)
        : c_(c), compute_(compute), ready_(c.new_event()) {
        try {
            done_ = c.new_event();
        } catch (...) {
            c.destroy_event(ready_);
            throw;
        }
    }
    ~NcclQueue() override {
        c_.destroy_event(ready_);
        c_.destroy_event(done_);
    }
    void submit(void *data, int64_t count, conv_dtype_t dtype, conv_reduce_op_t op) override {
        c_.wait_for(compute_, ready_);
        c_.all_reduce(data, data, count, dtype, op);
    }
    void wait() override {
        c_.make_wait(compute_, done_);
        c_.throw_if_failed("conv_reducer_finish");
    }
    bool busy() override { return false; }

private:
    NcclCommunicator &c_;
    cudaStream_t compute_;
    cudaEvent_t ready_ = nullptr;
    cudaEvent_t done_ = nullptr;
};

std::unique_ptr<CommQueue> NcclCommunicator::make_queue(void *stream) {
    return std::make_unique<NcclQueue>(*this, static_cast<cudaStream_t>(stream));
}

ncclConfig_t nonblocking_config() {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    return cfg;
}

}  // namespace

bool nccl_built() { return true; }

bool nccl_available(std::string *why) {
    const Api &a = api();
    if (why) *why = a.error;
    return a.error.empty();
}

void nccl_unique_id(void *id, size_t bytes) {
    const Api &a = require_api("conv_comm_unique_id");
    ncclUniqueId uid;
    ncclResult_t rc = a.ncclGetUniqueId(&uid);
    if (rc != ncclSuccess)
        fail(CONV_STATUS_BACKEND_ERROR, "ncclGetUniqueId: %s", a.ncclGetErrorString(rc));
    std::memset(id, 0, bytes);
    std::memcpy(id, &uid, sizeof uid);
}

std::unique_ptr<Communicator> make_nccl(const void *id, int nranks, int rank, int device) {
    const char *what = "conv_comm_create_nccl";
    const Api &a = require_api(what);
    check_device(a, device, what);
    ncclUniqueId uid;
    std::memcpy(&uid, id, sizeof uid);
    ncclConfig_t cfg = nonblocking_config();
    ncclComm_t comm = nullptr;
    const double limit = default_timeout();
    ncclResult_t rc;
    {
        DeviceGuard g(a, device);
        rc = a.ncclCommInitRankConfig(&comm, nranks, uid, rank, &cfg);
        if (comm) rc = settle(a, comm, rc, now_seconds() + limit);
    }
    if (rc != ncclSuccess) {
        if (comm) a.ncclCommAbort(comm);
        if (rc == ncclInProgress)
            fail(CONV_STATUS_BACKEND_ERROR,
                 "%s timed out after %g s on rank %d of %d: not every rank joined", what, limit,
                 rank, nranks);
        fail(CONV_STATUS_BACKEND_ERROR, "%s (rank %d of %d, GPU %d): %s", what, rank, nranks,
             device, a.ncclGetErrorString(rc));
    }
    try {
        return std::make_unique<NcclCommunicator>(a, comm, rank, nranks, device);
    } catch (...) {
        a.ncclCommAbort(comm);
        throw;
    }
}

std::vector<std::unique_ptr<Communicator>> make_nccl_all(int ndevices, const int *devices) {
    const char *what = "conv_comm_create_nccl_all";
    const Api &a = require_api(what);
    std::vector<int> devs((size_t)ndevices);
    for (int i = 0; i < ndevices; ++i) {
        devs[(size_t)i] = devices ? devices[i] : i;
        check_device(a, devs[(size_t)i], what);
    }
    ncclUniqueId uid;
    ncclResult_t rc = a.ncclGetUniqueId(&uid);
    if (rc != ncclSuccess)
        fail(CONV_STATUS_BACKEND_ERROR, "%s: ncclGetUniqueId: %s", what, a.ncclGetErrorString(rc));
    std::vector<ncclComm_t> comms((size_t)ndevices, nullptr);
    ncclConfig_t cfg = nonblocking_config();
    const double limit = default_timeout();
    int saved = -1;
    a.cudaGetDevice(&saved);
    rc = a.ncclGroupStart();
    for (int i = 0; i < ndevices && rc == ncclSuccess; ++i) {
        a.cudaSetDevice(devs[(size_t)i]);
        ncclConfig_t c = cfg;
        rc = a.ncclCommInitRankConfig(&comms[(size_t)i], ndevices, uid, i, &c);
        if (rc == ncclInProgress) rc = ncclSuccess;
    }
    ncclResult_t end = a.ncclGroupEnd();
    if (rc == ncclSuccess && end != ncclInProgress) rc = end;
    for (int i = 0; i < ndevices && rc == ncclSuccess; ++i)
        if (comms[(size_t)i])
            rc = settle(a, comms[(size_t)i], ncclInProgress, now_seconds() + limit);
    if (saved >= 0) a.cudaSetDevice(saved);
    auto abort_all = [&] {
        for (ncclComm_t c : comms)
            if (c) a.ncclCommAbort(c);
    };
    if (rc != ncclSuccess) {
        abort_all();
        if (rc == ncclInProgress)
            fail(CONV_STATUS_BACKEND_ERROR, "%s timed out after %g s", what, limit);
        fail(CONV_STATUS_BACKEND_ERROR, "%s (%d GPUs): %s", what, ndevices,
             a.ncclGetErrorString(rc));
    }
    std::vector<std::unique_ptr<Communicator>> out;
    size_t made = 0;
    try {
        out.reserve((size_t)ndevices);
        for (; made < (size_t)ndevices; ++made)
            out.push_back(std::make_unique<NcclCommunicator>(a, comms[made], (int)made, ndevices,
                                                             devs[made]));
    } catch (...) {
        for (size_t i = made; i < comms.size(); ++i) a.ncclCommAbort(comms[i]);
        throw;  // the communicators made so far are destroyed with `out`
    }
    return out;
}

}  // namespace conv::comm
