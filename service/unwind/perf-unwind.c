/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-process cache of perf-unwind.h: maps, Dwfl modules, ELF and debug files. */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "fd-util.h"
#include "perf-unwind-local.h"

/* /proc/PID/maps of a process at vm.max_map_count (65530) is about 6 MiB. */
#define PERF_MAPS_MAX_BYTES (16u * 1024u * 1024u)
#define PERF_DEFAULT_DEBUG_DIRS "/usr/lib/debug"
/* Larger than any real library or debug file; a sparse file must not be read whole. */
#define PERF_MAX_FILE_BYTES (4ull << 30)
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp);
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name);

/* The vDSO is the kernel's: the service's own copy unwinds every process's. */
static void copy_own_vdso(PerfUnwinder *u) {
        const uint8_t *base = (const uint8_t *) getauxval(AT_SYSINFO_EHDR);
        _cleanup_free_ char *maps = NULL;
        size_t len;

        if (!base || read_full_file("/proc/self/maps", PERF_MAPS_MAX_BYTES, &maps, &len) < 0)
                return;
        for (char *line = maps; line; line = strchr(line, '\n')) {
                uint64_t start, end;
                line += *line == '\n';
                if (sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) == 2 && start == (uintptr_t) base) {
                        u->vdso = malloc(end - start);
                        if (u->vdso) {
                                memcpy(u->vdso, base, end - start);
                                u->vdso_len = end - start;
                        }
                        return;
                }
        }
}

int perf_unwinder_new(uint64_t max_memory_kb, PerfUnwinder **ret) {
        _cleanup_(perf_unwinder_freep) PerfUnwinder *u = NULL;
        int r;

        /* libelf's version handshake; it only records the version. */
        (void) elf_version(EV_CURRENT);
        u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        u->max_bytes = max_memory_kb * 1024;
        u->callbacks = (Dwfl_Callbacks) {
                .find_elf = find_elf,
                .find_debuginfo = find_debuginfo,
        };
        r = perf_unwinder_set_debug_dirs(u, PERF_DEFAULT_DEBUG_DIRS);
        if (r < 0)
                return r;
        copy_own_vdso(u);
        *ret = TAKE_PTR(u);
        return 0;
}

PerfUnwinder *perf_unwinder_free(PerfUnwinder *u) {
        if (!u)
                return NULL;
        free(u->debug_dirs);
        free(u->vdso);
        return mfree(u);
}

int perf_unwinder_set_debug_dirs(PerfUnwinder *u, const char *dirs) {
        char *copy = strdup(dirs);

        if (!copy)
                return -ENOMEM;
        free_and_replace(u->debug_dirs, copy);
        return 0;
}

uint64_t perf_unwinder_memory_used(const PerfUnwinder *u) {
        return u->used_bytes;
}

bool perf_unwinder_take_memory_exceeded(PerfUnwinder *u) {
        bool r = u->exceeded;
        u->exceeded = false;
        return r;
}

bool perf_unwinder_take_files_denied(PerfUnwinder *u) {
        bool r = u->denied;
        u->denied = false;
        return r;
}

bool perf_process_charge(PerfProcess *p, uint64_t size) {
        PerfUnwinder *u = p->unwinder;

        if (u->max_bytes > 0 && u->used_bytes + size > u->max_bytes) {
                u->exceeded = true;
                return false;
        }
        u->used_bytes += size;
        p->bytes += size;
        return true;
}

void perf_process_uncharge(PerfProcess *p, uint64_t size) {
        p->unwinder->used_bytes -= size;
        p->bytes -= size;
}

/* The caches of names point into the maps and the modules: dropped with them. */
static void flush_names(PerfProcess *p) {
        p->names = mfree(p->names);
        for (size_t i = 0; i < p->cap_copies; i++)
                free(p->copies[i].copy);
        p->copies = mfree(p->copies);
        p->n_copies = p->cap_copies = 0;
}

