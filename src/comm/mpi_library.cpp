#include "comm/mpi_library.h"

namespace conv::comm {
namespace {

const char *const kNames[] = {
#define CONV_MPI_NAME(name) #name,
    CONV_MPI_FUNCTIONS(CONV_MPI_NAME) CONV_MPI_OBJECTS(CONV_MPI_NAME)
#undef CONV_MPI_NAME
};

}  // namespace

// Looked up as a link would resolve them: the application's executable,
// linked to libmpi, may hold the copy of MPI_COMM_WORLD's object that MPI
// itself uses (a copy relocation), and a profiling library may interpose the
// functions (PMPI).
Mpi::Mpi()
    : SymbolTable("MPI", "CONV_MPI_LIBRARY", {CONV_MPI_SONAME}, kNames,
                  SharedLibrary::Lookup::kProcessFirst) {}

const Mpi &Mpi::loaded() {
    static const Mpi *t = new Mpi();  // never freed: MPI may be in use until exit
    return *t;
}

}  // namespace conv::comm
