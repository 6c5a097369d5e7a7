/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys-stats.h"

/* linux.system_info: one CpuInfo at the start of the trace, as v58's cpu_info.proto:
 * per CPU its processor name (/proc/cpuinfo), capacity (cpu_capacity) and the
 * frequencies it can run at (cpufreq's scaling_available_frequencies, else the ladder
 * of stats/time_in_state). trace_processor builds its cpu and cpu_freq tables from it. */

static int add_cpu(Tracebus__CpuInfo *info, const char *name) {
        Tracebus__CpuInfo__Cpu *cpu;

        cpu = sys_stats_append(&info->cpus, &info->n_cpus, &tracebus__cpu_info__cpu__descriptor);
        if (!cpu)
                return -ENOMEM;
        if (name && !(cpu->processor = strdup(name)))
                return -ENOMEM;
        return 0;
}

/* "key\t: value": the value, or NULL when @line is not @key. */
static const char *value_of(char *line, const char *key) {
        size_t n = strlen(key);
        char *colon;

        if (strncmp(line, key, n) != 0 || (line[n] != '\t' && line[n] != ' ' && line[n] != ':'))
                return NULL;
        colon = strchr(line + n, ':');
        return colon ? colon + 1 + strspn(colon + 1, " \t") : NULL;
}

/* One block per CPU, opened by "processor"; x86 names it in "model name", older ARM
 * kernels once for all in "Processor". */
static int parse_cpuinfo(char *text, Tracebus__CpuInfo *info) {
        const char *global = NULL, *v;
        char *save = NULL;
        int r;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (value_of(line, "processor")) {
                        r = add_cpu(info, NULL);
                        if (r < 0)
                                return r;
                } else if ((v = value_of(line, "model name")) && info->n_cpus > 0 &&
                           !info->cpus[info->n_cpus - 1]->processor) {
                        if (!(info->cpus[info->n_cpus - 1]->processor = strdup(v)))
                                return -ENOMEM;
                } else if ((v = value_of(line, "Processor")))
                        global = v;
        }
        for (size_t i = 0; global && i < info->n_cpus; i++)
                if (!info->cpus[i]->processor && !(info->cpus[i]->processor = strdup(global)))
                        return -ENOMEM;
        return 0;
}

static int add_frequency(Tracebus__CpuInfo__Cpu *cpu, unsigned long khz) {
        int r = sys_stats_grow(&cpu->frequencies, cpu->n_frequencies, sizeof(uint32_t));

        if (r < 0)
                return r;
        cpu->frequencies[cpu->n_frequencies++] = (uint32_t) MIN(khz, UINT32_MAX);
        return 0;
}

/* scaling_available_frequencies: "f1 f2 ..."; time_in_state: "freq time" lines. */
static int read_frequencies(Tracebus__CpuInfo__Cpu *cpu, const char *cpufreq_dir) {
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX];
        bool ladder = false;
        int r;

        if (snprintf(path, sizeof(path), "%s/scaling_available_frequencies", cpufreq_dir) >= (int) sizeof(path))
                return 0;
        if (sys_stats_read_file(path, &text, NULL) < 0) {
                if (snprintf(path, sizeof(path), "%s/stats/time_in_state", cpufreq_dir) >= (int) sizeof(path) ||
                    sys_stats_read_file(path, &text, NULL) < 0)
                        return 0;
                ladder = true;
        }
        for (char *p = text, *end;; p = end) {
                unsigned long khz = strtoul(p, &end, 10);

                if (end == p)
                        break;
                r = add_frequency(cpu, khz);
                if (r < 0)
                        return r;
                if (ladder) {
                        (void) strtoul(end, &end, 10);
                        end += strspn(end, "\n");
                }
        }
        return 0;
}

static int read_cpu_sysfs(Tracebus__CpuInfo__Cpu *cpu, const char *cpu_root, size_t index) {
        _cleanup_free_ char *capacity = NULL;
        char path[PATH_MAX];

        if (snprintf(path, sizeof(path), "%s/cpu%zu/cpu_capacity", cpu_root, index) >= (int) sizeof(path))
                return 0;
        if (sys_stats_read_file(path, &capacity, NULL) >= 0) {
                cpu->has_capacity = true;
                cpu->capacity = (uint32_t) strtoul(capacity, NULL, 10);
        }
        if (snprintf(path, sizeof(path), "%s/cpu%zu/cpufreq", cpu_root, index) >= (int) sizeof(path))
                return 0;
        return read_frequencies(cpu, path);
}

int system_info_read_cpus(const char *cpuinfo_path, const char *cpu_root, Tracebus__CpuInfo **ret) {
        _cleanup_free_ char *text = NULL;
        Tracebus__CpuInfo *info;
        int r;

        r = sys_stats_read_file(cpuinfo_path, &text, NULL);
        if (r < 0)
                return r;
        info = calloc(1, sizeof(*info));
        if (!info)
                return -ENOMEM;
        tracebus__cpu_info__init(info);
        r = parse_cpuinfo(text, info);
        for (size_t i = 0; r >= 0 && i < info->n_cpus; i++)
                r = read_cpu_sysfs(info->cpus[i], cpu_root, i);
        if (r < 0) {
                tracebus__cpu_info__free_unpacked(info, NULL);
                return r;
        }
        *ret = info;
        return 0;
}

