# The optional backends of the communication layer (src/comm, docs/comm.md),
# included by src/CMakeLists.txt after the `conv` target exists.
#
#   CONV_WITH_MPI  (AUTO/ON/OFF)  MPI backend: find_package(MPI COMPONENTS C).
#                                 Only mpi.h is used to compile: the library
#                                 (its SONAME, read here: libmpi.so.40 for
#                                 Open MPI) is opened with dlopen when a
#                                 communicator is first made
#                                 (src/comm/mpi_library.h), so libconv.so
#                                 does not need it to load. libconv never
#                                 calls MPI_Init itself.
#   CONV_WITH_NCCL (AUTO/ON/OFF)  NCCL backend: needs nccl.h, libnccl and the
#                                 CUDA toolkit's headers at configure time.
#                                 libnccl.so.2 and libcudart are NOT linked:
#                                 src/comm/nccl_comm.cpp opens them with dlopen
#                                 when first used, so libconv.so (and its .deb)
#                                 keeps no dependency on CUDA and runs on
#                                 machines without a GPU.
# AUTO turns a backend on when what it needs is found; ON fails the configure
# when it is not. Results: CONV_MPI_ENABLED, CONV_NCCL_ENABLED (cache,
# internal) for the summary, and CONV_COMM_HAVE_MPI / CONV_COMM_HAVE_NCCL
# (0/1) compile definitions on `conv`.

include_guard(DIRECTORY)

function(_conv_comm_mode var out)
  string(TOUPPER "${${var}}" _v)
  if(_v MATCHES "^(ON|YES|TRUE|1)$")
    set(${out} ON PARENT_SCOPE)
  elseif(_v MATCHES "^(OFF|NO|FALSE|0)$")
    set(${out} OFF PARENT_SCOPE)
  else()
    set(${out} AUTO PARENT_SCOPE)
  endif()
endfunction()

