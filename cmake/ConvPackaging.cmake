# Packaging of libconv: the optional static library, conv.pc, the CMake
# package (convConfig.cmake, convConfigVersion.cmake, convTargets*.cmake) and
# CPack (.tar.gz and .deb). Included by the top-level CMakeLists.txt after
# add_subdirectory(src), so that the `conv` target is complete.
#
# What conv itself links (OpenBLAS, Threads, and later CUDA, cuDNN, NCCL,
# MPI...) is read from the target, not listed here: a new private dependency
# added in src/ shows up in conv.pc's Libs.private, in the static library's
# link interface and in the package's dependency lookups by itself.
#
# Install components: "runtime" (the shared library proper: libconv.so.0 and
# libconv.so.0.1.0) and "development" (header, libconv.so link, libconv.a,
# conv.pc, CMake files). The Debian packages libconv0 and libconv-dev follow
# them.

include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

option(CONV_BUILD_STATIC "Also build and install libconv.a (from the shared library's objects)" ON)
set(CONV_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/conv"
    CACHE STRING "Where convConfig.cmake is installed (relative to the prefix)")
set(CONV_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where conv.pc is installed (relative to the prefix)")
mark_as_advanced(CONV_INSTALL_CMAKEDIR CONV_INSTALL_PKGCONFIGDIR)

# ------------------------------------------------------------------ helpers

# Walks what `target` links and sorts it into
#   <prefix>_OBJECTS  $<TARGET_OBJECTS:...> of libconv's own static/object
#                     libraries (they belong inside libconv.a),
#   <prefix>_LINK     what a user of libconv.a must link: imported targets and
#                     plain library names, paths or flags,
#   <prefix>_PACKAGES the packages that define those imported targets.
# Internal INTERFACE libraries (warning flags and the like) are skipped.
function(_conv_collect_link target prefix)
  set(objects "")
  set(link "")
  set(packages "")
  set(seen "")
  set(queue "")
  get_target_property(_libs ${target} LINK_LIBRARIES)
  if(_libs)
    list(APPEND queue ${_libs})
  endif()
  while(queue)
    list(POP_FRONT queue item)
    # $<LINK_ONLY:x> -> x; other generator expressions are kept as they are.
    if(item MATCHES "^\\$<LINK_ONLY:(.+)>$")
      set(item "${CMAKE_MATCH_1}")
    endif()
    if(item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${item}")
    if(TARGET ${item})
      get_target_property(_aliased ${item} ALIASED_TARGET)
      if(_aliased)
        list(APPEND queue ${_aliased})
        continue()
      endif()
      get_target_property(_imported ${item} IMPORTED)
      get_target_property(_type ${item} TYPE)
      if(_imported)
        list(APPEND link ${item})
        if(item MATCHES "^([A-Za-z0-9_]+)::")
          set(_pkg "${CMAKE_MATCH_1}")
          if(_pkg STREQUAL "CUDA")
            set(_pkg CUDAToolkit)
          endif()
          list(APPEND packages ${_pkg})
        endif()
      elseif(_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "OBJECT_LIBRARY")
        list(APPEND objects "$<TARGET_OBJECTS:${item}>")
        get_target_property(_sub ${item} LINK_LIBRARIES)
        if(_sub)
          list(APPEND queue ${_sub})
        endif()
      elseif(_type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(_sub ${item} INTERFACE_LINK_LIBRARIES)
        if(_sub)
          list(APPEND queue ${_sub})
        endif()
      else()
        message(WARNING "libconv packaging: conv links the ${_type} ${item}; "
                        "libconv.a and conv.pc do not account for it")
      endif()
    elseif(NOT item MATCHES "^\\$<")
      list(APPEND link "${item}")
    endif()
  endwhile()
  list(REMOVE_DUPLICATES packages)
  set(${prefix}_OBJECTS "${objects}" PARENT_SCOPE)
  set(${prefix}_LINK "${link}" PARENT_SCOPE)
  set(${prefix}_PACKAGES "${packages}" PARENT_SCOPE)
endfunction()

# Appends to `out` the pkg-config flags (-L/-l/-pthread...) for one link item.
function(_conv_pc_flags item out)
  set(flags "${${out}}")
  if(TARGET ${item})
    get_target_property(_type ${item} TYPE)
    if(NOT _type STREQUAL "INTERFACE_LIBRARY")
      set(_loc "")
      foreach(_prop IMPORTED_LOCATION_RELEASE IMPORTED_LOCATION_RELWITHDEBINFO
                    IMPORTED_LOCATION_NOCONFIG IMPORTED_LOCATION)
        get_target_property(_loc ${item} ${_prop})
        if(_loc)
          break()
        endif()
      endforeach()
      if(_loc)
        _conv_pc_flags("${_loc}" flags)
      endif()
    endif()
    get_target_property(_sub ${item} INTERFACE_LINK_LIBRARIES)
    if(_sub)
      foreach(_s IN LISTS _sub)
        if(_s MATCHES "^\\$<LINK_ONLY:(.+)>$")
          set(_s "${CMAKE_MATCH_1}")
        endif()
        if(NOT _s MATCHES "^\\$<")
          _conv_pc_flags("${_s}" flags)
        endif()
      endforeach()
    endif()
  elseif(IS_ABSOLUTE "${item}")
    get_filename_component(_dir "${item}" DIRECTORY)
    get_filename_component(_name "${item}" NAME)
    if(_name MATCHES "^lib(.+)\\.(so|a|dylib)(\\.[0-9.]+)?$")
      if(NOT _dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
        list(APPEND flags "-L${_dir}")
      endif()
      list(APPEND flags "-l${CMAKE_MATCH_1}")
    else()
      list(APPEND flags "${item}")
    endif()
  elseif(item MATCHES "^-")
    list(APPEND flags "${item}")
  elseif(NOT item STREQUAL "")
    list(APPEND flags "-l${item}")
  endif()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

_conv_collect_link(conv _conv_dep)

# libconv.a is the CPU library: the CUDA engine is the shared library's only
# (see "Static linking" in docs/architecture.md). A static CUDA engine would
# make every static link need CUDA's static runtime (libcudart_static.a);
# without it, a static link needs what a CPU-only one needs, and cuDNN, NCCL
# and MPI are found at run time as by libconv.so. So the archive takes the
# shared library's objects except the CUDA engine's, plus the engine's
# "unavailable" stand-in and the NCCL backend compiled without the engine
# (it then opens the CUDA runtime itself), and nothing from CUDA:: is linked.
set(_conv_static_objects "$<TARGET_OBJECTS:conv>")
set(_conv_static_link "")
foreach(_item IN LISTS _conv_dep_LINK)
  if(NOT _item MATCHES "^CUDA::")
    list(APPEND _conv_static_link "${_item}")
  endif()
endforeach()
set(_conv_static_packages "${_conv_dep_PACKAGES}")
list(REMOVE_ITEM _conv_static_packages CUDAToolkit)
if(CONV_BUILD_STATIC AND CONV_CUDA_BUILT)
  # (solvers.cpp, graph_solver.cpp: the engine's solver list, over
  # unavailable.cpp's and graph_unavailable.cpp's stand-ins)
  set(_conv_cpu_sources ${PROJECT_SOURCE_DIR}/src/cuda/unavailable.cpp
                        ${PROJECT_SOURCE_DIR}/src/cuda/solvers.cpp
                        ${PROJECT_SOURCE_DIR}/src/cuda/graph_solver.cpp
                        ${PROJECT_SOURCE_DIR}/src/cuda/graph_unavailable.cpp)
  # (object paths read "conv.dir/./cuda/engine.cpp.o" in a generator expression)
  set(_conv_cpu_exclude "/cuda/[a-z_]+\\.(cpp|cu)\\.o$")
  get_target_property(_conv_sources conv SOURCES)
  foreach(_s IN LISTS _conv_sources)
    if(_s MATCHES "nccl_comm\\.cpp$")
      list(APPEND _conv_cpu_sources "${_s}")
      string(APPEND _conv_cpu_exclude "|/comm/nccl_comm\\.cpp\\.o$")
    endif()
  endforeach()
  add_library(conv_static_cpu OBJECT ${_conv_cpu_sources})
  target_include_directories(conv_static_cpu PRIVATE $<TARGET_PROPERTY:conv,INCLUDE_DIRECTORIES>)
  target_compile_definitions(conv_static_cpu PRIVATE
    "$<FILTER:$<TARGET_PROPERTY:conv,COMPILE_DEFINITIONS>,EXCLUDE,^CONV_HAVE_CUDA=>"
    CONV_HAVE_CUDA=0 CONV_STATIC_CPU_ONLY=1)
  target_compile_options(conv_static_cpu PRIVATE $<TARGET_PROPERTY:conv,COMPILE_OPTIONS>)
  set_target_properties(conv_static_cpu PROPERTIES
    POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  set(_conv_static_objects
      "$<FILTER:$<TARGET_OBJECTS:conv>,EXCLUDE,${_conv_cpu_exclude}>"
      "$<TARGET_OBJECTS:conv_static_cpu>")
endif()

# The C++ runtime a C program needs to link libconv's objects (stdc++ with
# GCC), that is what C++ links beyond what C links.
set(_conv_cxx_runtime "")
foreach(_lib IN LISTS CMAKE_CXX_IMPLICIT_LINK_LIBRARIES)
  if(NOT _lib IN_LIST CMAKE_C_IMPLICIT_LINK_LIBRARIES AND NOT _lib MATCHES "^gcc")
    list(APPEND _conv_cxx_runtime ${_lib})
  endif()
endforeach()

# ------------------------------------------------------------ static library

if(CONV_BUILD_STATIC)
  # The shared library's own (PIC, hidden-visibility) objects, archived: no
  # second compilation.
  add_library(conv_static STATIC ${_conv_static_objects} ${_conv_dep_OBJECTS})
  add_library(conv::conv_static ALIAS conv_static)
  set_target_properties(conv_static PROPERTIES
    OUTPUT_NAME conv
    EXPORT_NAME conv_static
    LINKER_LANGUAGE CXX
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(conv_static INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_definitions(conv_static INTERFACE CONV_STATIC_DEFINE)
  # A static library's private dependencies become $<LINK_ONLY:...> for its
  # users. The C++ runtime, libm and libpthread are named so that a C-only
  # project links it too.
  list(APPEND _conv_static_link ${_conv_cxx_runtime} m pthread)
  list(REMOVE_DUPLICATES _conv_static_link)
  target_link_libraries(conv_static PRIVATE ${_conv_static_link})
  install(TARGETS conv_static EXPORT convStaticTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
endif()

# ---------------------------------------------------------------- pkg-config

# Everything a static link needs beyond -lconv. For OpenBLAS found through its
# own openblas.pc, what that says a static OpenBLAS needs (-lgfortran...) too.
# No Requires.private: pkg-config would then insist on finding openblas.pc
# even for a dynamic link.
set(_conv_pc_private "")
foreach(_item IN LISTS _conv_static_link)
  _conv_pc_flags("${_item}" _conv_pc_private)
  if(_item STREQUAL "OpenBLAS::OpenBLAS" AND PC_OPENBLAS_FOUND)
    foreach(_flag IN LISTS PC_OPENBLAS_STATIC_LDFLAGS)
      if(NOT _flag MATCHES "^-L" AND NOT _flag STREQUAL "-lopenblas")
        list(APPEND _conv_pc_private "${_flag}")
      endif()
    endforeach()
  endif()
endforeach()
foreach(_lib IN LISTS _conv_cxx_runtime)
  list(APPEND _conv_pc_private "-l${_lib}")
endforeach()
list(APPEND _conv_pc_private -lm -lpthread)
list(REVERSE _conv_pc_private)          # keep the last occurrence of each flag:
list(REMOVE_DUPLICATES _conv_pc_private) # a library must follow its users
list(REVERSE _conv_pc_private)
list(JOIN _conv_pc_private " " CONV_PC_LIBS_PRIVATE)

# prefix from the .pc file's own location, so that a moved prefix still works.
if(IS_ABSOLUTE "${CONV_INSTALL_PKGCONFIGDIR}")
  set(CONV_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rel "/root/${CONV_INSTALL_PKGCONFIGDIR}" "/root")
  string(REGEX REPLACE "/$" "" _rel "${_rel}")
  set(CONV_PC_PREFIX "\${pcfiledir}/${_rel}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(CONV_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(CONV_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/pkgconfig/conv.pc.in
               ${PROJECT_BINARY_DIR}/pkgconfig/conv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/conv.pc
        DESTINATION ${CONV_INSTALL_PKGCONFIGDIR} COMPONENT development)
# Installed into /usr or /usr/local (the .deb, a system install), where
# nothing is moved, conv.pc names its prefix: `-I/usr/include`, which
# pkg-config leaves out, rather than `-I/usr/lib/pkgconfig/../../include`.
if(NOT IS_ABSOLUTE "${CONV_INSTALL_PKGCONFIGDIR}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/ConvPcSystemPrefix.cmake.in
                 ${PROJECT_BINARY_DIR}/cmake/ConvPcSystemPrefix.cmake @ONLY)
  install(SCRIPT ${PROJECT_BINARY_DIR}/cmake/ConvPcSystemPrefix.cmake COMPONENT development)
endif()

# ------------------------------------------------------------- CMake package

install(EXPORT convTargets NAMESPACE conv:: FILE convTargets.cmake
        DESTINATION ${CONV_INSTALL_CMAKEDIR} COMPONENT development)
set(CONV_STATIC_PACKAGES "")
if(CONV_BUILD_STATIC)
  install(EXPORT convStaticTargets NAMESPACE conv:: FILE convStaticTargets.cmake
          DESTINATION ${CONV_INSTALL_CMAKEDIR} COMPONENT development)
  set(CONV_STATIC_PACKAGES "${_conv_static_packages}")
  # Ship our own find modules for those packages (FindOpenBLAS.cmake...).
  foreach(_pkg IN LISTS _conv_static_packages)
    if(EXISTS "${PROJECT_SOURCE_DIR}/cmake/Find${_pkg}.cmake")
      install(FILES "${PROJECT_SOURCE_DIR}/cmake/Find${_pkg}.cmake"
              DESTINATION ${CONV_INSTALL_CMAKEDIR}/modules COMPONENT development)
    endif()
  endforeach()
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/convConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/convConfig.cmake
  INSTALL_DESTINATION ${CONV_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/convConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/convConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/convConfigVersion.cmake
        DESTINATION ${CONV_INSTALL_CMAKEDIR} COMPONENT development)

# --------------------------------------------------------------------- CPack

set(CPACK_PACKAGE_NAME "libconv")
set(CPACK_PACKAGE_VENDOR "libconv")
set(CONV_PACKAGE_CONTACT "libconv maintainers <libconv@example.org>" CACHE STRING
    "Maintainer of the packages (CPack's Debian Maintainer field): set your own")
set(CPACK_PACKAGE_CONTACT "${CONV_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
set(CPACK_STRIP_FILES ON)
# The tarball holds everything that is installed, under libconv-<ver>-Linux/.
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)

# Debian: libconv0 (the shared library) and libconv-dev (the rest).
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime development)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libconv${PROJECT_VERSION_MAJOR}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME "libconv-dev")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION "libdevel")
# libconv.a needs OpenBLAS's development files; pkg-config and a dynamic link
# do not.
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_RECOMMENDS "pkg-config, libopenblas-dev")
# Depends of libconv0 from dpkg-shlibdeps, and a shlibs file (so that what
# links libconv gets "libconv0 (>= 0.1.0)"): both need dpkg-dev and `file`.
find_program(CONV_DPKG_SHLIBDEPS dpkg-shlibdeps)
find_program(CONV_FILE_PROGRAM file)
mark_as_advanced(CONV_DPKG_SHLIBDEPS CONV_FILE_PROGRAM)
if(CONV_DPKG_SHLIBDEPS AND CONV_FILE_PROGRAM)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
else()
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libopenblas0")
endif()
# libconv0 loads anywhere: cuDNN, the NVIDIA driver, NCCL and MPI are opened
# at run time when asked for, so they are only suggested -- under the names
# of NVIDIA's repository (cuDNN) and Debian's (the driver's libcuda1, and
# the package that owns the MPI library found at configure time).
set(_conv_suggests "")
if(CONV_CUDA_BUILT)
  list(APPEND _conv_suggests "${CONV_CUDNN_DEB_PACKAGE}" "libcuda1 | cuda-drivers")
endif()
if(CONV_NCCL_ENABLED MATCHES "^ON")
  list(APPEND _conv_suggests "libnccl2")
endif()
if(CONV_MPI_SONAME)
  find_program(CONV_DPKG_QUERY dpkg-query)
  mark_as_advanced(CONV_DPKG_QUERY)
  set(_conv_mpi_deb "")
  if(CONV_DPKG_QUERY AND CMAKE_LIBRARY_ARCHITECTURE)
    execute_process(COMMAND "${CONV_DPKG_QUERY}" -S "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/${CONV_MPI_SONAME}"
                    OUTPUT_VARIABLE _conv_mpi_deb ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    string(REGEX REPLACE "[:,].*" "" _conv_mpi_deb "${_conv_mpi_deb}")
  endif()
  if(_conv_mpi_deb)
    list(APPEND _conv_suggests "${_conv_mpi_deb}")
  endif()
endif()
list(JOIN _conv_suggests ", " CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS)
# ldconfig through dpkg's trigger (CPack also writes postinst/postrm calling
# it: lintian's maintscript-calls-ldconfig, harmless).
file(WRITE "${PROJECT_BINARY_DIR}/debian/triggers" "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA "${PROJECT_BINARY_DIR}/debian/triggers")
set(CPACK_COMPONENT_RUNTIME_DISPLAY_NAME "libconv shared library")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "N-d convolution with a stable C ABI: the shared library.
It runs on any x86-64 machine with OpenBLAS; the CUDA engine (cuDNN 9 and
an NVIDIA driver), NCCL and MPI are used when installed.")
set(CPACK_COMPONENT_DEVELOPMENT_DISPLAY_NAME "libconv development files")
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
  "N-d convolution with a stable C ABI: development files.
conv.h, the static library (CPU engine), the pkg-config and CMake files.")
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
include(CPack)
