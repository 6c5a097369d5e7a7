/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "sys-stats.h"

/* Big enough for /proc/stat's interrupt line on a machine of thousands of CPUs and IRQs,
 * small enough that a strange file cannot grow the service. */
#define SYS_STATS_MAX_FILE (4u * 1024u * 1024u)

/* /proc/meminfo's names by MeminfoCounters value (Perfetto's numbering). */
static const char *const meminfo_names[] = {
        [1] = "MemTotal", [2] = "MemFree", [3] = "MemAvailable", [4] = "Buffers", [5] = "Cached",
        [6] = "SwapCached", [7] = "Active", [8] = "Inactive", [9] = "Active(anon)",
        [10] = "Inactive(anon)", [11] = "Active(file)", [12] = "Inactive(file)", [13] = "Unevictable",
        [14] = "Mlocked", [15] = "SwapTotal", [16] = "SwapFree", [17] = "Dirty", [18] = "Writeback",
        [19] = "AnonPages", [20] = "Mapped", [21] = "Shmem", [22] = "Slab", [23] = "SReclaimable",
        [24] = "SUnreclaim", [25] = "KernelStack", [26] = "PageTables", [27] = "CommitLimit",
        [28] = "Committed_AS", [29] = "VmallocTotal", [30] = "VmallocUsed", [31] = "VmallocChunk",
        [32] = "CmaTotal", [33] = "CmaFree",
};

bool sys_stats_meminfo_key_known(uint32_t key) {
        return key < ELEMENTSOF(meminfo_names) && meminfo_names[key];
}

/* /proc/vmstat's names are the enum's names, lowercase, without "VMSTAT_". */
static bool vmstat_name_matches(const char *enum_name, const char *word) {
        const char *p = enum_name + strlen("VMSTAT_");

        for (; *p && *word; p++, word++)
                if ((*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p) != *word)
                        return false;
        return *p == 0 && *word == 0;
}

bool sys_stats_vmstat_key_known(uint32_t key) {
        return key > 0 && key < SYS_STATS_KEY_BITS &&
                protobuf_c_enum_descriptor_get_value(&tracebus__vmstat_counters__descriptor, (int) key);
}

int sys_stats_grow(void *array, size_t n, size_t elem_size) {
        void **a = array;
        void *p;

        /* Capacity is 8 at first, then doubles: n at a power of two (>= 8) is full. */
        if (n != 0 && (n < 8 || (n & (n - 1)) != 0))
                return 0;
        p = realloc(*a, (n == 0 ? 8 : n * 2) * elem_size);
        if (!p)
                return -ENOMEM;
        *a = p;
        return 0;
}

void *sys_stats_append(void *array, size_t *n, const ProtobufCMessageDescriptor *d) {
        void *m;

        if (sys_stats_grow(array, *n, sizeof(void *)) < 0)
                return NULL;
        m = calloc(1, d->sizeof_message);
        if (!m)
                return NULL;
        protobuf_c_message_init(d, m);
        (*(void ***) array)[(*n)++] = m;
        return m;
}

int sys_stats_read_file(const char *path, char **ret, size_t *ret_len) {
        return read_full_file(path, SYS_STATS_MAX_FILE, ret, ret_len);
}

bool sys_stats_dir_has_entries(const char *dir, const char *prefix) {
        DIR *d = opendir(dir);
        struct dirent *de;
        bool found = false;

        if (!d)
                return false;
        while (!found && (de = readdir(d)))
                found = de->d_name[0] != '.' && (!prefix || strncmp(de->d_name, prefix, strlen(prefix)) == 0);
        closedir(d);
        return found;
}

/* "Key:   123 kB" or "key 123": the key and the first number after it. */
static bool split_line(char *line, char **ret_key, uint64_t *ret_value) {
        char *sep = line + strcspn(line, ": \t");
        char *end;

        if (*sep == 0 || sep == line)
                return false;
        *sep++ = 0;
        *ret_value = strtoull(sep + strspn(sep, ": \t"), &end, 10);
        *ret_key = line;
        return true;
}

