/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: the scan of a user's trace directory (service/core/trace-dir.c), which counts
 * the quota's bytes and refuses what would hide usage from it. Runs as any user. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace-dir.h"

typedef struct {
        char *path;
        int fd;
} Dir;

static void dir_setup(Dir *d, gconstpointer data) {
        d->path = g_dir_make_tmp("trace-dir-XXXXXX", NULL);
        g_assert_nonnull(d->path);
        d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(d->fd, >=, 0);
}

static void dir_teardown(Dir *d, gconstpointer data) {
        g_autoptr(GDir) dir = g_dir_open(d->path, 0, NULL);
        const char *name;

        while (dir && (name = g_dir_read_name(dir))) {
                g_autofree char *p = g_build_filename(d->path, name, NULL);
                if (g_remove(p) < 0)
                        g_assert_cmpint(rmdir(p), ==, 0);
        }
        close(d->fd);
        g_assert_cmpint(rmdir(d->path), ==, 0);
        g_free(d->path);
}

static TraceDirFileId put_file(Dir *d, const char *name, size_t size) {
        g_autofree char *p = g_build_filename(d->path, name, NULL);
        g_autofree char *data = g_malloc0(size + 1);
        struct stat st;

        g_assert_true(g_file_set_contents(p, data, (gssize) size, NULL));
        g_assert_cmpint(stat(p, &st), ==, 0);
        return (TraceDirFileId) { st.st_dev, st.st_ino };
}

static int scan(Dir *d, const TraceDirFileId *skip, size_t n_skip, uint64_t *ret, char **ret_refused) {
        *ret = UINT64_MAX;
        return trace_dir_usage(d->fd, skip, n_skip, ret, ret_refused);
}

/* Regular files count with what they hold on disk, at least their size; a live
 * session's file (skipped) does not. */
static void test_counts_files(Dir *d, gconstpointer data) {
        g_autofree char *refused = NULL;
        TraceDirFileId live;
        uint64_t used;

        g_assert_cmpint(scan(d, NULL, 0, &used, &refused), ==, 0);
        g_assert_cmpuint(used, ==, 0);
        put_file(d, "a", 100000);
        live = put_file(d, "b", 50000);
        g_assert_cmpint(scan(d, NULL, 0, &used, &refused), ==, 0);
        g_assert_cmpuint(used, >=, 150000);
        g_assert_cmpint(scan(d, &live, 1, &used, &refused), ==, 0);
        g_assert_cmpuint(used, >=, 100000);
        g_assert_cmpuint(used, <, 150000);
        g_assert_null(refused);
}

/* Each entry that would hide usage is refused by name. */
static void test_refuses(Dir *d, gconstpointer data) {
        g_autofree char *sub = g_build_filename(d->path, "sub", NULL), *a = g_build_filename(d->path, "a", NULL);
        g_autofree char *link2 = g_build_filename(d->path, "a2", NULL), *sym = g_build_filename(d->path, "sym", NULL);
        g_autofree char *fifo = g_build_filename(d->path, "fifo", NULL);
        const struct {
                const char *path;
                int error;
        } cases[] = { { sub, -ENOTDIR }, { link2, -EMLINK }, { sym, -ELOOP }, { fifo, -ENOTDIR } };
        uint64_t used;

        put_file(d, "a", 10);
        g_assert_cmpint(mkdir(sub, 0700), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *refused = NULL;

                if (i == 1)
                        g_assert_cmpint(link(a, link2), ==, 0);
                else if (i == 2)
                        g_assert_cmpint(symlink("/etc/passwd", sym), ==, 0);
                else if (i == 3)
                        g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
                g_assert_cmpint(scan(d, NULL, 0, &used, &refused), ==, cases[i].error);
                g_assert_cmpuint(used, ==, UINT64_MAX);
                /* The hard link: either of its names. */
                g_assert_true(g_str_has_suffix(cases[i].path, refused) ||
                              (i == 1 && g_str_equal(refused, "a")));
                g_assert_cmpint(g_remove(cases[i].path) == 0 || rmdir(cases[i].path) == 0, ==, 1);
        }
}

/* More entries than TRACE_DIR_MAX_ENTRIES: refused without a name, not scanned through. */
static void test_too_many(Dir *d, gconstpointer data) {
        g_autofree char *refused = NULL;
        uint64_t used;

        for (unsigned i = 0; i <= TRACE_DIR_MAX_ENTRIES; i++) {
                char name[32];
                int fd;

                snprintf(name, sizeof(name), "f%u", i);
                fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                g_assert_cmpint(fd, >=, 0);
                close(fd);
        }
        g_assert_cmpint(scan(d, NULL, 0, &used, &refused), ==, -E2BIG);
        g_assert_null(refused);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/trace-dir/counts-files", Dir, NULL, dir_setup, test_counts_files, dir_teardown);
        g_test_add("/trace-dir/refuses", Dir, NULL, dir_setup, test_refuses, dir_teardown);
        g_test_add("/trace-dir/too-many", Dir, NULL, dir_setup, test_too_many, dir_teardown);
        return g_test_run();
}
