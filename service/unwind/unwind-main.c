/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tracebus-unwind: names and unwinds the user frames of linux.perf's samples for
 * tracebusd, as the session owner (uid, gid and groups), with no capabilities and
 * no_new_privs set by whoever started it. It confines itself further before it reads a
 * request: no sockets, no exec, no ptrace (a seccomp filter), bounded memory and files.
 * It reads requests on stdin and writes replies on stdout (unwind-protocol.h) until EOF.
 *
 *   tracebus-unwind [--max-memory-kb=KB] [--debug-dirs=DIR[:DIR...]]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "unwind-serve.h"

/* Beyond the files the memory cap counts: libdw's tables, the heap, the libraries. */
#define UNWIND_BASE_MEMORY (512ull << 20)
#define UNWIND_DEFAULT_MEMORY (1ull << 30)

#if defined(__x86_64__)
#define UNWIND_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define UNWIND_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

/* What the helper never does: it reads files and its stdin, and writes its stdout. */
static int install_seccomp(void) {
#ifdef UNWIND_AUDIT_ARCH
        struct sock_filter code[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UNWIND_AUDIT_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
                /* x32 system calls share the architecture: refused whole. */
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
                DENY(__NR_socket), DENY(__NR_socketpair), DENY(__NR_connect), DENY(__NR_bind),
                DENY(__NR_listen), DENY(__NR_accept4), DENY(__NR_ptrace), DENY(__NR_process_vm_readv),
                DENY(__NR_process_vm_writev), DENY(__NR_execve), DENY(__NR_execveat), DENY(__NR_mount),
                DENY(__NR_umount2), DENY(__NR_unshare), DENY(__NR_setns), DENY(__NR_bpf),
                DENY(__NR_perf_event_open), DENY(__NR_keyctl), DENY(__NR_add_key), DENY(__NR_request_key),
                DENY(__NR_io_uring_setup), DENY(__NR_userfaultfd), DENY(__NR_kcmp), DENY(__NR_pidfd_getfd),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(code), .filter = code };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
#endif
        return 0;
}

static int limit(int resource, rlim_t value) {
        struct rlimit rl = { value, value };

        return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#  define UNWIND_SANITIZER 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define UNWIND_SANITIZER 1
#  endif
#endif

/* The address space limit, which the address and thread sanitizers' runtimes cannot live
 * under: they reserve shadow regions of terabytes. A sanitizer build (a test build only)
 * leaves the memory to the other limits and the unwinder's own cap. */
static int limit_address_space(rlim_t memory) {
#ifdef UNWIND_SANITIZER
        (void) memory;
        return 0;
#else
        return limit(RLIMIT_AS, memory);
#endif
}

static int confine(uint64_t max_memory_kb) {
        rlim_t memory = (max_memory_kb ? max_memory_kb * 1024 : UNWIND_DEFAULT_MEMORY) + UNWIND_BASE_MEMORY;
        int r;

        if ((r = limit_address_space(memory)) < 0 || (r = limit(RLIMIT_NOFILE, 256)) < 0 ||
            (r = limit(RLIMIT_CORE, 0)) < 0 || (r = limit(RLIMIT_NPROC, 0)) < 0)
                return r;
        return install_seccomp();
}

static int parse_args(int argc, char **argv, uint64_t *max_memory_kb, const char **debug_dirs) {
        for (int i = 1; i < argc; i++) {
                char *end;

                if (strncmp(argv[i], "--max-memory-kb=", 16) == 0) {
                        errno = 0;
                        *max_memory_kb = strtoull(argv[i] + 16, &end, 10);
                        if (errno != 0 || *end || end == argv[i] + 16 || *max_memory_kb > (UINT64_C(1) << 32))
                                return -EINVAL;
                } else if (strncmp(argv[i], "--debug-dirs=", 13) == 0)
                        *debug_dirs = argv[i] + 13;
                else
                        return -EINVAL;
        }
        return 0;
}

static int serve(UnwindServer *server) {
        UnwindBuffer in = {}, out = {};
        int r;

        for (;;) {
                UnwindRequest req;

                r = unwind_read_message(STDIN_FILENO, UNWIND_MAGIC_REQUEST, UNWIND_MAX_REQUEST, UINT64_MAX, &in);
                if (r == -EPIPE) {
                        r = 0;  /* the sampler is done */
                        break;
                }
                if (r >= 0)
                        r = unwind_request_decode(in.data, in.len, &req);
                if (r >= 0)
                        r = unwind_server_answer(server, &req, &out);
                if (r >= 0)
                        r = loop_write(STDOUT_FILENO, out.data, out.len);
                if (r < 0)
                        break;
        }
        unwind_buffer_done(&in);
        unwind_buffer_done(&out);
        return r;
}

int main(int argc, char **argv) {
        UnwindServer *server = NULL;
        uint64_t max_memory_kb = 0;
        const char *debug_dirs = NULL;
        int r;

        r = parse_args(argc, argv, &max_memory_kb, &debug_dirs);
        if (r < 0) {
                fprintf(stderr, "usage: tracebus-unwind [--max-memory-kb=KB] [--debug-dirs=DIR[:DIR...]]\n");
                return 2;
        }
        r = confine(max_memory_kb);
        if (r < 0) {
                fprintf(stderr, "tracebus-unwind: confining itself failed: %s\n", strerror(-r));
                return 1;
        }
        r = unwind_server_new(max_memory_kb, debug_dirs, &server);
        if (r >= 0)
                r = serve(server);
        unwind_server_free(server);
        if (r < 0) {
                fprintf(stderr, "tracebus-unwind: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
