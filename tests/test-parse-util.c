/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: sizes and time spans (lib/basic/parse-util.c), as tracebusd.conf and the CLI
 * read them. */
#include <errno.h>
#include <glib.h>

#include "parse-util.h"

static void assert_size(const char *s, uint64_t bare_unit, uint64_t expected) {
        uint64_t n = 12345;

        g_assert_cmpint(parse_size(s, bare_unit, &n), ==, 0);
        g_assert_cmpuint(n, ==, expected);
}

static void assert_size_fails(const char *s, int expected) {
        uint64_t n = 12345;

        g_assert_cmpint(parse_size(s, 1, &n), ==, expected);
        g_assert_cmpuint(n, ==, 12345);
}

static void test_size_units(void) {
        assert_size("0", 1, 0);
        assert_size("1024", 1, 1024);
        assert_size("4k", 1, 4096);
        assert_size("3G", 1, 3ull << 30);
        assert_size("2T", 1, 2ull << 40);
        assert_size("512b", 1, 512);
        /* The CLI's spellings, in any case. */
        assert_size("8mb", 1, 8ull << 20);
        assert_size("4MiB", 1, 4ull << 20);
        assert_size("64KB", 1, 64ull << 10);
        assert_size("1gib", 1, 1ull << 30);
        assert_size("1TiB", 1, 1ull << 40);
        /* Blanks between the number and its unit, as tracebusd.conf allows. */
        assert_size("512 M", 1, 512ull << 20);
        assert_size("1\tK", 1, 1024);
}

static void test_size_bare_and_fractions(void) {
        /* A bare number: bytes for tracebusd.conf, KiB for the CLI and MaxBufferSizeKB=. */
        assert_size("4096", 1, 4096);
        assert_size("4096", 1024, 4096ull << 10);
        assert_size("1.5k", 1, 1536);
        assert_size("1.5", 1024, 1536);
        assert_size(".5m", 1, 512ull << 10);
        assert_size("2.", 1, 2);
        /* Rounded to the nearest byte, halves up. */
        assert_size("0.1k", 1, 102);
        assert_size("1.0005k", 1, 1025);
        assert_size("0.3b", 1, 0);
        assert_size("0.5b", 1, 1);
        /* Digits past the 18th cannot change a byte count. */
        assert_size("1.0000000000000000000000001g", 1, 1ull << 30);
}

static void test_size_bad(void) {
        assert_size_fails("", -EINVAL);
        assert_size_fails(" 1", -EINVAL);
        assert_size_fails("-1", -EINVAL);
        assert_size_fails("+1", -EINVAL);
        assert_size_fails(".", -EINVAL);
        assert_size_fails("k", -EINVAL);
        assert_size_fails("1x", -EINVAL);
        assert_size_fails("1kx", -EINVAL);
        assert_size_fails("1 M x", -EINVAL);
        assert_size_fails("1M ", -EINVAL);
        assert_size_fails("1.2.3", -EINVAL);
        assert_size_fails("inf", -EINVAL);
        assert_size_fails("nan", -EINVAL);
        assert_size_fails("0x10", -EINVAL);
        assert_size_fails("1e3", -EINVAL);
        assert_size_fails("1 s", -EINVAL);
}

static void test_size_overflow(void) {
        assert_size("18446744073709551615", 1, UINT64_MAX);
        assert_size_fails("18446744073709551616", -ERANGE);
        assert_size_fails("99999999999999999999", -ERANGE);
        assert_size_fails("99999999999T", -ERANGE);
        assert_size_fails("16777216T", -ERANGE);
        assert_size("16777215.5T", 1, (16777215ull << 40) + (1ull << 39));
        g_assert_cmpint(parse_size("18014398509481984", 1024, &(uint64_t) { 0 }), ==, -ERANGE);
}

static void assert_span(const char *s, uint64_t expected) {
        uint64_t n = 12345;

        g_assert_cmpint(parse_timespan(s, &n), ==, 0);
        g_assert_cmpuint(n, ==, expected);
}