static int add_key_value(void *array, size_t *n, size_t elem_size, const ProtobufCMessageDescriptor *d,
                         uint32_t key, uint64_t value) {
        /* MeminfoValue and VmstatValue have the same layout: base, has_key, key, has_value, value. */
        Tracebus__SysStats__MeminfoValue *v;
        int r;

        r = sys_stats_grow(array, *n, sizeof(void *));
        if (r < 0)
                return r;
        v = calloc(1, elem_size);
        if (!v)
                return -ENOMEM;
        protobuf_c_message_init(d, v);
        v->has_key = v->has_value = true;
        v->key = (Tracebus__MeminfoCounters) key;
        v->value = value;
        (*(void ***) array)[(*n)++] = v;
        return 0;
}

/* The MeminfoCounters value of a /proc/meminfo name, 0 for a name it does not have. */
static int meminfo_key_of(const char *word) {
        for (uint32_t k = 1; k < ELEMENTSOF(meminfo_names); k++)
                if (meminfo_names[k] && strcmp(meminfo_names[k], word) == 0)
                        return (int) k;
        return 0;
}

/* The VmstatCounters value of a /proc/vmstat name, 0 for a name it does not have. */
static int vmstat_key_of(const char *word) {
        const ProtobufCEnumDescriptor *d = &tracebus__vmstat_counters__descriptor;

        for (unsigned i = 0; i < d->n_values; i++)
                if (d->values[i].value > 0 && vmstat_name_matches(d->values[i].name, word))
                        return d->values[i].value;
        return 0;
}

/* A file of "key value" lines (/proc/meminfo, /proc/vmstat): each line whose key @key_of
 * knows becomes one value message (@d) appended to @array; other lines are skipped. */