/* linux.system_info's InterruptInfo, read as traced_probes reads
 * /proc/interrupts (src/traced/probes/system_info/system_info_data_source.cc): the
 * header's "CPUn" columns give the count; each line "N: counts... chip [hwirq-]trigger
 * name" whose first token is a number gives IRQ N, named by the tokens after the
 * trigger ("Level", "Edge", "*-edge", "*-fasteoi", "*-level"), else by the last token.
 * Lines like "NMI:" or "LOC:" are not IRQs and are skipped. trace_processor names the
 * IRQs of irq events from it. */

#define IRQ_LINE_TOKENS_MAX 512

static bool is_trigger(const char *t) {
        static const char *const suffixes[] = { "-edge", "-fasteoi", "-level" };
        size_t n = strlen(t);

        if (strcmp(t, "Level") == 0 || strcmp(t, "Edge") == 0)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t m = strlen(suffixes[i]);

                if (n >= m && strcmp(t + n - m, suffixes[i]) == 0)
                        return true;
        }
        return false;
}

static size_t split_tokens(char *line, char **tokens, size_t max) {
        char *save = NULL;
        size_t n = 0;

        for (char *t = strtok_r(line, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
                tokens[n++] = t;
        return n;
}

/* Several words ("cs40l26 IRQ1 Controller") joined by one space. */
static int join_tokens(char **tokens, size_t n, char **ret) {
        size_t len = 0, off = 0;
        char *s;

        for (size_t i = 0; i < n; i++)
                len += strlen(tokens[i]) + 1;
        s = malloc(len);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t m = strlen(tokens[i]);

                memcpy(s + off, tokens[i], m);
                off += m;
                s[off++] = i + 1 < n ? ' ' : '\0';
        }
        *ret = s;
        return 1;
}

/* The name of one IRQ line, into @ret (NULL: not an IRQ line). */
static int irq_line(char *line, size_t n_cpus, int32_t *ret_id, char **ret_name) {
        char *tokens[IRQ_LINE_TOKENS_MAX], *end;
        size_t n = split_tokens(line, tokens, ELEMENTSOF(tokens)), start;
        unsigned long id;

        *ret_name = NULL;
        /* A line of more tokens than we split is a machine of hundreds of CPUs: skipped. */
        if (n == IRQ_LINE_TOKENS_MAX || n <= n_cpus || !*tokens[0] || tokens[0][strlen(tokens[0]) - 1] != ':')
                return 0;
        errno = 0;
        id = strtoul(tokens[0], &end, 10);
        if (errno != 0 || end == tokens[0] || *end != ':' || id > INT32_MAX)
                return 0;
        start = n - 1;
        for (size_t i = n - 1; i > n_cpus; i--)
                if (is_trigger(tokens[i])) {
                        start = i + 1;
                        break;
                }
        if (start >= n || start < n_cpus + 2)
                return 0;
        *ret_id = (int32_t) id;
        return join_tokens(tokens + start, n - start, ret_name);
}

static int parse_interrupts(char *text, Tracebus__InterruptInfo *info) {
        char *save = NULL, *line = strtok_r(text, "\n", &save), *tokens[IRQ_LINE_TOKENS_MAX];
        size_t n_cpus = 0, n;

        if (!line)
                return 0;
        n = split_tokens(line, tokens, ELEMENTSOF(tokens));
        for (size_t i = 0; i < n; i++)
                n_cpus += strncmp(tokens[i], "CPU", 3) == 0;
        while (n_cpus > 0 && (line = strtok_r(NULL, "\n", &save))) {
                Tracebus__InterruptInfo__InterruptMapping *m;
                char *name;
                int32_t id;
                int r = irq_line(line, n_cpus, &id, &name);

                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                m = sys_stats_append(&info->irq_mapping, &info->n_irq_mapping,
                                     &tracebus__interrupt_info__interrupt_mapping__descriptor);
                if (!m) {
                        free(name);
                        return -ENOMEM;
                }
                m->has_irq_id = true;
                m->irq_id = id;
                m->name = name;
        }
        return 0;
}

int system_info_read_interrupts(const char *path, Tracebus__InterruptInfo **ret) {
        _cleanup_free_ char *text = NULL;
        Tracebus__InterruptInfo *info;
        int r;

        r = sys_stats_read_file(path, &text, NULL);
        if (r < 0)
                return r;
        info = calloc(1, sizeof(*info));
        if (!info)
                return -ENOMEM;
        tracebus__interrupt_info__init(info);
        r = parse_interrupts(text, info);
        if (r < 0) {
                tracebus__interrupt_info__free_unpacked(info, NULL);
                return r;
        }
        *ret = info;
        return 0;
}
