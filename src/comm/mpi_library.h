// MPI, opened at run time instead of linked, as cuDNN is (the pattern is
// src/cuda/cudnn_library.h's; docs/architecture.md, "Optional libraries"):
// libconv.so has no NEEDED libmpi, and an MPI communicator on a machine
// without the library fails with NOT_AVAILABLE naming it.
//
// For every function of CONV_MPI_FUNCTIONS this header declares, in
// namespace conv::comm, an object of the function's name: mpi_comm.cpp's
// unqualified calls (`MPI_Test(...)`) find it before mpi.h's declaration and
// go through the table loaded here. libmpi is not linked, so a call that
// bypasses the table fails the link (--no-undefined).
//
// Only an MPI with the ABI of the mpi.h compiled against can be loaded: the
// SONAME of the library found at configure time (CONV_MPI_SONAME: Open
// MPI's libmpi.so.40, MPICH's libmpi.so.12), or $CONV_MPI_LIBRARY.
//
// Open MPI's predefined handles are addresses of data objects in libmpi:
// MPI_COMM_WORLD is `&(ompi_mpi_comm_world)` (OMPI_PREDEFINED_GLOBAL). For
// those CONV_MPI_OBJECTS declares objects of the same names whose `&` gives
// the address looked up in the loaded library, so that MPI_COMM_WORLD,
// MPI_FLOAT... keep working unchanged. MPICH's handles are integer
// constants and need nothing.
#pragma once

// The C API only: no MPI C++ bindings (they would need libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "core/shared_library.h"

#ifndef CONV_MPI_SONAME
#error "CONV_MPI_SONAME (the MPI library's file name) comes from cmake/ConvComm.cmake"
#endif

namespace conv::comm {

#define CONV_MPI_FUNCTIONS(X)                                                              \
    X(MPI_Initialized) X(MPI_Finalized) X(MPI_Query_thread) X(MPI_Error_string)            \
    X(MPI_Comm_idup) X(MPI_Comm_set_errhandler) X(MPI_Comm_rank) X(MPI_Comm_size)          \
    X(MPI_Comm_free) X(MPI_Test) X(MPI_Iallreduce) X(MPI_Ibcast) X(MPI_Ibarrier)

#if defined(OPEN_MPI) && OPEN_MPI
#define CONV_MPI_OBJECTS(X)                                                                \
    X(ompi_mpi_comm_world) X(ompi_mpi_comm_null) X(ompi_mpi_byte) X(ompi_mpi_float)        \
    X(ompi_mpi_double) X(ompi_mpi_op_sum) X(ompi_mpi_errors_return)
#else
#define CONV_MPI_OBJECTS(X)
#endif

enum MpiIndex : int {
#define CONV_MPI_INDEX(name) kMpi_##name,
    CONV_MPI_FUNCTIONS(CONV_MPI_INDEX) CONV_MPI_OBJECTS(CONV_MPI_INDEX)
#undef CONV_MPI_INDEX
    kMpiCount
};

// libmpi and its symbols (the functions, then the objects), by MpiIndex.
struct Mpi : SymbolTable<kMpiCount> {
    Mpi();
    // Opened on first use ($CONV_MPI_LIBRARY, else CONV_MPI_SONAME) with
    // every symbol of the lists; else library.error() says why. Never throws.
    static const Mpi &loaded();
};

// "" when the MPI library is usable, else why not (naming the file).
inline const std::string &mpi_unavailable_reason() { return Mpi::loaded().library.error(); }

#define CONV_MPI_DECLARE_FUNCTION(name) \
    inline constexpr LoadedFunction<Mpi, kMpi_##name, decltype(&::name)> name{};
#define CONV_MPI_DECLARE_OBJECT(name) inline constexpr LoadedObject<Mpi, kMpi_##name> name{};
CONV_MPI_FUNCTIONS(CONV_MPI_DECLARE_FUNCTION)
CONV_MPI_OBJECTS(CONV_MPI_DECLARE_OBJECT)
#undef CONV_MPI_DECLARE_FUNCTION
#undef CONV_MPI_DECLARE_OBJECT

}  // namespace conv::comm
