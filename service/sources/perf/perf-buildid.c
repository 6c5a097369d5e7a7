/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The GNU build id of a mapped ELF file, for Mapping.build_id: so that a trace opened on
 * another machine finds the right symbols. The file is opened through
 * /proc/PID/map_files/START-END, the very file the process mapped, never by its path
 * (which the process may have replaced, or named to make the service open a FIFO).
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "perf-local.h"

#define MAX_PHDRS 64u
#define MAX_NOTE_BYTES 4096u

/* The build id in the notes at @buf (@len bytes). */
static size_t find_build_id(const uint8_t *buf, size_t len, uint8_t out[static 64]) {
        size_t off = 0;

        while (off + sizeof(Elf64_Nhdr) <= len) {
                Elf64_Nhdr nh;
                size_t name_len, desc_len;

                memcpy(&nh, buf + off, sizeof(nh));
                off += sizeof(nh);
                name_len = (nh.n_namesz + 3) & ~3u;
                desc_len = (nh.n_descsz + 3) & ~3u;
                if (name_len > len - off || desc_len > len - off - name_len)
                        return 0;
                if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + off, "GNU", 4) == 0 &&
                    nh.n_descsz > 0 && nh.n_descsz <= 64) {
                        memcpy(out, buf + off + name_len, nh.n_descsz);
                        return nh.n_descsz;
                }
                off += name_len + desc_len;
        }
        return 0;
}

static size_t read_notes(int fd, uint8_t out[static 64]) {
        Elf64_Phdr phdrs[MAX_PHDRS];
        uint8_t notes[MAX_NOTE_BYTES];
        Elf64_Ehdr eh;
        size_t n;

        if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t) sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
            eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
                return 0;
        n = MIN((size_t) eh.e_phnum, (size_t) MAX_PHDRS);
        if (pread(fd, phdrs, n * sizeof(Elf64_Phdr), eh.e_phoff) != (ssize_t) (n * sizeof(Elf64_Phdr)))
                return 0;
        for (size_t i = 0; i < n; i++) {
                size_t len = MIN((size_t) phdrs[i].p_filesz, sizeof(notes)), found;
                ssize_t got;

                if (phdrs[i].p_type != PT_NOTE)
                        continue;
                got = pread(fd, notes, len, phdrs[i].p_offset);
                if (got <= 0)
                        continue;
                found = find_build_id(notes, (size_t) got, out);
                if (found > 0)
                        return found;
        }
        return 0;
}

size_t perf_read_build_id(pid_t pid, const PerfMap *m, uint8_t buf[static 64]) {
        _cleanup_close_ int fd = -EBADF;
        char path[96];
        struct stat st;

        snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int) pid, (unsigned long long) m->start,
                 (unsigned long long) m->end);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        return read_notes(fd, buf);
}
