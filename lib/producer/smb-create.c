/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "shm-abi.h"

int smb_create(size_t size, size_t page_size, Smb *ret, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        void *base;
        int r;

        assert(ret);
        assert(ret_fd);

        r = smb_check_geometry(size, page_size);
        if (r < 0)
                return r;
        fd = memfd_create("tracebus-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t) size) < 0)
                return -errno;
        /* The producer maps the same file: sealed, it can neither shrink it, which would
         * make our reads fault, nor grow it, nor lift the seals. */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
                return -errno;
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED)
                return -errno;
        r = smb_init(ret, base, size, page_size);
        if (r < 0) {
                (void) munmap(base, size);
                return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

void smb_unmap(Smb *smb) {
        if (!smb || !smb->base)
                return;
        (void) munmap(smb->base, smb->size);
        *smb = (Smb) {};
}
