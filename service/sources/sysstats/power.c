/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys-stats.h"

/* linux.sysfs_power: the batteries of /sys/class/power_supply, as Perfetto's
 * LinuxPowerSysfsDataSource reads them (type "Battery", present "1"). */

static bool file_is(const char *dir, const char *name, const char *want) {
        char path[PATH_MAX];
        _cleanup_free_ char *text = NULL;

        if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int) sizeof(path) ||
            sys_stats_read_file(path, &text, NULL) < 0)
                return false;
        text[strcspn(text, "\n")] = 0;
        return strcmp(text, want) == 0;
}

static bool read_i64(const char *dir, const char *name, int64_t *ret) {
        char path[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        char *end;

        if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int) sizeof(path) ||
            sys_stats_read_file(path, &text, NULL) < 0)
                return false;
        errno = 0;
        *ret = strtoll(text, &end, 10);
        return errno == 0 && end != text && (*end == 0 || *end == '\n');
}

/* Calls @f for each battery's directory, in readdir order. Returns the count. */
static int for_each_battery(const char *root, int (*f)(const char *dir, const char *name, void *userdata),
                            void *userdata) {
        DIR *d = opendir(root);
        struct dirent *de;
        int n = 0, r = 0;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while (r >= 0 && (de = readdir(d))) {
                char dir[PATH_MAX];

                if (de->d_name[0] == '.' ||
                    snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name) >= (int) sizeof(dir))
                        continue;
                if (!file_is(dir, "type", "Battery") || !file_is(dir, "present", "1"))
                        continue;
                n++;
                if (f)
                        r = f(dir, de->d_name, userdata);
        }
        closedir(d);
        return r < 0 ? r : n;
}

int power_count_batteries(const char *root) {
        return for_each_battery(root, NULL, NULL);
}

typedef struct BatteryList {
        Tracebus__BatteryCounters **items;
        size_t n;
} BatteryList;

static void fill_counters(Tracebus__BatteryCounters *b, const char *dir) {
        int64_t v;

        b->has_charge_counter_uah = read_i64(dir, "charge_now", &b->charge_counter_uah);
        if ((b->has_capacity_percent = read_i64(dir, "capacity", &v)))
                b->capacity_percent = (float) v;
        b->has_current_ua = read_i64(dir, "current_now", &b->current_ua);
        b->has_current_avg_ua = read_i64(dir, "current_avg", &b->current_avg_ua);
        b->has_energy_counter_uwh = read_i64(dir, "energy_now", &b->energy_counter_uwh);
        b->has_voltage_uv = read_i64(dir, "voltage_now", &b->voltage_uv);
}

static int add_battery(const char *dir, const char *name, void *userdata) {
        BatteryList *l = userdata;
        Tracebus__BatteryCounters *b;

        b = sys_stats_append(&l->items, &l->n, &tracebus__battery_counters__descriptor);
        if (!b)
                return -ENOMEM;
        fill_counters(b, dir);
        return (b->name = strdup(name)) ? 0 : -ENOMEM;
}

void power_batteries_free(Tracebus__BatteryCounters **b, size_t n) {
        for (size_t i = 0; i < n; i++)
                tracebus__battery_counters__free_unpacked(b[i], NULL);
        free(b);
}

int power_read_batteries(const char *root, Tracebus__BatteryCounters ***ret, size_t *ret_n) {
        BatteryList l = {};
        int r;

        r = for_each_battery(root, add_battery, &l);
        if (r < 0) {
                power_batteries_free(l.items, l.n);
                return r;
        }
        /* Perfetto names a battery only when there are several. */
        if (l.n == 1) {
                free(l.items[0]->name);
                l.items[0]->name = NULL;
        }
        *ret = l.items;
        *ret_n = l.n;
        return 0;
}
