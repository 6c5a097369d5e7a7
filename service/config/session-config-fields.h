/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

#include "session-config.h"

/*
 * What tracebus does with each field of Perfetto v58's TraceConfig and with each data
 * source name: honoured, or skipped with a warning that names it. The table in
 * session-config-fields.c is the one place that says so; the README's "Perfetto
 * configs" section is printed from it (session_config_fields_markdown) and a unit test
 * keeps the two equal.
 */

typedef enum FieldDisposition {
        FIELD_HONOURED,          /* recorded or applied as Perfetto means it */
        FIELD_ANDROID_ONLY,      /* meaningful on Android (or Chrome, Windows) only: skipped */
        FIELD_NOT_YET,           /* not implemented yet: skipped, with a warning */
        FIELD_IGNORED,           /* no meaning in tracebus's design: skipped, the rule says why */
        FIELD_PRODUCER,          /* a data source the apps on the producer socket record */
} FieldDisposition;

/* A field of a config message, by its Perfetto name. @why completes "… : skipped" for
 * FIELD_IGNORED and FIELD_NOT_YET, or says who honours it. */
typedef struct FieldRule {
        const char *message;     /* "TraceConfig", "TraceConfig.BufferConfig", ... */
        const char *field;
        FieldDisposition disposition;
        const char *why;
} FieldRule;

/* A data source name, or a prefix of names when @name ends in '.' or '*'. */
typedef struct SourceRule {
        const char *name;
        FieldDisposition disposition;
        const char *why;
} SourceRule;

extern const FieldRule session_config_field_rules[];
extern const SourceRule session_config_source_rules[];

/* The rule for @field of @message, or NULL (a field without a rule is a bug the unit
 * test catches: every field of the messages walked has one). */
const FieldRule *session_config_field_rule(const char *message, const char *field);

/* The rule for the data source @name; NULL: no data source of that name in tracebus, so
 * one an app may register (FIELD_PRODUCER, as the rules' own producer names). */
const SourceRule *session_config_source_rule(const char *name);

/* The data source a DataSourceConfig field such as "sys_stats_config" configures, or
 * NULL for DataSourceConfig's own fields. */
const char *session_config_field_source(const char *field);

/* session_config_check_fields() is declared in session-config.h, which calls it. */

/* Prints the README's table of dispositions, in Markdown, to @f. */
void session_config_fields_markdown(FILE *f);
