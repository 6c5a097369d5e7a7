/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: TraceConfig.trace_filter through the tracebus CLI
 * against the real service. A filter that keeps every TracePacket field but
 * process_tree gives a trace without process descriptions, compressed or not, whose
 * ftrace events are all there; a bad bytecode is refused at Start, naming trace_filter.
 *
 * The bytecodes are Perfetto v58's (src/protozero/filtering): varint words, the opcode
 * in the low 3 bits, the FNV-1a checksum of the words last. DROP_TREE is
 *   Trace:       NESTED(packet=1) -> 1, END
 *   TracePacket: SIMPLE(1), RANGE(3, 2000 ids), END
 * so fields 1 and 3..2002 pass as they are and field 2 (process_tree) is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "session-util.h"

#define DROP_TREE "\\x0b\\x01\\x00\\x09\\x1a\\xd0\\x0f\\x00\\xf1\\xf2\\x99\\x95\\x0e"

static char *config_filtered(const char *extra) {
        g_autofree char *base = config_text(1000);
        return g_strconcat(base, "data_sources { config { name: \"linux.process_stats\" "
                           "process_stats_config { scan_all_processes_on_start: true } } }\n", extra, NULL);
}

/* counts: process trees, ftrace bundles, packets with a sequence id, TraceStats with
 * filter_stats; then that filter_stats' input packets, input and output bytes, errors. */
static void count_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        guint *counts = userdata;
        const Tracebus__TraceStats__FilterStats *fs = p->trace_stats ? p->trace_stats->filter_stats : NULL;

        counts[0] += p->process_tree != NULL;
        counts[1] += p->ftrace_events != NULL;
        counts[2] += p->trusted_packet_sequence_id != 0;
        if (!fs)
                return;
        counts[3]++;
        counts[4] = (guint) fs->input_packets;
        counts[5] = (guint) fs->input_bytes;
        counts[6] = (guint) fs->output_bytes;
        counts[7] = (guint) fs->errors;
}

static void count_packets(const char *path, guint counts[8]) {
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, count_packet, counts, NULL, &error));
        g_assert_no_error(error);
}

static void record(const char *dir, const char *name, const char *text, const char *out) {
        g_autofree char *cfg = user_file("tbuser", dir, name, text, -1);
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
        /* Honoured: no warning about it. */
        g_assert_null(strstr(res.err, "trace_filter"));
}

