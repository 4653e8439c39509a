# The CUDA engine (src/cuda, docs/gpu.md), included by src/CMakeLists.txt
# after the `conv` target exists.
#
#   CONV_WITH_CUDA (AUTO/ON/OFF)  AUTO: on when the CUDA toolkit (nvcc, the
#                                 runtime) and cuDNN (cudnn.h, libcudnn) are
#                                 found; ON: fail the configure when not.
#   CUDNN_ROOT                    where cuDNN is, when not beside CUDA
#                                 (a tarball, or pip's nvidia-cudnn-cu13:
#                                 <site-packages>/nvidia/cudnn).
#   CMAKE_CUDA_ARCHITECTURES      default "80-real;90": sm_80 and sm_90
#                                 machine code plus sm_90 PTX for newer GPUs.
#
# Linking: the CUDA runtime statically (CUDA::cudart_static), which opens
# the driver (libcuda.so.1) at run time; cuDNN not at all: src/cuda/
# cudnn_library.cpp opens libcudnn.so.9 (or $CONV_CUDNN_LIBRARY) with dlopen
# when a GPU is first asked for. So libconv.so has no CUDA library among its
# NEEDED entries, loads and runs its CPU engine on machines without cuDNN, a
# driver or a GPU (conv_device_count then says 0, and why). cuDNN is found
# as any system library (ld.so.conf, LD_LIBRARY_PATH, e.g. pip's
# nvidia/cudnn/lib) or through libconv's RUNPATH: the build tree has cuDNN's
# directory there, the installed library only with
# CONV_CUDNN_INSTALL_RPATH=ON. No GPU is needed to configure or build. Results: CONV_CUDA_ENABLED (cache,
# internal) for the summary, CONV_HAVE_CUDA (0/1) on `conv`.

include_guard(DIRECTORY)

string(TOUPPER "${CONV_WITH_CUDA}" _conv_cuda_mode)
if(_conv_cuda_mode MATCHES "^(ON|YES|TRUE|1)$")
  set(_conv_cuda_mode ON)
elseif(_conv_cuda_mode MATCHES "^(OFF|NO|FALSE|0)$")
  set(_conv_cuda_mode OFF)
else()
  set(_conv_cuda_mode AUTO)
endif()

