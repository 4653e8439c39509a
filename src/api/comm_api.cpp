// Communicators: creation for the three backends, queries, collectives,
// timeout, abort and the asynchronous-error query (docs/comm.md).
#include <cmath>
#include <vector>

#include "api/comm_handles.h"
#include "api/guard.h"
#include "comm/backends.h"
#include "dispatch/gpu.h"
#include "core/dtype.h"

using namespace conv;
using conv::comm::Communicator;

namespace {

constexpr int kMaxLocalRanks = 1024;

conv_comm_t wrap(std::unique_ptr<Communicator> c) {
    return api::make_handle<conv_comm_s>(std::shared_ptr<Communicator>(std::move(c)));
}

// Wraps every communicator of a group, writing `out` only when all are.
void wrap_all(std::vector<std::unique_ptr<Communicator>> group, conv_comm_t *out) {
    std::vector<conv_comm_t> handles;
    try {
        handles.reserve(group.size());
        for (auto &c : group) handles.push_back(wrap(std::move(c)));
    } catch (...) {
        for (conv_comm_t h : handles) api::destroy(h);
        throw;
    }
    for (size_t i = 0; i < handles.size(); ++i) out[i] = handles[i];
}

Communicator &comm_of(conv_comm_t c) { return *api::checked(c, "comm").impl; }

}  // namespace

extern "C" {

conv_status_t conv_comm_backend_available(conv_comm_backend_t backend, int *available) {
    return api::guarded([&] {
        api::require(available, "available");
        switch (backend) {
        case CONV_COMM_BACKEND_LOCAL: *available = 1; break;
        case CONV_COMM_BACKEND_MPI: *available = comm::mpi_available(nullptr) ? 1 : 0; break;
        case CONV_COMM_BACKEND_NCCL: *available = comm::nccl_available(nullptr) ? 1 : 0; break;
        default: fail(CONV_STATUS_INVALID_ARGUMENT, "unknown communicator backend %d", (int)backend);
        }
    });
}

conv_status_t conv_comm_create_local(int nranks, conv_comm_t *comms) {
    return api::guarded([&] {
        api::require(comms, "comms");
        if (nranks < 1 || nranks > kMaxLocalRanks)
            fail(CONV_STATUS_INVALID_ARGUMENT, "nranks %d is outside 1..%d", nranks,
                 kMaxLocalRanks);
        wrap_all(comm::make_local_group(nranks), comms);
    });
}

conv_status_t conv_comm_create_mpi(const void *mpi_comm, conv_comm_t *out) {
    return api::guarded([&] {
        api::require(out, "out");
        api::require(mpi_comm, "mpi_comm");
        *out = wrap(comm::make_mpi(mpi_comm));
    });
}

conv_status_t conv_comm_create_mpi_world(conv_comm_t *out) {
    return api::guarded([&] {
        api::require(out, "out");
        *out = wrap(comm::make_mpi(nullptr));
    });
}

conv_status_t conv_comm_unique_id(void *id, size_t bytes) {
    return api::guarded([&] {
        api::require(id, "id");
        if (bytes < CONV_COMM_UNIQUE_ID_BYTES)
            fail(CONV_STATUS_INVALID_ARGUMENT, "bytes %zu < CONV_COMM_UNIQUE_ID_BYTES (%d)", bytes,
                 CONV_COMM_UNIQUE_ID_BYTES);
        comm::nccl_unique_id(id, bytes);
    });
}

conv_status_t conv_comm_create_nccl(const void *id, size_t id_bytes, int nranks, int rank,
                                    int device, conv_comm_t *out) {
    return api::guarded([&] {
        api::require(out, "out");
        api::require(id, "id");
        if (id_bytes != CONV_COMM_UNIQUE_ID_BYTES)
            fail(CONV_STATUS_INVALID_ARGUMENT, "id_bytes %zu != CONV_COMM_UNIQUE_ID_BYTES (%d)",
                 id_bytes, CONV_COMM_UNIQUE_ID_BYTES);
        if (nranks < 1) fail(CONV_STATUS_INVALID_ARGUMENT, "nranks %d < 1", nranks);
        if (rank < 0 || rank >= nranks)
            fail(CONV_STATUS_INVALID_ARGUMENT, "rank %d is outside 0..%d", rank, nranks - 1);
        if (device < 0) fail(CONV_STATUS_INVALID_ARGUMENT, "device %d < 0", device);
        std::unique_ptr<comm::Communicator> c = comm::make_nccl(id, nranks, rank, device);
        c->set_device_sgd(dispatch::gpu_sgd());
        *out = wrap(std::move(c));
    });
}

conv_status_t conv_comm_create_nccl_all(int ndevices, const int *devices, conv_comm_t *comms) {
    return api::guarded([&] {
        api::require(comms, "comms");
        if (ndevices < 1) fail(CONV_STATUS_INVALID_ARGUMENT, "ndevices %d < 1", ndevices);
        std::vector<std::unique_ptr<comm::Communicator>> all = comm::make_nccl_all(ndevices, devices);
        for (auto &c : all) c->set_device_sgd(dispatch::gpu_sgd());
        wrap_all(std::move(all), comms);
    });
}

void conv_comm_destroy(conv_comm_t comm) { api::destroy(comm); }

conv_status_t conv_comm_get_rank(conv_comm_t comm, int *rank) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        *api::require(rank, "rank") = c.rank();
    });
}

