// The MPI and NCCL factories of a build without them: they fail with
// NOT_AVAILABLE, saying how to get them.
#include "comm/backends.h"

namespace conv::comm {

#if !CONV_COMM_HAVE_MPI
static const char kNoMpi[] =
    "this libconv was built without MPI (configure with CONV_WITH_MPI=ON and an MPI library "
    "such as Open MPI installed)";

bool mpi_available(std::string *why) {
    if (why) *why = kNoMpi;
    return false;
}

std::unique_ptr<Communicator> make_mpi(const void *mpi_comm) {
    fail(CONV_STATUS_NOT_AVAILABLE, "%s: %s",
         mpi_comm ? "conv_comm_create_mpi" : "conv_comm_create_mpi_world", kNoMpi);
}
#endif

#if !CONV_COMM_HAVE_NCCL
static const char kNoNccl[] =
    "this libconv was built without NCCL (configure with CONV_WITH_NCCL=ON where nccl.h and "
    "the CUDA toolkit are installed)";

bool nccl_built() { return false; }

bool nccl_available(std::string *why) {
    if (why) *why = kNoNccl;
    return false;
}

void nccl_unique_id(void *, size_t) {
    fail(CONV_STATUS_NOT_AVAILABLE, "conv_comm_unique_id: %s", kNoNccl);
}

std::unique_ptr<Communicator> make_nccl(const void *, int, int, int) {
    fail(CONV_STATUS_NOT_AVAILABLE, "conv_comm_create_nccl: %s", kNoNccl);
}

std::vector<std::unique_ptr<Communicator>> make_nccl_all(int, const int *) {
    fail(CONV_STATUS_NOT_AVAILABLE, "conv_comm_create_nccl_all: %s", kNoNccl);
}
#endif

}  // namespace conv::comm
