// The MPI backend (host memory; compiled only with CONV_COMM_HAVE_MPI).
//
// libconv never initialises MPI. It works on a duplicate of the
// application's communicator (MPI_Comm_idup) with MPI_ERRORS_RETURN, so its
// traffic never mixes with the application's and an MPI error comes back as
// a status. Every collective is non-blocking (MPI_Iallreduce, MPI_Ibcast,
// MPI_Ibarrier) and completed by an MPI_Test loop that also watches the
// timeout and the abort flag: a peer that never comes is a timeout, not a
// hang. MPI cannot cancel a collective, so an interrupted one stays pending
// (documented at conv_comm_abort).
//
// FLOAT16/BFLOAT16 have no MPI type: they are widened to float in a staging
// buffer, summed as MPI_FLOAT, divided, and rounded back once -- the same
// arithmetic as the in-process backend, with MPI's summation order.
//
// libmpi is opened at run time (comm/mpi_library.h): the MPI_* names below
// are its table's.
#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>
#include <vector>

#include "comm/backends.h"
#include "comm/kernels.h"
#include "comm/mpi_library.h"
#include "core/dtype.h"

namespace conv::comm {
namespace {

// Largest count one MPI call takes here (MPI counts are int).
constexpr int64_t kMaxChunk = int64_t(1) << 30;

std::string mpi_error(int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return format("MPI error %d", rc);
    return format("MPI error %d: %.*s", rc, len, text);
}

void require_mpi_ready(const char *what) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init)
        fail(CONV_STATUS_NOT_AVAILABLE,
             "%s: MPI is not initialised: the application calls MPI_Init_thread (libconv never "
             "initialises MPI itself)",
             what);
    if (fin) fail(CONV_STATUS_NOT_AVAILABLE, "%s: MPI is already finalised", what);
}

// Polls `req` to completion. Returns "" when done, else why not: an MPI
// error, the deadline passed, or `stop()` became true. MPI progresses a
// non-blocking collective inside MPI_Test, so the loop tests back to back
// (yielding the core to other threads between tests) and only slows down,
// to spare the CPU, once a peer has kept it waiting for a while.
template <class Stop>
std::string poll_request(MPI_Request &req, double deadline, Stop &&stop, bool *timed_out) {
    *timed_out = false;
    const double start = now_seconds();
    for (long spins = 0;; ++spins) {
        int flag = 0;
        int rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_error(rc);
        if (flag) return std::string();
        if (stop()) return "aborted";
        if ((spins & 63) == 63) {
            double t = now_seconds();
            if (t > deadline) {
                *timed_out = true;
                return "timed out";
            }
            if (t - start > 0.25) {
                std::this_thread::sleep_for(std::chrono::microseconds(100));
                continue;
            }
        }
        std::this_thread::yield();
    }
}

class MpiCommunicator final : public Communicator {
public:
    MpiCommunicator(MPI_Comm comm, int rank, int size, int thread_level)
        : Communicator(rank, size), comm_(comm), thread_level_(thread_level) {}

    ~MpiCommunicator() override {
        if (abandoned_) {
            // A collective was left pending (timeout, abort): MPI may still
            // progress it, on this communicator and into its buffers, so
            // both stay (Open MPI's non-blocking collectives crash on a freed
            // communicator). A bounded leak after a failure.
            new std::vector<float>(std::move(staging_));
            return;
        }
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Comm_free(&comm_);
    }

    conv_comm_backend_t backend() const override { return CONV_COMM_BACKEND_MPI; }
    bool queue_on_thread() const override { return thread_level_ >= MPI_THREAD_SERIALIZED; }

protected:
    void do_all_reduce(const void *send, void *recv, int64_t count, conv_dtype_t dtype,
                       conv_reduce_op_t op) override {
        if (count == 0) return;
        const bool average = op == CONV_REDUCE_AVERAGE;
        if (dtype == CONV_DTYPE_FLOAT16 || dtype == CONV_DTYPE_BFLOAT16) {
            if ((int64_t)staging_.size() < count) staging_.resize((size_t)count);
            widen_to_float(dtype, send, staging_.data(), count);
            reduce_chunks(MPI_IN_PLACE, staging_.data(), count, MPI_FLOAT, sizeof(float));
            if (average) divide(CONV_DTYPE_FLOAT32, staging_.data(), count, size());
            narrow_from_float(dtype, staging_.data(), recv, count);
            return;
        }
        MPI_Datatype type = dtype == CONV_DTYPE_FLOAT64 ? MPI_DOUBLE : MPI_FLOAT;
        reduce_chunks(send == recv ? MPI_IN_PLACE : send, recv, count, type, dtype_size(dtype));
        if (average) divide(dtype, recv, count, size());
    }

