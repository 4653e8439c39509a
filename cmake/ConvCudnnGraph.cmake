# The CUDA engine's graph-API solver ("cudnn_graph", src/cuda/graph.cpp,
# docs/gpu.md), included by cmake/ConvCuda.cmake after the engine is set up.
#
#   CONV_CUDNN_FRONTEND_DIR  the cudnn-frontend include directory (the one
#                            with cudnn_frontend.h); also read from the
#                            environment. scripts/cudnn_frontend.sh fetches
#                            it from PyPI's nvidia-cudnn-frontend wheel into
#                            a cache and prints it (scripts/build.sh does).
#
# Built only with the CUDA engine and the headers (frontend 1.x); otherwise
# the solver still has its name and says why it cannot run, and configure
# prints why. The frontend is header-only and built with
# NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: it calls cuDNN through the library
# handle the engine opened at run time (cuda/cudnn_library.h), so libconv
# keeps no NEEDED entry on libcudnn. Its headers are heavy (about 30 s of
# compile time): only src/cuda/graph.cpp includes them.
# Results: CONV_CUDNN_GRAPH_ENABLED (summary), CONV_CUDNN_GRAPH_BUILT (0/1).
# (No definition on `conv`: the sources never test for the solver, and one
# would give every file other flags than a build without the headers --
# pip's builds of the Python package -- so ccache could share none.)

include_guard(DIRECTORY)

set(CONV_CUDNN_FRONTEND_DIR "$ENV{CONV_CUDNN_FRONTEND_DIR}" CACHE PATH
    "cudnn-frontend's include directory (scripts/cudnn_frontend.sh prints it)")
set(_conv_graph 0)
if(NOT CONV_CUDA_BUILT)
  set(_conv_graph_summary "OFF (no CUDA engine)")
elseif(NOT CONV_CUDNN_FRONTEND_DIR)
  set(_conv_graph_summary
      "OFF (CONV_CUDNN_FRONTEND_DIR not set: run scripts/cudnn_frontend.sh, or scripts/build.sh)")
elseif(NOT EXISTS "${CONV_CUDNN_FRONTEND_DIR}/cudnn_frontend_version.h")
  set(_conv_graph_summary "OFF (no cudnn_frontend_version.h in ${CONV_CUDNN_FRONTEND_DIR})")
else()
  file(STRINGS "${CONV_CUDNN_FRONTEND_DIR}/cudnn_frontend_version.h" _conv_fe_v
       REGEX "^#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION ")
  string(REGEX REPLACE ".*MAJOR_VERSION ([0-9]+).*MINOR_VERSION ([0-9]+).*PATCH_VERSION ([0-9]+).*"
         "\\1.\\2.\\3" _conv_fe_version "${_conv_fe_v}")
  if(NOT _conv_fe_version MATCHES "^1\\.")
    set(_conv_graph_summary "OFF (cudnn-frontend ${_conv_fe_version} found, 1.x needed)")
  else()
    set(_conv_graph 1)
    set(_conv_graph_summary
        "ON (cudnn-frontend ${_conv_fe_version} at ${CONV_CUDNN_FRONTEND_DIR}; unmeasured, opt-in)")
  endif()
endif()

if(_conv_graph)
  target_sources(conv PRIVATE ${PROJECT_SOURCE_DIR}/src/cuda/graph.cpp)
  # Compile time: at -O3 with the frontend's JSON library this one file took
  # 114 CPU-s here (9 minutes on a loaded machine), more than the rest of the
  # library. The JSON library only serialises graphs and keys the frontend's
  # kernel cache, neither of which libconv uses (upstream documents
  # CUDNN_FRONTEND_SKIP_JSON_LIB for this); and the file builds graphs once
  # per plan, host code that gains nothing from -O3 next to cuDNN's own
  # planning: 39 CPU-s (docs/testing.md, "Compile time").
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/cuda/graph.cpp PROPERTIES
    COMPILE_OPTIONS "-isystem;${CONV_CUDNN_FRONTEND_DIR};-O1"  # its warnings are not ours
    COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING;CUDNN_FRONTEND_SKIP_JSON_LIB")
  target_link_libraries(conv PRIVATE ${CMAKE_DL_LIBS})
else()
  target_sources(conv PRIVATE ${PROJECT_SOURCE_DIR}/src/cuda/graph_unavailable.cpp)
endif()
message(STATUS "cuDNN graph solver: ${_conv_graph_summary}")
set(CONV_CUDNN_GRAPH_ENABLED "${_conv_graph_summary}" CACHE INTERNAL "cuDNN graph solver summary")
set(CONV_CUDNN_GRAPH_BUILT ${_conv_graph} CACHE INTERNAL "cuDNN graph solver built (0/1)")
