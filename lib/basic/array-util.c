/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "array-util.h"
#include "macro.h"

void *array_grow(void *array, size_t *allocated, size_t elem_size, size_t min) {
        size_t n = MAX(*allocated * 2, min);
        void *p = reallocarray(array, n, elem_size);

        if (!p)
                return NULL;
        *allocated = n;
        return p;
}