/* Drops what was read of the process and gives its bytes back to the cap. */
static void drop_caches(PerfProcess *p) {
        flush_names(p);
        if (p->dwfl)
                dwfl_end(p->dwfl);
        p->dwfl = NULL;
        if (p->backend_elf)
                elf_end(p->backend_elf);
        p->backend_elf = NULL;
        p->attached = p->attach_failed = false;
        p->unwinder->used_bytes -= p->bytes;
        p->bytes = 0;
}

PerfProcess *perf_process_free(PerfProcess *p) {
        if (!p)
                return NULL;
        drop_caches(p);
        free(p->modules);
        free(p->maps);
        free(p->info);
        free(p->maps_text);
        return mfree(p);
}

/* Splits maps text in place: each mapping's path points into @text. */
static int parse_maps(PerfProcess *p, char *text) {
        size_t n = 0, cap = 0;

        for (char *line = text, *next; line && *line; line = next) {
                uint64_t start, end, pgoff, inode;
                char perms[5];
                int off = 0;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*x:%*x %" SCNu64 " %n",
                           &start, &end, perms, &pgoff, &inode, &off) < 5 || off == 0)
                        continue;
                if (n == cap) {
                        cap = MAX(cap * 2, 64u);
                        PerfMapping *m = reallocarray(p->maps, cap, sizeof(*m));
                        if (!m)
                                return -ENOMEM;
                        p->maps = m;
                        PerfMapInfo *info = reallocarray(p->info, cap, sizeof(*info));
                        if (!info)
                                return -ENOMEM;
                        p->info = info;
                }
                /* Anonymous memory has no file offset (maps may show the vma's page index). */
                p->maps[n] = (PerfMapping) { .start = start, .end = end, .pgoff = inode ? pgoff : 0, .path = line + off };
                p->info[n] = (PerfMapInfo) { .inode = inode, .exec = perms[2] == 'x' };
                n++;
        }
        p->n_maps = n;
        return 0;
}

static bool same_file(const PerfProcess *p, size_t a, size_t b) {
        return p->info[a].inode == p->info[b].inode && streq(p->maps[a].path, p->maps[b].path);
}

/* One module a run of mappings of one file that starts at offset 0 (where the ELF
 * header is: dwfl derives the load bias from it) and has code; and the vDSO. */
static int report_modules(PerfProcess *p) {
        size_t n = 0;

        p->modules = calloc(MAX(p->n_maps, 1u), sizeof(PerfModule));
        if (!p->modules)
                return -ENOMEM;
        for (size_t i = 0, j; i < p->n_maps; i = j) {
                bool exec = p->info[i].exec;

                for (j = i + 1; j < p->n_maps && same_file(p, i, j) && p->maps[j].start == p->maps[j - 1].end; j++)
                        exec = exec || p->info[j].exec;
                bool vdso = streq(p->maps[i].path, "[vdso]");
                if (!exec || (!vdso && (p->maps[i].path[0] != '/' || p->maps[i].pgoff != 0)))
                        continue;
                Dwfl_Module *mod = dwfl_report_module(p->dwfl, p->maps[i].path,
                                                          p->maps[i].start, p->maps[j - 1].end);
                if (!mod)
                        continue;       /* overlaps another: its frames go unnamed */
                p->modules[n] = (PerfModule) {
                        .process = p, .first = i, .n = j - i, .inode = p->info[i].inode, .mod = mod,
                };
                void **userdata;
                dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
                *userdata = &p->modules[n++];
        }
        p->n_modules = n;
        return dwfl_report_end(p->dwfl, NULL, NULL) == 0 ? 0 : -EIO;
}

/* dwfl kept the modules reported again with the same file and range, their ELF files
 * loaded: their bytes stay charged (without a cap check: they are held already). */
static void carry_modules(PerfProcess *p, const PerfModule *old, size_t n_old) {
        for (size_t i = 0; i < p->n_modules; i++)
                for (size_t k = 0; k < n_old; k++)
                        if (old[k].mod == p->modules[i].mod && old[k].bytes > 0) {
                                p->modules[i].bytes = old[k].bytes;
                                p->unwinder->used_bytes += old[k].bytes;
                                p->bytes += old[k].bytes;
                                break;
                        }
}

