/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* Room for more elements of @elem_size bytes in @array, which has room for *@allocated:
 * twice as much, at least @min. Returns the array (moved, perhaps) and sets *@allocated,
 * or returns NULL, with @array and *@allocated as they were, when memory runs out. */
void *array_grow(void *array, size_t *allocated, size_t elem_size, size_t min);
