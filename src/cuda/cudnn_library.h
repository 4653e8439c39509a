// cuDNN, opened at run time instead of linked (docs/architecture.md,
// "Optional libraries"): libconv.so has no NEEDED libcudnn, loads on
// machines without it, and there reports no GPU, naming the library.
//
// How the engine calls it: for every function in CONV_CUDNN_FUNCTIONS this
// header declares, in namespace conv::cuda, an object of the function's own
// name. An unqualified call in the engine (`cudnnCreate(&h)`) finds that
// object before the global declaration of cudnn.h (and, an object not being
// a function, argument-dependent lookup adds nothing), so the engine's code
// reads as plain cuDNN and calls through the table loaded here. cudnn.h
// still gives every type, constant and signature. libcudnn is not linked: a
// call that bypasses the table (a function missing from the list, a
// qualified ::cudnnX) is an undefined symbol, which --no-undefined turns
// into a link error.
//
// To call another cuDNN function (say cudnnBackend* for a graph-API engine),
// add its name to the list. cudnn-frontend, which calls those itself, has
// its own switch for the same: built with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING it looks them up in its
// `cudnn_frontend::cudnn_dlhandle`, which is to be set to
// Cudnn::loaded().library.handle().
#pragma once

#include <cudnn.h>

#include "core/shared_library.h"

namespace conv::cuda {

#define CONV_CUDNN_FUNCTIONS(X)                                                                   \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString)                        \
    X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)                                            \
    X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor) \
    X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                      \
    X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                             \
    X(cudnnDestroyConvolutionDescriptor)                                                        \
    X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor)                          \
    X(cudnnDestroyActivationDescriptor)                                                         \
    X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionForwardWorkspaceSize)        \
    X(cudnnFindConvolutionForwardAlgorithmEx) X(cudnnConvolutionForward)                        \
    X(cudnnConvolutionBiasActivationForward)                                                    \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                              \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                             \
    X(cudnnFindConvolutionBackwardDataAlgorithmEx) X(cudnnConvolutionBackwardData)              \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                            \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                                           \
    X(cudnnFindConvolutionBackwardFilterAlgorithmEx) X(cudnnConvolutionBackwardFilter)

enum CudnnIndex : int {
#define CONV_CUDNN_INDEX(name) kCudnn_##name,
    CONV_CUDNN_FUNCTIONS(CONV_CUDNN_INDEX)
#undef CONV_CUDNN_INDEX
    kCudnnCount
};

// libcudnn and its functions, by CudnnIndex.
struct Cudnn : SymbolTable<kCudnnCount> {
    Cudnn();
    // Opened on first use ($CONV_CUDNN_LIBRARY, else libcudnn.so.<major>),
    // with every function of the list and the major version compiled
    // against; else library.error() says why. Never throws.
    static const Cudnn &loaded();
};

// "" when cuDNN is usable, else why not (naming the file looked for).
inline const std::string &cudnn_unavailable_reason() { return Cudnn::loaded().library.error(); }

#define CONV_CUDNN_DECLARE(name) \
    inline constexpr LoadedFunction<Cudnn, kCudnn_##name, decltype(&::name)> name{};
CONV_CUDNN_FUNCTIONS(CONV_CUDNN_DECLARE)
#undef CONV_CUDNN_DECLARE

}  // namespace conv::cuda
