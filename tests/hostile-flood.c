/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostile-flood.h"
#include "test-util.h"

/* How long one hostile call may take before the flood counts it as unanswered. */
#define HOSTILE_CALL_TIMEOUT_USEC (60 * 1000000ULL)

bool hostile_ctl_pending(int ctl) {
        struct pollfd p = { .fd = ctl, .events = POLLIN };

        return poll(&p, 1, 0) != 0;
}

typedef struct FloodSpec {
        const HostileCall *call;
        unsigned gap_us;
} FloodSpec;

/* As @user: the call built once, sent again and again, gap_us apart, until a byte or EOF
 * on @ctl. Reports "R name\tmessage" of the first answer, then "F calls wrong" where
 * wrong counts the answers that differ from the first. */
static G_NORETURN void hostile_child(const TbUser *user, int report, int ctl, const void *data) {
        const FloodSpec *spec = data;
        char first[512] = "", line[600];
        unsigned calls = 0, wrong = 0;
        sd_bus_message *m = NULL;
        sd_bus *bus = NULL;

        tb_user_become(user);
        if (sd_bus_open_system(&bus) < 0)
                _exit(2);
        if (spec->call->build(bus, spec->call->data, &m) < 0)
                _exit(3);
        do {
                sd_bus_error e = SD_BUS_ERROR_NULL;
                char answer[512];

                if (sd_bus_call(bus, m, HOSTILE_CALL_TIMEOUT_USEC, &e, NULL) >= 0)
                        snprintf(answer, sizeof(answer), "success\t");
                else
                        snprintf(answer, sizeof(answer), "%s\t%.300s", e.name, e.message ?: "");
                sd_bus_error_free(&e);
                if (calls++ == 0) {
                        snprintf(first, sizeof(first), "%s", answer);
                        snprintf(line, sizeof(line), "R %s\n", first);
                        tb_write_all(report, line, strlen(line));
                } else if (strcmp(answer, first) != 0)
                        wrong++;
                usleep(spec->gap_us);
        } while (!hostile_ctl_pending(ctl));
        snprintf(line, sizeof(line), "F %u %u\n", calls, wrong);
        tb_write_all(report, line, strlen(line));
        _exit(0);
}

void hostile_flood_start(HostileFlood *flood, const char *user, const HostileCall *call, unsigned gap_us,
                         unsigned timeout_ms) {
        /* The child is forked: the spec stays valid in it whatever becomes of this one. */
        FloodSpec spec = { .call = call, .gap_us = gap_us };
        g_autofree char *err = NULL;

        client_spawn_func(user, hostile_child, &spec, &flood->client);
        flood->first = client_expect(&flood->client, 'R', timeout_ms, &err);
}

bool hostile_flood_finish(HostileFlood *flood, unsigned timeout_ms, unsigned *ret_calls, unsigned *ret_wrong) {
        g_autofree char *done = NULL, *err = NULL;
        bool ok;

        ok = write(flood->client.ctl_fd, "x", 1) == 1;
        if (ok)
                done = client_expect(&flood->client, 'F', timeout_ms, &err);
        ok = done && sscanf(done, "%u %u", ret_calls, ret_wrong) == 2;
        if (ok)
                client_finish(&flood->client, 5000);
        else
                client_kill(&flood->client);
        g_clear_pointer(&flood->first, g_free);
        return ok;
}

gint cmp_doubles(gconstpointer a, gconstpointer b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

double median_is_detached_us(unsigned n) {
        g_autoptr(GArray) us = g_array_new(FALSE, FALSE, sizeof(double));

        for (unsigned i = 0; i < n; i++) {
                g_autoptr(GError) error = NULL;
                gint64 begin = g_get_monotonic_time();
                g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "IsDetached",
                        g_variant_new("(s)", "latency-probe"), G_VARIANT_TYPE("(b)"), 0, 60000, NULL, &error);
                double elapsed = (double) (g_get_monotonic_time() - begin);

                g_assert_no_error(error);
                g_array_append_val(us, elapsed);
                g_usleep(10000);
        }
        g_array_sort(us, cmp_doubles);
        return g_array_index(us, double, n / 2);
}

char *hostile_load_check_ratio(const HostileLoad *load, const char *who, double max_ratio, unsigned probes,
                               unsigned attempts) {
        char *verdict = NULL;

        for (unsigned attempt = 0; attempt < attempts; attempt++) {
                double quiet, loaded;

                g_clear_pointer(&verdict, g_free);
                quiet = median_is_detached_us(probes);
                verdict = load->start(load->data);
                if (verdict)
                        return verdict;
                loaded = median_is_detached_us(probes);
                verdict = load->finish(load->data);
                note("  IsDetached: quiet %.0f us, flooded by %s %.0f us (x%.2f)\n", quiet, who, loaded,
                     loaded / MAX(quiet, 1.0));
                if (verdict)
                        return verdict;
                if (loaded / MAX(quiet, 1.0) < max_ratio)
                        return NULL;
                verdict = g_strdup_printf("under %s's flood, IsDetached took x%.2f its quiet median", who,
                                          loaded / MAX(quiet, 1.0));
        }
        return verdict;
}