static int parse_key_values(char *text, int (*key_of)(const char *word), void *array, size_t *n,
                            size_t elem_size, const ProtobufCMessageDescriptor *d) {
        char *save = NULL;
        int r;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *key;
                uint64_t value;
                int k;

                if (!split_line(line, &key, &value) || (k = key_of(key)) <= 0)
                        continue;
                r = add_key_value(array, n, elem_size, d, (uint32_t) k, value);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sys_stats_parse_meminfo(char *text, Tracebus__SysStats *out) {
        return parse_key_values(text, meminfo_key_of, &out->meminfo, &out->n_meminfo,
                                sizeof(Tracebus__SysStats__MeminfoValue),
                                &tracebus__sys_stats__meminfo_value__descriptor);
}

int sys_stats_parse_vmstat(char *text, Tracebus__SysStats *out) {
        return parse_key_values(text, vmstat_key_of, &out->vmstat, &out->n_vmstat,
                                sizeof(Tracebus__SysStats__VmstatValue),
                                &tracebus__sys_stats__vmstat_value__descriptor);
}

static Tracebus__SysStats__CpuTimes *parse_cpu_times(const char *cpu, char *rest, uint64_t ns_per_tick) {
        Tracebus__SysStats__CpuTimes *t = calloc(1, sizeof(*t));
        uint64_t v[8] = {};
        char *p = rest;

        if (!t)
                return NULL;
        tracebus__sys_stats__cpu_times__init(t);
        for (size_t i = 0; i < ELEMENTSOF(v); i++)
                v[i] = strtoull(p, &p, 10) * ns_per_tick;
        t->has_cpu_id = true;
        t->cpu_id = (uint32_t) strtoul(cpu + 3, NULL, 10);
        /* /proc/stat: user nice system idle iowait irq softirq steal, in ticks. */
        t->has_user_ns = t->has_user_nice_ns = t->has_system_mode_ns = t->has_idle_ns = true;
        t->has_io_wait_ns = t->has_irq_ns = t->has_softirq_ns = t->has_steal_ns = true;
        t->user_ns = v[0];
        t->user_nice_ns = v[1];
        t->system_mode_ns = v[2];
        t->idle_ns = v[3];
        t->io_wait_ns = v[4];
        t->irq_ns = v[5];
        t->softirq_ns = v[6];
        t->steal_ns = v[7];
        return t;
}

/* "intr TOTAL n0 n1 ...": the total, then each number; Perfetto leaves out IRQs that
 * never fired (@skip_zero), not softirqs. */
static int parse_counts(char *rest, bool skip_zero, uint64_t *ret_total, Tracebus__SysStats__InterruptCount ***list,
                        size_t *n) {
        char *p = rest;
        int r;

        *ret_total = strtoull(p, &p, 10);
        for (int32_t irq = 0; *p && *p != '\n'; irq++) {
                char *end;
                uint64_t v = strtoull(p, &end, 10);
                Tracebus__SysStats__InterruptCount *c;

                if (end == p)
                        break;
                p = end;
                if (v == 0 && skip_zero)
                        continue;
                r = sys_stats_grow(list, *n, sizeof(void *));
                if (r < 0)
                        return r;
                c = calloc(1, sizeof(*c));
                if (!c)
                        return -ENOMEM;
                tracebus__sys_stats__interrupt_count__init(c);
                c->has_irq = c->has_count = true;
                c->irq = irq;
                c->count = v;
                (*list)[(*n)++] = c;
        }
        return 0;
}

int sys_stats_parse_stat(char *text, uint64_t ns_per_tick, Tracebus__SysStats *out) {
        char *save = NULL;
        int r = 0;

        for (char *line = strtok_r(text, "\n", &save); line && r >= 0; line = strtok_r(NULL, "\n", &save)) {
                char *rest = line + strcspn(line, " ");

                if (*rest)
                        *rest++ = 0;
                /* "cpu" alone is the sum: Perfetto records the CPUs only. */
                if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
                        Tracebus__SysStats__CpuTimes *t;

                        r = sys_stats_grow(&out->cpu_stat, out->n_cpu_stat, sizeof(void *));
                        if (r < 0)
                                break;
                        t = parse_cpu_times(line, rest, ns_per_tick);
                        if (!t)
                                return -ENOMEM;
                        out->cpu_stat[out->n_cpu_stat++] = t;
                } else if (strcmp(line, "intr") == 0) {
                        out->has_num_irq_total = true;
                        r = parse_counts(rest, true, &out->num_irq_total, &out->num_irq, &out->n_num_irq);
                } else if (strcmp(line, "softirq") == 0) {
                        out->has_num_softirq_total = true;
                        r = parse_counts(rest, false, &out->num_softirq_total, &out->num_softirq, &out->n_num_softirq);
                } else if (strcmp(line, "processes") == 0) {
                        out->has_num_forks = true;
                        out->num_forks = strtoull(rest, NULL, 10);
                }
        }
        return r;
}

/* "Node 0, zone   Normal   1 2 3 ...": pages free in blocks of each order. */
int sys_stats_parse_buddyinfo(char *text, Tracebus__SysStats *out) {
        char *save = NULL;
        int r;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char node[64], zone[64];
                int consumed = 0;
                Tracebus__SysStats__BuddyInfo *b;
                char *p;

                if (sscanf(line, "Node %63[^,], zone %63s%n", node, zone, &consumed) != 2)
                        continue;
                b = sys_stats_append(&out->buddy_info, &out->n_buddy_info,
                                     &tracebus__sys_stats__buddy_info__descriptor);
                if (!b)
                        return -ENOMEM;
                b->node = strdup(node);
                b->zone = strdup(zone);
                if (!b->node || !b->zone)
                        return -ENOMEM;
                p = line + consumed;
                for (char *end;; p = end) {
                        unsigned long v = strtoul(p, &end, 10);

                        if (end == p)
                                break;
                        r = sys_stats_grow(&b->order_pages, b->n_order_pages, sizeof(uint32_t));
                        if (r < 0)
                                return r;
                        b->order_pages[b->n_order_pages++] = (uint32_t) v;
                }
        }
        return 0;
}