set(_conv_have_cuda 0)
set(_conv_cuda_summary "OFF (CONV_WITH_CUDA=OFF)")
if(NOT _conv_cuda_mode STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  include(CheckLanguage)
  check_language(CUDA)
  set(_conv_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} $ENV{CUDNN_HOME} ${CUDAToolkit_LIBRARY_ROOT}
                        ${CUDAToolkit_TARGET_DIR} /usr/local/cuda /usr)
  find_path(CONV_CUDNN_INCLUDE_DIR cudnn.h HINTS ${_conv_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(CONV_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${_conv_cudnn_hints}
               ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  mark_as_advanced(CONV_CUDNN_INCLUDE_DIR CONV_CUDNN_LIBRARY)
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER AND CONV_CUDNN_INCLUDE_DIR AND CONV_CUDNN_LIBRARY)
    file(STRINGS "${CONV_CUDNN_INCLUDE_DIR}/cudnn_version.h" _conv_cudnn_v
         REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCHLEVEL ([0-9]+).*" "\\1.\\2.\\3"
           _conv_cudnn_version "${_conv_cudnn_v}")
    if(_conv_cudnn_version VERSION_LESS 9.0)
      set(_conv_cuda_why "cuDNN ${_conv_cudnn_version} found, 9.x needed")
    else()
      set(_conv_have_cuda 1)
    endif()
  else()
    set(_conv_cuda_why "needs the CUDA toolkit (${CUDAToolkit_FOUND}, nvcc: ${CMAKE_CUDA_COMPILER}) "
                       "and cuDNN (cudnn.h: ${CONV_CUDNN_INCLUDE_DIR}, libcudnn: ${CONV_CUDNN_LIBRARY})")
  endif()
  if(NOT _conv_have_cuda)
    if(_conv_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "CONV_WITH_CUDA=ON but ${_conv_cuda_why}; set CUDNN_ROOT or "
                          "CMAKE_CUDA_COMPILER")
    endif()
    set(_conv_cuda_summary "OFF (${_conv_cuda_why})")
  endif()
endif()

if(_conv_have_cuda)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    # A cache entry: every directory (the static library at the top) sees it.
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING
        "GPU targets of the CUDA engine: sm_80, sm_90 machine code and sm_90 PTX")
  endif()
  # The packaging at the top level (conv_static) links these targets too.
  foreach(_t CUDA::cudart_static CUDA::cudart_static_deps CUDA::culibos)
    if(TARGET ${_t})
      get_target_property(_g ${_t} IMPORTED_GLOBAL)
      if(NOT _g)
        set_target_properties(${_t} PROPERTIES IMPORTED_GLOBAL TRUE)
      endif()
    endif()
  endforeach()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  target_sources(conv PRIVATE
    ${PROJECT_SOURCE_DIR}/src/cuda/cudnn_library.cpp
    ${PROJECT_SOURCE_DIR}/src/cuda/engine.cpp
    ${PROJECT_SOURCE_DIR}/src/cuda/device.cpp
    ${PROJECT_SOURCE_DIR}/src/cuda/handles.cpp
    ${PROJECT_SOURCE_DIR}/src/cuda/kernels.cu
    ${PROJECT_SOURCE_DIR}/src/cuda/sgd.cu)
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/cuda/kernels.cu
    ${PROJECT_SOURCE_DIR}/src/cuda/sgd.cu PROPERTIES
    COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden>")
  set_target_properties(conv PROPERTIES
    CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
    CUDA_RUNTIME_LIBRARY Static
    CUDA_VISIBILITY_PRESET hidden)
  target_include_directories(conv SYSTEM PRIVATE ${CONV_CUDNN_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  # cuDNN's headers only (types and signatures); its library is dlopen'ed.
  target_link_libraries(conv PRIVATE CUDA::cudart_static ${CMAKE_DL_LIBS})
  get_filename_component(_conv_cudnn_libdir "${CONV_CUDNN_LIBRARY}" DIRECTORY)
  # dlopen searches the RUNPATH of the library that calls it: the build tree
  # finds cuDNN through it. The installed library keeps none by default (the
  # package is relocatable: tests/install checks it), so it finds
  # libcudnn.so.9 as any system library (ld.so.conf, LD_LIBRARY_PATH);
  # CONV_CUDNN_INSTALL_RPATH=ON records cuDNN's directory in it instead, for
  # an install next to a cuDNN outside the loader's path.
  option(CONV_CUDNN_INSTALL_RPATH "Record cuDNN's directory in the installed libconv's RUNPATH" OFF)
  set_property(TARGET conv APPEND PROPERTY BUILD_RPATH "${_conv_cudnn_libdir}")
  if(CONV_CUDNN_INSTALL_RPATH)
    set_property(TARGET conv APPEND PROPERTY INSTALL_RPATH "${_conv_cudnn_libdir}")
  endif()
  set(CONV_CUDNN_LIBRARY_DIR "${_conv_cudnn_libdir}" CACHE INTERNAL "cuDNN's lib directory")
  string(REGEX MATCH "^[0-9]+" _conv_cudnn_major "${_conv_cudnn_version}")
  set(CONV_CUDNN_SONAME "libcudnn.so.${_conv_cudnn_major}" CACHE INTERNAL
      "the cuDNN library the engine opens (tests)")
  # NVIDIA's Debian package of that cuDNN for this CUDA (the .deb suggests it).
  set(CONV_CUDNN_DEB_PACKAGE "libcudnn${_conv_cudnn_major}-cuda-${CUDAToolkit_VERSION_MAJOR}"
      CACHE INTERNAL "cuDNN's runtime package in NVIDIA's repository")
  string(REPLACE ";" " " _conv_archs "${CMAKE_CUDA_ARCHITECTURES}")
  set(_conv_cuda_summary
      "ON (CUDA ${CUDAToolkit_VERSION}, cuDNN ${_conv_cudnn_version} from ${CONV_CUDNN_INCLUDE_DIR}, loaded at run time; GPU targets ${_conv_archs})")
else()
  target_sources(conv PRIVATE ${PROJECT_SOURCE_DIR}/src/cuda/unavailable.cpp)
  set(CONV_CUDNN_SONAME "" CACHE INTERNAL "the cuDNN library the engine opens (tests)")
endif()
set(CONV_CUDA_ENABLED "${_conv_cuda_summary}" CACHE INTERNAL "CUDA engine summary")
set(CONV_CUDA_BUILT ${_conv_have_cuda} CACHE INTERNAL "CUDA engine built (0/1)")
target_compile_definitions(conv PRIVATE CONV_HAVE_CUDA=${_conv_have_cuda})
