/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --track-event CATEGORY: the short form of recording apps built with the Perfetto SDK.
 * Such an app connects to the producer socket and registers the track_event data source;
 * this option adds that data source to the light config, with the categories named
 * (repeatable; '*' for every category) as track_event_config.enabled_categories. Alone it
 * makes a config of the apps' events and the process names only, no kernel events; with
 * events it records both. perfetto's own --app (-a) names an Android app for atrace and
 * keeps that meaning (refused off Android): the SDK apps have an option of their own.
 */
#include <string.h>

#include "cli.h"
#include "strv.h"

/* The SDK's category names are short identifiers ("rendering", "audio.latency"); a
 * pattern may end in '*'. Longer than this is a mistake, not a category. */
#define TRACK_EVENT_CATEGORY_MAX 256

int cli_parse_track_event(Args *a, const char *arg) {
        size_t n = strlen(arg);

        if (n == 0 || n > TRACK_EVENT_CATEGORY_MAX)
                return cli_refuse("--track-event argument is invalid: '%s' (a category of the apps' track "
                                  "events, e.g. rendering, or '*' for all)", arg);
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) arg[i] < 0x20 || arg[i] == 0x7f)
                        return cli_refuse("--track-event argument has a control character: a category is text");
        return strv_extend_unique(&a->track_event_categories, arg) < 0 ? -ENOMEM : 0;
}

int cli_check_track_event(const Args *a) {
        if (a->track_event_categories && a->config_path)
                return cli_refuse("--track-event builds its own config: it cannot be combined with -c/--config "
                                  "(write the track_event data source into the config instead)");
        return 0;
}

void cli_track_event_append_sources(FILE *f, const Args *a) {
        if (!a->track_event_categories)
                return;
        fputs("data_sources { config { name: \"track_event\" target_buffer: 0 track_event_config {\n", f);
        STRV_FOREACH(c, a->track_event_categories) {
                fputs("  enabled_categories: ", f);
                cli_append_quoted(f, *c);
                fputc('\n', f);
        }
        fputs("} } }\n", f);
}