static int read_maps(PerfProcess *p) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        size_t len;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int) p->pid);
        r = read_full_file(path, PERF_MAPS_MAX_BYTES, &text, &len);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        r = parse_maps(p, text);
        if (r < 0)
                return r;
        p->maps_text = TAKE_PTR(text);
        return perf_process_charge(p, len + 1 + p->n_maps * (sizeof(PerfMapping) + sizeof(PerfMapInfo) + sizeof(PerfModule)))
                ? 0 : -ENOBUFS;
}

int perf_process_reload_maps(PerfProcess *p) {
        _cleanup_free_ PerfModule *old = TAKE_PTR(p->modules);
        size_t n_old = p->n_modules;
        int r;

        /* Everything is given back, then what dwfl keeps is charged again. */
        flush_names(p);
        p->unwinder->used_bytes -= p->bytes;
        p->bytes = 0;
        p->maps = mfree(p->maps);
        p->info = mfree(p->info);
        p->maps_text = mfree(p->maps_text);
        p->n_maps = p->n_modules = 0;

        r = read_maps(p);
        if (r < 0) {
                drop_caches(p);
                return r;
        }
        if (!p->dwfl)
                p->dwfl = dwfl_begin(&p->unwinder->callbacks);
        else
                dwfl_report_begin(p->dwfl);
        if (!p->dwfl)
                return -ENOMEM;
        r = report_modules(p);
        if (r < 0) {
                drop_caches(p);
                return r;
        }
        carry_modules(p, old, n_old);
        return 0;
}

int perf_process_new(PerfUnwinder *u, pid_t pid, PerfProcess **ret) {
        _cleanup_(perf_process_freep) PerfProcess *p = NULL;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->unwinder = u;
        p->pid = pid;
        r = perf_process_reload_maps(p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

size_t perf_process_mappings(const PerfProcess *p, const PerfMapping **ret) {
        *ret = p->maps;
        return p->n_maps;
}

/* open_in_root() without openat2, which systemd's RestrictSUIDSGID= (in the unit)
 * answers with ENOSYS, as seccomp cannot see its flags: @path walked from @root one
 * component at a time, never following a symlink (O_NOFOLLOW: a symlink is opened
 * itself, and is then no directory to go on from, nor a regular file), never "..".
 * Paths from /proc/PID/maps are the kernel's d_path, which has no symlinks. */
static int walk_in_root(int root, const char *path) {
        _cleanup_close_ int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);

        if (fd < 0)
                return negative_errno();
        for (const char *p = path;;) {
                char name[NAME_MAX + 1];
                size_t n;
                int next;

                p += strspn(p, "/");
                if (!*p)
                        return TAKE_FD(fd);
                n = strcspn(p, "/");
                if (n > NAME_MAX || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return -EINVAL;
                memcpy(name, p, n);
                name[n] = '\0';
                next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return negative_errno();
                safe_close(fd);
                fd = next;
                p += n;
        }
}

/* @path as the process sees it, as an O_PATH fd: resolved inside its root, so that a
 * symlink of its own cannot lead to the service's files (openat2's RESOLVE_IN_ROOT). */
static int open_in_root(pid_t pid, const char *path) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int root = -EBADF;
        char root_path[64];
        int fd;

        snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int) pid);
        root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return negative_errno();
        fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                return walk_in_root(root, path);
        return fd < 0 ? negative_errno() : fd;
}

/* Whether the service may read the file at @fd: a regular file under the size ceiling,
 * not on FUSE (its daemon, maybe the sampled user's own, could stall the open and the
 * reads, and with them the sampler). Asked of an O_PATH fd: no open reached FUSE yet. */
static bool file_readable(int fd, struct stat *st) {
        struct statfs sfs;

        return fstat(fd, st) >= 0 && S_ISREG(st->st_mode) && (uint64_t) st->st_size <= PERF_MAX_FILE_BYTES &&
               fstatfs(fd, &sfs) >= 0 && sfs.f_type != FUSE_SUPER_MAGIC;
}

