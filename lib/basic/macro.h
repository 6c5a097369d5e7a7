/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <assert.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Moves ownership out of a _cleanup_ variable: returns the value and clears the variable. */
#define TAKE_PTR(p)                             \
        ({                                      \
                __typeof__(p) _ptr_ = (p);      \
                (p) = NULL;                     \
                _ptr_;                          \
        })

#define TAKE_FD(fd)                             \
        ({                                      \
                int _fd_ = (fd);                \
                (fd) = -EBADF;                  \
                _fd_;                           \
        })

#define ASSERT_PTR(p)                           \
        ({                                      \
                __typeof__(p) _p_ = (p);        \
                assert(_p_);                    \
                _p_;                            \
        })

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

#define free_and_replace(a, b)                  \
        ({                                      \
                free(a);                        \
                (a) = (b);                      \
                (b) = NULL;                     \
                0;                              \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Defines name##p(type *p) that calls func(*p) when *p is non-NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        *p = func(*p);                  \
        }

#define DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(type, func)    \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        func(*p);                       \
        }

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline bool isempty_str(const char *s) {
        return !s || !*s;
}
