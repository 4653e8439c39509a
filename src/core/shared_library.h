// A shared library opened at run time (dlopen) rather than linked: how the
// optional backends (cuDNN, MPI, NCCL and the CUDA runtime it needs) are
// found, so that libconv.so itself needs none of them to load
// (docs/architecture.md, "Optional libraries").
//
// Opening never throws: a library that is absent, or lacks a function,
// leaves error() saying which file was looked for and why it was not
// usable, for the backend to report when it is asked for.
#pragma once

#include <initializer_list>
#include <string>
#include <type_traits>

#include "core/error.h"

namespace conv {

class SharedLibrary {
public:
    // Opens `env_var`'s value when that environment variable is set (a path
    // or a file name), else the first of `names` that loads (file names:
    // the loader's usual search, this library's RUNPATH included).
    SharedLibrary(const char *what, const char *env_var, std::initializer_list<const char *> names);
    SharedLibrary(const SharedLibrary &) = delete;
    SharedLibrary &operator=(const SharedLibrary &) = delete;
    ~SharedLibrary() = default;  // never closed: its functions may be in use until exit

    bool ok() const { return error_.empty(); }
    // "" when loaded and every symbol asked for was found.
    const std::string &error() const { return error_; }
    void *handle() const { return handle_; }
    // The file it was opened as ("libcudnn.so.9", or the variable's path).
    const std::string &name() const { return name_; }

    // Where symbol() looks first.
    enum class Lookup {
        kLibrary,  // this library (and its dependencies) only
        // The process's global scope first, as the dynamic linker resolves
        // a linked library's symbols: an executable's copy of an object
        // (a copy relocation) or an interposed function wins, and only it is
        // the one the library itself uses (MPI_COMM_WORLD's object).
        kProcessFirst,
    };

    // The address of `symbol` (a function or an object), or null; a missing
    // one makes the library unusable (the first missing name in error()).
    void *symbol(const char *symbol, Lookup lookup = Lookup::kLibrary);
    template <class F>
    void get(const char *name, F &fn) {
        static_assert(std::is_pointer_v<F>, "get() fills a pointer");
        fn = reinterpret_cast<F>(symbol(name));
    }

    // Makes the library unusable for a reason found after loading it (its
    // version, say).
    void reject(std::string why) { error_ = std::move(why); }

private:
    std::string what_;
    std::string name_;
    void *handle_ = nullptr;
    std::string error_;
};

// A library's symbols looked up once, by name: sym[i] is names[i]'s address.
// A backend derives its table from it with a static `loaded()` that opens it
// on first use (cuda/cudnn_library.h, comm/mpi_library.h).
template <int N>
struct SymbolTable {
    SharedLibrary library;
    void *sym[N] = {};
    SymbolTable(const char *what, const char *env_var, std::initializer_list<const char *> files,
                const char *const (&names)[N],
                SharedLibrary::Lookup lookup = SharedLibrary::Lookup::kLibrary)
        : library(what, env_var, files) {
        for (int i = 0; i < N; ++i) sym[i] = library.symbol(names[i], lookup);
    }
};

// Table::loaded(), or NOT_AVAILABLE saying why it is not usable.
template <class Table>
const Table &require_loaded() {
    const Table &t = Table::loaded();
    if (!t.library.ok()) fail(CONV_STATUS_NOT_AVAILABLE, "%s", t.library.error().c_str());
    return t;
}

// A callable standing for function number I of Table, of type F: what a
// backend declares under the function's own name (cuda/cudnn_library.h).
template <class Table, int I, class F>
struct LoadedFunction;
template <class Table, int I, class R, class... A>
struct LoadedFunction<Table, I, R (*)(A...)> {
    R operator()(A... a) const {
        return reinterpret_cast<R (*)(A...)>(require_loaded<Table>().sym[I])(a...);
    }
};

// An object (data symbol) number I of Table: `&object` is its address in
// the loaded library (comm/mpi_library.h says why).
template <class Table, int I>
struct LoadedObject {
    void *operator&() const { return require_loaded<Table>().sym[I]; }
};

}  // namespace conv
