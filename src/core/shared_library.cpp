#include "core/shared_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "core/error.h"

namespace conv {

SharedLibrary::SharedLibrary(const char *what, const char *env_var,
                             std::initializer_list<const char *> names)
    : what_(what) {
    const char *chosen = env_var ? std::getenv(env_var) : nullptr;
    std::string tried;
    if (chosen && *chosen) {
        // The user's choice only: falling back to another file would hide
        // that theirs did not load.
        name_ = chosen;
        handle_ = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (!handle_) tried = format("%s=%s: %s", env_var, chosen, dlerror());
    } else {
        for (const char *n : names) {
            name_ = n;
            handle_ = dlopen(n, RTLD_NOW | RTLD_LOCAL);
            if (handle_) break;
            const char *why = dlerror();
            tried += (tried.empty() ? "" : "; ") + std::string(why ? why : n);
        }
    }
    // The hint to set the variable only when it was not set.
    const bool hint = env_var && !(chosen && *chosen);
    if (!handle_)
        error_ = format("%s (%s) could not be loaded (%s)%s%s%s", what, name_.c_str(),
                        tried.c_str(), hint ? "; set " : "", hint ? env_var : "",
                        hint ? " to its path if it is installed elsewhere" : "");
}

void *SharedLibrary::symbol(const char *symbol, Lookup lookup) {
    if (!handle_) return nullptr;
    void *p = lookup == Lookup::kProcessFirst ? dlsym(RTLD_DEFAULT, symbol) : nullptr;
    if (!p) p = dlsym(handle_, symbol);
    if (!p && ok())
        error_ = format("%s is missing from %s (%s): too old a version?", symbol, name_.c_str(),
                        what_.c_str());
    return p;
}

}  // namespace conv