conv_status_t conv_comm_get_size(conv_comm_t comm, int *size) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        *api::require(size, "size") = c.size();
    });
}

conv_status_t conv_comm_get_backend(conv_comm_t comm, conv_comm_backend_t *backend) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        *api::require(backend, "backend") = c.backend();
    });
}

conv_status_t conv_comm_get_device(conv_comm_t comm, conv_device_t *device, int *device_index) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        api::require(device, "device");
        api::require(device_index, "device_index");
        *device = c.device();
        *device_index = c.device_index();
    });
}

conv_status_t conv_comm_set_timeout(conv_comm_t comm, double seconds) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        if (!(seconds > 0))  // also refuses NaN
            fail(CONV_STATUS_INVALID_ARGUMENT, "timeout %g s must be > 0 (INFINITY: no timeout)",
                 seconds);
        c.set_timeout(seconds);
    });
}

conv_status_t conv_comm_get_timeout(conv_comm_t comm, double *seconds) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        *api::require(seconds, "seconds") = c.timeout();
    });
}

conv_status_t conv_comm_set_stream(conv_comm_t comm, void *cuda_stream) {
    return api::guarded([&] { comm_of(comm).set_stream(cuda_stream); });
}

conv_status_t conv_comm_all_reduce(conv_comm_t comm, const void *send, void *recv, int64_t count,
                                   conv_dtype_t dtype, conv_reduce_op_t op) {
    return api::guarded([&] { comm_of(comm).all_reduce(send, recv, count, dtype, op); });
}

conv_status_t conv_comm_broadcast(conv_comm_t comm, void *buffer, int64_t count,
                                  conv_dtype_t dtype, int root) {
    return api::guarded([&] { comm_of(comm).broadcast(buffer, count, dtype, root); });
}

conv_status_t conv_comm_barrier(conv_comm_t comm) {
    return api::guarded([&] { comm_of(comm).barrier(); });
}

conv_status_t conv_comm_synchronize(conv_comm_t comm) {
    return api::guarded([&] { comm_of(comm).synchronize(); });
}

conv_status_t conv_comm_abort(conv_comm_t comm) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        c.abort(format("conv_comm_abort was called on rank %d of %d (%s)", c.rank(), c.size(),
                       comm::backend_name(c.backend())));
    });
}

conv_status_t conv_comm_get_error(conv_comm_t comm, conv_comm_state_t *state) {
    return api::guarded([&] {
        Communicator &c = comm_of(comm);
        std::string why;
        conv_comm_state_t s = c.state(&why);
        if (state) *state = s;
        if (s != CONV_COMM_STATE_OK)
            throw Error(comm::state_status(s),
                        format("the communicator (rank %d of %d, %s) is %s: %s", c.rank(),
                               c.size(), comm::backend_name(c.backend()), comm::state_name(s),
                               why.c_str()));
    });
}

}  // extern "C"