static void set_disk_field(Tracebus__SysStats__DiskStat *d, unsigned index, uint64_t v) {
        /* /proc/diskstats columns (Documentation/admin-guide/iostats.rst), from 0:
         * 5 sectors read, 6 ms reading, 9 sectors written, 10 ms writing, 16 sectors
         * discarded, 17 ms discarding, 18 flushes, 19 ms flushing. */
        switch (index) {
        case 5: d->has_read_sectors = true, d->read_sectors = v; break;
        case 6: d->has_read_time_ms = true, d->read_time_ms = v; break;
        case 9: d->has_write_sectors = true, d->write_sectors = v; break;
        case 10: d->has_write_time_ms = true, d->write_time_ms = v; break;
        case 16: d->has_discard_sectors = true, d->discard_sectors = v; break;
        case 17: d->has_discard_time_ms = true, d->discard_time_ms = v; break;
        case 18: d->has_flush_count = true, d->flush_count = v; break;
        case 19: d->has_flush_time_ms = true, d->flush_time_ms = v; break;
        default: break;
        }
}

int sys_stats_parse_diskstats(char *text, Tracebus__SysStats *out) {
        char *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                Tracebus__SysStats__DiskStat *d;
                char *wsave = NULL;
                unsigned index = 0;

                d = sys_stats_append(&out->disk_stat, &out->n_disk_stat, &tracebus__sys_stats__disk_stat__descriptor);
                if (!d)
                        return -ENOMEM;
                for (char *w = strtok_r(line, " \t", &wsave); w && index <= 19;
                     w = strtok_r(NULL, " \t", &wsave), index++) {
                        if (index == 2 && !(d->device_name = strdup(w)))
                                return -ENOMEM;
                        if (index >= 5)
                                set_disk_field(d, index, strtoull(w, NULL, 10));
                }
        }
        return 0;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345" (total in us). */
int sys_stats_parse_psi(char *text, const char *resource, Tracebus__SysStats *out) {
        static const struct {
                const char *file, *kind;
                Tracebus__SysStats__PsiSample__PsiResource value;
        } map[] = {
                { "cpu", "some", TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_CPU_SOME },
                { "cpu", "full", TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_CPU_FULL },
                { "io", "some", TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_IO_SOME },
                { "io", "full", TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_IO_FULL },
                { "memory", "some", TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_MEMORY_SOME },
                { "memory", "full", TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_MEMORY_FULL },
        };
        char *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *total = strstr(line, "total=");
                Tracebus__SysStats__PsiSample *s;

                for (size_t i = 0; total && i < ELEMENTSOF(map); i++) {
                        if (strcmp(map[i].file, resource) != 0 || strncmp(line, map[i].kind, 4) != 0)
                                continue;
                        s = sys_stats_append(&out->psi, &out->n_psi, &tracebus__sys_stats__psi_sample__descriptor);
                        if (!s)
                                return -ENOMEM;
                        s->has_resource = s->has_total_ns = true;
                        s->resource = map[i].value;
                        s->total_ns = strtoull(total + 6, NULL, 10) * 1000u;
                }
        }
        return 0;
}

/* slabinfo 2.1: "name active_objs num_objs objsize objperslab pagesperslab : tunables
 * ... : slabdata active_slabs num_slabs sharedavail". */
int sys_stats_parse_slabinfo(char *text, Tracebus__SysStats *out) {
        char *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char name[128];
                unsigned pages, active_slabs, num_slabs;
                char *slabdata = strstr(line, ": slabdata");
                Tracebus__SysStats__SlabInfo *s;

                if (line[0] == '#' || !slabdata ||
                    sscanf(line, "%127s %*u %*u %*u %*u %u", name, &pages) != 2 ||
                    sscanf(slabdata, ": slabdata %u %u", &active_slabs, &num_slabs) != 2)
                        continue;
                s = sys_stats_append(&out->slab_info, &out->n_slab_info, &tracebus__sys_stats__slab_info__descriptor);
                if (!s)
                        return -ENOMEM;
                s->has_pages_per_slab = s->has_num_slabs = true;
                s->pages_per_slab = pages;
                s->num_slabs = num_slabs;
                if (!(s->name = strdup(name)))
                        return -ENOMEM;
        }
        return 0;
}
