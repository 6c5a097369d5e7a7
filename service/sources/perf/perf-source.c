/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* linux.perf in the registry of data sources. */
#include "perf-config.h"
#include "perf-sampler.h"

/* Its samples are read by a thread of its own, not on the pollers' thread: its stop reads
 * what is left in the rings, so it has no final read to queue. */
const DataSourceOps perf_data_source = {
        .names = perf_source_names,
        .load = perf_load,
        .free_section = perf_section_free,
        .start = perf_sampler_start,
        .stop = perf_sampler_stop,
        .visibility = {
                .unprivileged = "samples of the processes whose real and effective uid are the session owner's "
                                "and that the owner may ptrace (dumpable), others' dropped and counted; "
                                "a target_pid of another user's process refuses the Start (ProcessNotYours); "
                                "user frames named by tracebus-unwind running as the owner, so only from "
                                "files the owner may read; kernel_frames dropped with a warning",
                .with_manage = "every process's samples and the kernel's frames (perf_scope_authorize() asks "
                               "whether the caller holds org.tracebus.manage); user frames still named only "
                               "where the caller may ptrace the process and read its files",
        },
};
