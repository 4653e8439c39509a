/*
 * onednn_load.c -- finds oneDNN 3.x at run time and looks up the functions
 * of onednn_api.h (dlopen + dlsym). convbench links no oneDNN: without it
 * --peer onednn says where it looked and how to get the library.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onednn_api.h"

/* Appends to the list of what was tried (one "  PATH: why" line each;
 * dlerror's text names the path itself: path NULL). */
static void note(char *tried, size_t len, const char *path, const char *why)
{
    size_t used = strlen(tried);
    if (used < len)
        snprintf(tried + used, len - used, "\n  %s%s%s", path ? path : "", path ? ": " : "",
                 why);
}

/* Resolves every function, refusing a library that is not oneDNN 3.x. */
static int resolve(onednn_api *api, void *handle, const char *path, char *tried, size_t len)
{
    void *sym = dlsym(handle, "dnnl_version");
    if (!sym) {
        note(tried, len, path, "no dnnl_version: not oneDNN");
        return 1;
    }
    memcpy(&api->version, &sym, sizeof sym); /* POSIX: dlsym's result is a function */
    const onednn_version_t *v = api->version();
    if (v->major != 3) {
        char why[128];
        snprintf(why, sizeof why,
                 "oneDNN %d.%d.%d: the peer uses the C API of oneDNN 3.x",
                 v->major, v->minor, v->patch);
        note(tried, len, path, why);
        return 1;
    }
#define ONEDNN_LOOKUP(ret, name, params)                                     \
    if (!(sym = dlsym(handle, "dnnl_" #name))) {                             \
        note(tried, len, path, "oneDNN 3.x without dnnl_" #name);            \
        return 1;                                                            \
    }                                                                        \
    memcpy(&api->name, &sym, sizeof sym);
    ONEDNN_FUNCTIONS(ONEDNN_LOOKUP)
#undef ONEDNN_LOOKUP
    return 0;
}

/* dlopen of one file or name; 0 when it is oneDNN 3.x. */
static int try_file(onednn_api *api, const char *path, char *tried, size_t len)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        note(tried, len, why ? NULL : path, why ? why : "dlopen failed");
        return 1;
    }
    if (resolve(api, handle, path, tried, len) != 0) {
        dlclose(handle); /* nothing of it has run but dnnl_version */
        return 1;
    }
    api->handle = handle;
    /* The file the loader picked (a bare soname says nothing). */
    Dl_info info;
    void *fn;
    memcpy(&fn, &api->version, sizeof fn);
    snprintf(api->path, sizeof api->path, "%s",
             dladdr(fn, &info) && info.dli_fname ? info.dli_fname : path);
    return 0;
}

/* A file, or a folder holding libdnnl.so.3 directly or in lib/ (the layout
 * of the wheels' data and of scripts/onednn.sh's cache). */
static int try_place(onednn_api *api, const char *place, char *tried, size_t len)
{
    struct stat st;
    if (stat(place, &st) != 0 || !S_ISDIR(st.st_mode))
        return try_file(api, place, tried, len);
    static const char *const kIn[] = {"", "/lib"};
    for (size_t i = 0; i < sizeof kIn / sizeof kIn[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s%s/%s", place, kIn[i], ONEDNN_SONAME);
        if (try_file(api, path, tried, len) == 0)
            return 0;
    }
    return 1;
}

/* scripts/onednn.sh's folder: ${XDG_CACHE_HOME:-$HOME/.cache}/libconv/onednn-VERSION. */
static int cache_folder(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, len, "%s/libconv/onednn-%s", xdg, ONEDNN_WHEEL_VERSION);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/libconv/onednn-%s", home, ONEDNN_WHEEL_VERSION);
    else
        return 0;
    return 1;
}

int onednn_load(onednn_api *api, const char *where, char *err, size_t errlen)
{
    if (api->handle)
        return 0;
    char tried[1536] = "";
    const char *env = getenv("CONVBENCH_ONEDNN_LIB");
    const char *origin = where ? "--peer-lib" : "CONVBENCH_ONEDNN_LIB";
    int rc;
    if (where || (env && *env)) { /* named: that place only */
        rc = try_place(api, where ? where : env, tried, sizeof tried);
    } else {
        char cache[1024];
        origin = "the default places";
        rc = 1;
        if (cache_folder(cache, sizeof cache))
            rc = try_place(api, cache, tried, sizeof tried);
        if (rc)
            rc = try_file(api, ONEDNN_SONAME, tried, sizeof tried);
    }
    if (rc)
        snprintf(err, errlen,
                 "oneDNN 3.x is not available (looked in %s):%s\n"
                 "Get it with scripts/onednn.sh (downloads the PyPI wheels onednn-cpu-gomp and "
                 "onednn-devel-cpu-gomp %s into ~/.cache/libconv, where convbench finds them), "
                 "or name a libdnnl.so.3 or its folder with --peer-lib PATH or "
                 "CONVBENCH_ONEDNN_LIB=PATH",
                 origin, tried, ONEDNN_WHEEL_VERSION);
    return rc;
}