/* The mapped file itself, checked, then opened for reading: /proc/PID/map_files (the
 * very inode, even deleted or in another mount namespace; root only), else the path in
 * the process's root if its inode is the mapped one (st_dev is not compared: btrfs
 * subvolumes show another in maps). Never a path anyone passed. */
static int open_mapped_file(const PerfModule *m, struct stat *st) {
        const PerfProcess *p = m->process;
        const PerfMapping *first = &p->maps[m->first];
        _cleanup_close_ int fd = -EBADF;
        char path[96];

        snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int) p->pid, first->start, first->end);
        fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0) {
                fd = open_in_root(p->pid, first->path);
                if (fd == -EACCES || fd == -EPERM)
                        p->unwinder->denied = true;
                if (fd < 0)
                        return fd;
        }
        if (!file_readable(fd, st) || st->st_ino != m->inode)
                return -ESTALE;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        int r = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        /* An execute-only binary: the owner may run it, not read its names. */
        if (r < 0 && (errno == EACCES || errno == EPERM))
                p->unwinder->denied = true;
        return r < 0 ? negative_errno() : r;
}

/* dwfl's find_elf: the module's file mapped whole (the fd is closed: only the debug
 * files dwfl opens itself keep one), charged to the memory cap. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp) {
        PerfModule *m = *userdata;
        PerfProcess *p = m->process;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        Elf *elf;

        if (streq(modname, "[vdso]")) {
                if (p->unwinder->vdso)
                        *elfp = elf_memory((char *) p->unwinder->vdso, p->unwinder->vdso_len);
                return -1;
        }
        fd = open_mapped_file(m, &st);
        if (fd < 0 || !perf_process_charge(p, st.st_size))
                return -1;
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        /* Without a whole mapping libelf reads lazily from the fd: read it all now. */
        if (!elf || elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD) < 0) {
                if (elf)
                        elf_end(elf);
                perf_process_uncharge(p, st.st_size);
                return -1;
        }
        m->bytes += st.st_size;
        elf_cntl(elf, ELF_C_FDDONE);
        *elfp = elf;
        return -1;
}

/* The debug file of a build id, <dir>/.build-id/xx/rest.debug, in each debug directory: a
 * regular file only (checked on the descriptor), its last component never a symlink, never
 * a FIFO waited on. No .gnu_debuglink is followed: a name next to the sampled binary is
 * the process owner's to choose. */
static int open_debug_by_build_id(const PerfUnwinder *u, const unsigned char *id, int len, char **ret_path,
                                  struct stat *st) {
        char hex[2 * 64 + 1];

        if (len <= 1 || len > 64)
                return -ENOENT;
        for (int i = 0; i < len; i++)
                snprintf(hex + 2 * i, 3, "%02x", id[i]);
        for (const char *d = u->debug_dirs; d && *d;) {
                size_t n = strcspn(d, ":");
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int fd = -EBADF;

                if (n > 0 && asprintf(&path, "%.*s/.build-id/%.2s/%s.debug", (int) n, d, hex, hex + 2) < 0)
                        return -ENOMEM;
                d += n + (d[n] == ':');
                if (!path)
                        continue;
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
                if (fd >= 0 && file_readable(fd, st)) {
                        *ret_path = TAKE_PTR(path);
                        return TAKE_FD(fd);
                }
        }
        return -ENOENT;
}

/* dwfl's find_debuginfo: by build id only, charged to the cap. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name) {
        PerfModule *m = *userdata;
        const unsigned char *id = NULL;
        GElf_Addr vaddr;
        struct stat st;
        int fd, len;

        if (!m)
                return -1;
        len = dwfl_module_build_id(mod, &id, &vaddr);
        fd = open_debug_by_build_id(m->process->unwinder, id, len, debuginfo_file_name, &st);
        if (fd < 0)
                return -1;
        if (!perf_process_charge(m->process, st.st_size)) {
                safe_close(fd);
                *debuginfo_file_name = mfree(*debuginfo_file_name);
                return -1;
        }
        m->bytes += st.st_size;
        return fd;
}