static void test_drop_process_tree(void) {
        g_autofree char *dir = make_user_dir("tbuser", "filter-tree");
        g_autofree char *plain = config_filtered("");
        g_autofree char *filtered = config_filtered("trace_filter { bytecode_v2: \"" DROP_TREE "\" }\n");
        g_autofree char *zipped = config_filtered("trace_filter { bytecode: \"" DROP_TREE "\" }\n"
                                                  "compression_type: COMPRESSION_TYPE_DEFLATE\n");
        g_autofree char *out_plain = g_build_filename(dir, "plain.pftrace", NULL);
        g_autofree char *out_filtered = g_build_filename(dir, "filtered.pftrace", NULL);
        g_autofree char *out_zipped = g_build_filename(dir, "zipped.pftrace", NULL);
        g_auto(TbTraceSummary) a = { 0 }, b = { 0 }, c = { 0 };
        g_autoptr(GError) error = NULL;
        guint ca[8] = { 0 }, cb[8] = { 0 }, cc[8] = { 0 };
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-filter", &busy, &error));
        record(dir, "plain.pbtxt", plain, out_plain);
        record(dir, "filtered.pbtxt", filtered, out_filtered);
        record(dir, "zipped.pbtxt", zipped, out_zipped);
        tb_busy_stop(&busy);

        count_packets(out_plain, ca);
        count_packets(out_filtered, cb);
        count_packets(out_zipped, cc);
        note("process_tree packets: %u unfiltered, %u and %u filtered; ftrace bundles %u, %u, %u\n",
             ca[0], cb[0], cc[0], ca[1], cb[1], cc[1]);
        g_assert_cmpuint(ca[0], >, 0);
        g_assert_cmpuint(cb[0], ==, 0);
        g_assert_cmpuint(cc[0], ==, 0);
        /* Everything else kept: ftrace bundles, sequence ids, sched events. */
        g_assert_cmpuint(cb[1], >, 0);
        g_assert_cmpuint(cb[2], >, 0);
        /* TraceStats.filter_stats, as Perfetto writes it, only with a filter. */
        g_assert_cmpuint(ca[3], ==, 0);
        g_assert_cmpuint(cb[3], ==, 1);
        g_assert_cmpuint(cb[4], >, cb[1]);
        g_assert_cmpuint(cb[6], <, cb[5]);
        g_assert_cmpuint(cb[7], ==, 0);
        g_assert_cmpuint(cc[3], ==, 1);
        g_assert_true(tb_trace_file_read(out_filtered, &b, &error));
        g_assert_no_error(error);
        g_assert_true(tb_trace_file_read(out_plain, &a, &error));
        g_assert_true(tb_trace_file_read(out_zipped, &c, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(b.n_sched_switch + b.n_compact_switch, >, 0);
        g_assert_cmpuint(c.n_compressed_packets, >, 0);
        g_assert_cmpuint(c.n_sched_switch + c.n_compact_switch, >, 0);
        g_assert_true(b.has_clock_snapshot && b.has_trace_config);
}

/* libpcre2 is loaded by the first session with string filter rules (pcre2-dlopen.c), not
 * at the service's start; registered first, so no case before it had rules. The rule
 * compiles and the trace is written; a pattern that does not compile is refused. */
static void test_string_rules_load_pcre2(void) {
        g_autofree char *dir = make_user_dir("tbuser", "filter-rules");
        g_autofree char *text = config_filtered("trace_filter { bytecode_v2: \"" DROP_TREE "\"\n"
                                                "  string_filter_chain { rules { policy: SFP_MATCH_REDACT_GROUPS"
                                                " regex_pattern: \"pw=(\\\\w+)\" } } }\n");
        g_autofree char *bad = config_filtered("trace_filter { bytecode_v2: \"" DROP_TREE "\"\n"
                                               "  string_filter_chain { rules { policy: SFP_MATCH_REDACT_GROUPS"
                                               " regex_pattern: \"(unclosed\" } } }\n");
        g_autofree char *bad_cfg = user_file("tbuser", dir, "bad.pbtxt", bad, -1);
        g_autofree char *out = g_build_filename(dir, "rules.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        guint counts[8] = { 0 };

        g_assert_false(service_maps("/libpcre2-8"));
        record(dir, "rules.pbtxt", text, out);
        g_assert_true(service_maps("/libpcre2-8"));
        count_packets(out, counts);
        g_assert_cmpuint(counts[0], ==, 0);
        g_assert_cmpuint(counts[1], >, 0);

        run_cli("tbuser", &res, "-c", bad_cfg, "--txt", "-o", out, NULL);
        assert_exit(&res, 1);
        assert_stderr_has(&res, "string_filter_chain rule 0");
        assert_stderr_has(&res, "does not compile");
}

static void test_bad_bytecode(void) {
        g_autofree char *dir = make_user_dir("tbuser", "filter-bad");
        g_autofree char *text = config_filtered("trace_filter { bytecode_v2: \"\\x0b\\x01\\x00\\x09\" }\n");
        g_autofree char *cfg = user_file("tbuser", dir, "bad.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "bad.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&res, 1);
        assert_stderr_has(&res, "trace_filter");
        assert_stderr_has(&res, "checksum");
}

int main(int argc, char **argv) {
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        /* First: it looks at the service before any session had string rules. */
        tb_test_add_isolated("/bus/cli/tracefilter/string-rules-load-pcre2", test_string_rules_load_pcre2);
        tb_test_add_isolated("/bus/cli/tracefilter/drop-process-tree", test_drop_process_tree);
        tb_test_add_isolated("/bus/cli/tracefilter/bad-bytecode", test_bad_bytecode);
        return tb_test_run(TB_START_SERVICE);
}
