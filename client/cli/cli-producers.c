/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --query's apps: the producers connected to the service's producer socket (apps built
 * with the Perfetto SDK) and their data sources, as Manager.ListProducers returns them:
 * the caller's own, everyone's for an admin. Laid out as perfetto --query lays out its
 * producers and data sources. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "strv.h"

void producer_list_done(ProducerList *l) {
        for (size_t i = 0; i < l->n; i++) {
                ProducerInfo *p = &l->items[i];

                free(p->name);
                for (size_t j = 0; j < p->n_sources; j++) {
                        free(p->sources[j].name);
                        strv_free(p->sources[j].categories);
                }
                free(p->sources);
        }
        l->items = mfree(l->items);
        l->n = 0;
}

static int read_source(sd_bus_message *reply, ProducerSourceInfo *s) {
        const char *name;
        int r;

        r = sd_bus_message_enter_container(reply, 'r', "sas");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "s", &name);
        if (r < 0)
                return r;
        s->name = strdup(name);
        if (!s->name)
                return -ENOMEM;
        r = sd_bus_message_read_strv(reply, &s->categories);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        return r < 0 ? r : 1;
}

static int read_sources(sd_bus_message *reply, ProducerInfo *p) {
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(sas)");
        if (r < 0)
                return r;
        for (;;) {
                ProducerSourceInfo *grown = reallocarray(p->sources, p->n_sources + 1, sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                p->sources = grown;
                p->sources[p->n_sources] = (ProducerSourceInfo) {};
                r = read_source(reply, &p->sources[p->n_sources]);
                if (r <= 0)
                        break;
                p->n_sources++;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

static int read_producer(sd_bus_message *reply, ProducerInfo *p) {
        const char *name;
        uint32_t uid, pid;
        int r;

        r = sd_bus_message_enter_container(reply, 'r', "tsuua(sas)");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "tsuu", &p->id, &name, &uid, &pid);
        if (r < 0)
                return r;
        p->uid = uid;
        p->pid = pid;
        p->name = strdup(name);
        if (!p->name)
                return -ENOMEM;
        r = read_sources(reply, p);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        return r < 0 ? r : 1;
}

static int read_producers(sd_bus_message *reply, ProducerList *l) {
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(tsuua(sas))");
        if (r < 0)
                return r;
        for (;;) {
                ProducerInfo *grown = reallocarray(l->items, l->n + 1, sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                l->items = grown;
                l->items[l->n] = (ProducerInfo) {};
                r = read_producer(reply, &l->items[l->n]);
                if (r <= 0) {
                        if (r < 0)
                                l->n++;   /* freed with the others */
                        break;
                }
                l->n++;
        }
        return r < 0 ? r : sd_bus_message_exit_container(reply);
}

int cli_load_producers(sd_bus *bus, ProducerList *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        *ret = (ProducerList) {};
        r = sd_bus_call_method(bus, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "ListProducers", &error,
                               &reply, NULL);
        if (r < 0) {
                cli_print_bus_error("cannot list the apps connected to the producer socket", &error, r, NULL);
                return r;
        }
        r = read_producers(reply, ret);
        if (r < 0) {
                producer_list_done(ret);
                cli_log("cannot read the service's list of producers: %s", strerror(-r));
        }
        return r;
}

static void print_sources(const ProducerList *l) {
        printf("\nDATA SOURCES REGISTERED:\n\n%-40s %-30s %s\n%-40s %-30s %s\n", "NAME", "PRODUCER", "CATEGORIES",
               "====", "========", "==========");
        for (size_t i = 0; i < l->n; i++) {
                const ProducerInfo *p = &l->items[i];

                for (size_t j = 0; j < p->n_sources; j++) {
                        _cleanup_free_ char *categories = strv_join(p->sources[j].categories, ", ");
                        _cleanup_free_ char *producer = NULL;

                        /* The whole name, however long: it is how the user tells apps apart. */
                        if (asprintf(&producer, "%" PRIu64 " (%s)", p->id, p->name) < 0)
                                producer = NULL;
                        printf("%-40s %-30s %s\n", p->sources[j].name, strempty(producer), strempty(categories));
                }
        }
}

void cli_print_producers(const ProducerList *l) {
        if (l->n == 0) {
                printf("\nNo apps%s connected to the producer socket.\n", geteuid() == 0 ? "" : " of yours");
                return;
        }
        printf("\nPRODUCER PROCESSES CONNECTED:\n\n%-10s %-10s %-10s %s\n%-10s %-10s %-10s %s\n", "ID", "PID", "UID",
               "NAME", "==", "===", "===", "====");
        for (size_t i = 0; i < l->n; i++)
                printf("%-10" PRIu64 " %-10u %-10u %s\n", l->items[i].id, (unsigned) l->items[i].pid,
                       (unsigned) l->items[i].uid, l->items[i].name);
        print_sources(l);
}

static void print_json_strv(char **l) {
        fputc('[', stdout);
        STRV_FOREACH(s, l) {
                if (s != l)
                        fputs(", ", stdout);
                cli_json_string(stdout, *s);
        }
        fputc(']', stdout);
}

static void print_json_producer(const ProducerInfo *p) {
        printf("{\"id\": %" PRIu64 ", \"name\": ", p->id);
        cli_json_string(stdout, p->name);
        printf(", \"uid\": %u, \"pid\": %u, \"data_sources\": [", (unsigned) p->uid, (unsigned) p->pid);
        for (size_t j = 0; j < p->n_sources; j++) {
                if (j > 0)
                        fputs(", ", stdout);
                fputs("{\"name\": ", stdout);
                cli_json_string(stdout, p->sources[j].name);
                fputs(", \"categories\": ", stdout);
                print_json_strv(p->sources[j].categories);
                fputc('}', stdout);
        }
        fputs("]}", stdout);
}

void cli_print_producers_json(const ProducerList *l) {
        fputs("\"producers\": [", stdout);
        for (size_t i = 0; i < l->n; i++) {
                if (i > 0)
                        fputs(", ", stdout);
                print_json_producer(&l->items[i]);
        }
        fputc(']', stdout);
}