    void do_broadcast(void *buffer, int64_t count, conv_dtype_t dtype, int root) override {
        int64_t bytes = count * (int64_t)dtype_size(dtype);
        for (int64_t off = 0; off < bytes; off += kMaxChunk) {
            int n = (int)std::min<int64_t>(kMaxChunk, bytes - off);
            MPI_Request req;
            int rc = MPI_Ibcast(static_cast<char *>(buffer) + off, n, MPI_BYTE, root, comm_, &req);
            complete(rc, req, "broadcast");
        }
    }

    void do_barrier() override {
        MPI_Request req;
        int rc = MPI_Ibarrier(comm_, &req);
        complete(rc, req, "barrier");
    }

private:
    void reduce_chunks(const void *send, void *recv, int64_t count, MPI_Datatype type,
                       size_t elem) {
        for (int64_t off = 0; off < count; off += kMaxChunk) {
            int n = (int)std::min<int64_t>(kMaxChunk, count - off);
            const void *s = send == MPI_IN_PLACE
                                ? MPI_IN_PLACE
                                : static_cast<const char *>(send) + (size_t)off * elem;
            MPI_Request req;
            int rc = MPI_Iallreduce(s, static_cast<char *>(recv) + (size_t)off * elem, n, type,
                                    MPI_SUM, comm_, &req);
            complete(rc, req, "all_reduce");
        }
    }

    // Completes a started request within the timeout, or fails (sticky).
    void complete(int rc, MPI_Request &req, const char *what) {
        if (rc != MPI_SUCCESS)
            fail_with(CONV_COMM_STATE_FAILED, where(what) + ": " + mpi_error(rc));
        const double limit = timeout();
        bool timed_out = false;
        std::string why =
            poll_request(req, now_seconds() + limit, [this] { return has_failed(); }, &timed_out);
        if (why.empty()) return;
        abandoned_ = true;
        if (timed_out)
            fail_with(CONV_COMM_STATE_TIMED_OUT,
                      format("%s timed out after %g s waiting for the other ranks",
                             where(what).c_str(), limit));
        if (has_failed()) throw_if_failed(what);  // aborted while waiting
        fail_with(CONV_COMM_STATE_FAILED, where(what) + ": " + why);
    }

    MPI_Comm comm_;
    int thread_level_;
    std::vector<float> staging_;
    bool abandoned_ = false;  // a request was left pending
};

}  // namespace

bool mpi_available(std::string *why) {
    if (why) *why = mpi_unavailable_reason();
    return mpi_unavailable_reason().empty();
}

std::unique_ptr<Communicator> make_mpi(const void *mpi_comm) {
    const char *what = mpi_comm ? "conv_comm_create_mpi" : "conv_comm_create_mpi_world";
    if (!mpi_unavailable_reason().empty())
        fail(CONV_STATUS_NOT_AVAILABLE, "%s: %s", what, mpi_unavailable_reason().c_str());
    require_mpi_ready(what);
    MPI_Comm parent = mpi_comm ? *static_cast<const MPI_Comm *>(mpi_comm) : MPI_COMM_WORLD;
    if (parent == MPI_COMM_NULL) fail(CONV_STATUS_INVALID_ARGUMENT, "%s: MPI_COMM_NULL", what);
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Request req;
    int rc = MPI_Comm_idup(parent, &dup, &req);
    if (rc != MPI_SUCCESS) fail(CONV_STATUS_BACKEND_ERROR, "%s: MPI_Comm_idup: %s", what,
                                mpi_error(rc).c_str());
    const double limit = default_timeout();
    bool timed_out = false;
    std::string why = poll_request(req, now_seconds() + limit, [] { return false; }, &timed_out);
    if (timed_out)
        fail(CONV_STATUS_BACKEND_ERROR,
             "%s timed out after %g s: not every rank of the MPI communicator called it", what,
             limit);
    if (!why.empty()) fail(CONV_STATUS_BACKEND_ERROR, "%s: %s", what, why.c_str());
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(dup, &rank);
    MPI_Comm_size(dup, &size);
    try {
        return std::make_unique<MpiCommunicator>(dup, rank, size, level);
    } catch (...) {
        MPI_Comm_free(&dup);
        throw;
    }
}

}  // namespace conv::comm
