# Finds OpenBLAS and its CBLAS header; defines OpenBLAS::OpenBLAS.
# Prefers pkg-config (Debian's libopenblas-dev ships openblas.pc).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_OPENBLAS QUIET openblas)
endif()
find_path(OpenBLAS_INCLUDE_DIR NAMES cblas.h
          HINTS ${PC_OPENBLAS_INCLUDE_DIRS}
          PATH_SUFFIXES openblas openblas-pthread openblas-openmp)
find_library(OpenBLAS_LIBRARY NAMES openblas HINTS ${PC_OPENBLAS_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLAS REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
if(OpenBLAS_FOUND AND NOT TARGET OpenBLAS::OpenBLAS)
  add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES
    IMPORTED_LOCATION "${OpenBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIR}")
endif()
mark_as_advanced(OpenBLAS_INCLUDE_DIR OpenBLAS_LIBRARY)
