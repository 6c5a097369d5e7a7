/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "dlopen-util.h"

static int load_symbols(DlopenLibrary *lib) {
        /* RTLD_LOCAL keeps the library's symbols out of the global scope; dlsym() on its
         * handle still finds those of its own dependencies (libdw's libelf). */
        void *handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
        const char *e;

        if (!handle)
                goto fail;
        for (size_t i = 0; i < lib->n_symbols; i++) {
                *lib->symbols[i].pointer = dlsym(handle, lib->symbols[i].name);
                if (!*lib->symbols[i].pointer)
                        goto fail;
        }
        return 0;
fail:
        e = dlerror();
        snprintf(lib->reason, sizeof(lib->reason), "%s cannot be loaded: %s", lib->soname, e ? e : "not found");
        /* A library without one of its symbols is never used: unloaded, no pointer left set. */
        if (handle) {
                for (size_t i = 0; i < lib->n_symbols; i++)
                        *lib->symbols[i].pointer = NULL;
                (void) dlclose(handle);
        }
        return -EOPNOTSUPP;
}

int dlopen_library(DlopenLibrary *lib, const char **reason) {
        (void) pthread_mutex_lock(&lib->lock);
        if (!lib->tried)
                lib->result = load_symbols(lib);
        lib->tried = true;
        (void) pthread_mutex_unlock(&lib->lock);
        if (reason)
                *reason = lib->reason;
        return lib->result;
}
