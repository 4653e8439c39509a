// The backends' factories. LOCAL is always built; MPI and NCCL are built
// when CONV_COMM_HAVE_MPI / CONV_COMM_HAVE_NCCL are 1 (cmake/ConvComm.cmake)
// and otherwise come from unavailable.cpp, which fails with NOT_AVAILABLE.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "comm/communicator.h"

namespace conv::comm {

// In-process: the n communicators of one group (rank r at index r).
std::vector<std::unique_ptr<Communicator>> make_local_group(int n);

// MPI: built with MPI and its library loads (else false and the reason in
// *why when given).
bool mpi_available(std::string *why);
// Wraps *(MPI_Comm *)mpi_comm (a duplicate of it); world when null.
std::unique_ptr<Communicator> make_mpi(const void *mpi_comm);

// NCCL. nccl_available: built, loadable and a GPU present (else false and
// the reason in *why when given).
bool nccl_built();
bool nccl_available(std::string *why);
void nccl_unique_id(void *id, size_t bytes);
std::unique_ptr<Communicator> make_nccl(const void *id, int nranks, int rank, int device);
std::vector<std::unique_ptr<Communicator>> make_nccl_all(int ndevices, const int *devices);

}  // namespace conv::comm