# ---------------------------------------------------------------------- MPI
_conv_comm_mode(CONV_WITH_MPI _conv_mpi_mode)
set(_conv_have_mpi 0)
set(_conv_mpi_summary "OFF (CONV_WITH_MPI=OFF)")
if(NOT _conv_mpi_mode STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  # The file to dlopen: the SONAME of the MPI library compiled against (only
  # a library with that SONAME has mpi.h's ABI).
  set(_conv_mpi_soname "")
  foreach(_l IN LISTS MPI_C_LIBRARIES)
    if(_l MATCHES "/lib(mpi|mpich)\\.so" AND CMAKE_READELF)
      execute_process(COMMAND "${CMAKE_READELF}" -d "${_l}" OUTPUT_VARIABLE _conv_mpi_dyn
                      ERROR_QUIET)
      if(_conv_mpi_dyn MATCHES "\\(SONAME\\)[^[]*\\[([^]]+)\\]")
        set(_conv_mpi_soname "${CMAKE_MATCH_1}")
        break()
      endif()
    endif()
  endforeach()
  if(MPI_C_FOUND AND _conv_mpi_soname)
    set(_conv_have_mpi 1)
    # The MPI tests (tests/comm) link the imported target.
    get_target_property(_conv_mpi_global MPI::MPI_C IMPORTED_GLOBAL)
    if(NOT _conv_mpi_global)
      set_target_properties(MPI::MPI_C PROPERTIES IMPORTED_GLOBAL TRUE)
    endif()
    target_sources(conv PRIVATE ${PROJECT_SOURCE_DIR}/src/comm/mpi_comm.cpp
                                ${PROJECT_SOURCE_DIR}/src/comm/mpi_library.cpp)
    target_include_directories(conv SYSTEM PRIVATE ${MPI_C_INCLUDE_DIRS})
    target_compile_definitions(conv PRIVATE ${MPI_C_COMPILE_DEFINITIONS}
                                            CONV_MPI_SONAME="${_conv_mpi_soname}")
    target_link_libraries(conv PRIVATE ${CMAKE_DL_LIBS})
    set(_conv_mpi_summary "ON (MPI ${MPI_C_VERSION}: ${_conv_mpi_soname}, loaded at run time)")
  else()
    set(_conv_mpi_why "no MPI found")
    if(MPI_C_FOUND)
      set(_conv_mpi_why "the SONAME of MPI's library (${MPI_C_LIBRARIES}) could not be read")
    endif()
    if(_conv_mpi_mode STREQUAL "ON")
      message(FATAL_ERROR "CONV_WITH_MPI=ON but ${_conv_mpi_why} (Debian: openmpi-bin libopenmpi-dev)")
    endif()
    set(_conv_mpi_summary "OFF (${_conv_mpi_why})")
  endif()
endif()
set(CONV_MPI_ENABLED "${_conv_mpi_summary}" CACHE INTERNAL "MPI backend summary")
if(NOT _conv_have_mpi)
  set(_conv_mpi_soname "")
endif()
set(CONV_MPI_SONAME "${_conv_mpi_soname}" CACHE INTERNAL "the MPI library the backend opens (tests)")
set(CONV_COMM_MPIEXEC "${MPIEXEC_EXECUTABLE}" CACHE INTERNAL "mpirun for the MPI tests")

# --------------------------------------------------------------------- NCCL
_conv_comm_mode(CONV_WITH_NCCL _conv_nccl_mode)
set(_conv_have_nccl 0)
set(_conv_nccl_summary "OFF (CONV_WITH_NCCL=OFF)")
if(NOT _conv_nccl_mode STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  set(_conv_cuda_hints ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include /usr/local/cuda/include)
  find_path(CONV_NCCL_INCLUDE_DIR nccl.h
            HINTS $ENV{NCCL_HOME}/include $ENV{NCCL_ROOT}/include ${_conv_cuda_hints})
  find_library(CONV_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS $ENV{NCCL_HOME}/lib $ENV{NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR}
                     /usr/local/cuda/lib64 /usr/local/cuda/lib)
  find_path(CONV_CUDA_RUNTIME_INCLUDE_DIR cuda_runtime_api.h HINTS ${_conv_cuda_hints})
  mark_as_advanced(CONV_NCCL_INCLUDE_DIR CONV_NCCL_LIBRARY CONV_CUDA_RUNTIME_INCLUDE_DIR)
  if(CONV_NCCL_INCLUDE_DIR AND CONV_NCCL_LIBRARY AND CONV_CUDA_RUNTIME_INCLUDE_DIR)
    set(_conv_have_nccl 1)
    target_sources(conv PRIVATE ${PROJECT_SOURCE_DIR}/src/comm/nccl_comm.cpp)
    # Headers only: types and prototypes. The libraries are dlopen'ed.
    target_include_directories(conv SYSTEM PRIVATE
      ${CONV_NCCL_INCLUDE_DIR} ${CONV_CUDA_RUNTIME_INCLUDE_DIR})
    if(CMAKE_DL_LIBS)
      target_link_libraries(conv PRIVATE ${CMAKE_DL_LIBS})
    endif()
    set(_conv_nccl_summary "ON (${CONV_NCCL_INCLUDE_DIR}/nccl.h; libnccl.so.2 loaded at run time)")
  elseif(_conv_nccl_mode STREQUAL "ON")
    message(FATAL_ERROR "CONV_WITH_NCCL=ON but nccl.h (${CONV_NCCL_INCLUDE_DIR}), libnccl "
                        "(${CONV_NCCL_LIBRARY}) or cuda_runtime_api.h "
                        "(${CONV_CUDA_RUNTIME_INCLUDE_DIR}) was not found")
  else()
    set(_conv_nccl_summary "OFF (NCCL or the CUDA toolkit not found)")
  endif()
endif()
set(CONV_NCCL_ENABLED "${_conv_nccl_summary}" CACHE INTERNAL "NCCL backend summary")

target_compile_definitions(conv PRIVATE
  CONV_COMM_HAVE_MPI=${_conv_have_mpi} CONV_COMM_HAVE_NCCL=${_conv_have_nccl})
message(STATUS "libconv communication: MPI ${_conv_mpi_summary}; NCCL ${_conv_nccl_summary}")
