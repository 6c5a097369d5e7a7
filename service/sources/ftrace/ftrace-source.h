/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "sources/data-source.h"

/* linux.ftrace in the registry of data sources (ftrace-source.c). */
extern const DataSourceOps ftrace_data_source;