static void assert_span_fails(const char *s, int expected) {
        uint64_t n = 12345;

        g_assert_cmpint(parse_timespan(s, &n), ==, expected);
        g_assert_cmpuint(n, ==, 12345);
}

static void test_timespan_units(void) {
        assert_span("30", 30 * G_USEC_PER_SEC);
        assert_span("0", 0);
        assert_span("7us", 7);
        assert_span("250ms", 250 * 1000);
        assert_span("10s", 10 * G_USEC_PER_SEC);
        assert_span("10sec", 10 * G_USEC_PER_SEC);
        assert_span("5m", 300 * G_USEC_PER_SEC);
        assert_span("2MIN", 120 * G_USEC_PER_SEC);
        assert_span("1h", 3600ull * G_USEC_PER_SEC);
        assert_span("1hr", 3600ull * G_USEC_PER_SEC);
        assert_span("1d", 86400ull * G_USEC_PER_SEC);
        assert_span("infinity", UINT64_MAX);
        assert_span("Infinity", UINT64_MAX);
}

static void test_timespan_sums_and_fractions(void) {
        assert_span("1h 2min 3s 4ms", (3723ull * 1000 + 4) * 1000);
        assert_span("1min30s", 90 * G_USEC_PER_SEC);
        assert_span("1 min 30 s", 90 * G_USEC_PER_SEC);
        assert_span("1.5s", 1500 * 1000);
        assert_span("1.5m", 90 * G_USEC_PER_SEC);
        assert_span("0.5", 500 * 1000);
        assert_span("1.5ms", 1500);
        /* Rounded to the nearest microsecond, halves up. */
        assert_span("0.0000004s", 0);
        assert_span("0.0000005s", 1);
}

static void test_timespan_bad(void) {
        assert_span_fails("", -EINVAL);
        assert_span_fails("s", -EINVAL);
        assert_span_fails("-1s", -EINVAL);
        assert_span_fails("5 years", -EINVAL);
        assert_span_fails("10x", -EINVAL);
        assert_span_fails("soon", -EINVAL);
        assert_span_fails("1s,", -EINVAL);
        assert_span_fails("infinity 1s", -EINVAL);
}

static void test_timespan_overflow(void) {
        /* UINT64_MAX is "infinity": no sum may reach it. */
        assert_span("18446744073709551614us", UINT64_MAX - 1);
        assert_span_fails("18446744073709551615us", -ERANGE);
        assert_span_fails("18446744073709551614us 1us", -ERANGE);
        assert_span_fails("99999999999999999999", -ERANGE);
        assert_span_fails("213503983d", -ERANGE);
        assert_span("213503982d", 213503982ull * 86400ull * G_USEC_PER_SEC);
}

static void test_hex_digit_value(void) {
        g_assert_cmpint(hex_digit_value('0'), ==, 0);
        g_assert_cmpint(hex_digit_value('9'), ==, 9);
        g_assert_cmpint(hex_digit_value('a'), ==, 10);
        g_assert_cmpint(hex_digit_value('F'), ==, 15);
        g_assert_cmpint(hex_digit_value('g'), ==, -1);
        g_assert_cmpint(hex_digit_value('x'), ==, -1);
        g_assert_cmpint(hex_digit_value(' '), ==, -1);
        g_assert_cmpint(hex_digit_value('\0'), ==, -1);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/parse-util/size-units", test_size_units);
        g_test_add_func("/parse-util/size-bare-and-fractions", test_size_bare_and_fractions);
        g_test_add_func("/parse-util/size-bad", test_size_bad);
        g_test_add_func("/parse-util/size-overflow", test_size_overflow);
        g_test_add_func("/parse-util/timespan-units", test_timespan_units);
        g_test_add_func("/parse-util/timespan-sums-and-fractions", test_timespan_sums_and_fractions);
        g_test_add_func("/parse-util/timespan-bad", test_timespan_bad);
        g_test_add_func("/parse-util/timespan-overflow", test_timespan_overflow);
        g_test_add_func("/parse-util/hex-digit-value", test_hex_digit_value);
        return g_test_run();
}
