#include "cuda/cudnn_library.h"

namespace conv::cuda {
namespace {

#define CONV_STR2(x) #x
#define CONV_STR(x) CONV_STR2(x)
// cuDNN keeps its ABI within a major version, which its SONAME carries.
constexpr const char kSoname[] = "libcudnn.so." CONV_STR(CUDNN_MAJOR);

const char *const kNames[] = {
#define CONV_CUDNN_NAME(name) #name,
    CONV_CUDNN_FUNCTIONS(CONV_CUDNN_NAME)
#undef CONV_CUDNN_NAME
};

}  // namespace

Cudnn::Cudnn() : SymbolTable("cuDNN", "CONV_CUDNN_LIBRARY", {kSoname}, kNames) {
    if (!library.ok()) return;
    // Another major version (a CONV_CUDNN_LIBRARY of cuDNN 8, say) has other
    // types and enum values under the same names.
    size_t v = reinterpret_cast<size_t (*)()>(sym[kCudnn_cudnnGetVersion])();
    if (v / 10000 != CUDNN_MAJOR)
        library.reject(format("%s is cuDNN %zu.%zu.%zu; libconv was built for cuDNN %d.x",
                              library.name().c_str(), v / 10000, v / 100 % 100, v % 100,
                              CUDNN_MAJOR));
}

const Cudnn &Cudnn::loaded() {
    static const Cudnn *t = new Cudnn();  // never freed: its functions stay in use until exit
    return *t;
}

}  // namespace conv::cuda
