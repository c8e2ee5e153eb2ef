/*
 * Preloaded into every command of a gVisor box (LD_PRELOAD) under a runsc with gVisor issue
 * #11049: the Sentry answers lgetxattr(2) on a symbolic link with EBADF (it asks the gofer for
 * the attribute through an O_PATH descriptor, which fgetxattr refuses). `ls -l` asks for
 * security.selinux of every entry, so each symlink it lists prints "Bad file descriptor". A
 * path-based lgetxattr has no descriptor a caller could have got wrong, so EBADF can only be
 * that bug: it becomes ENODATA, the answer for a link without the attribute. Nothing else is
 * changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size)
{
    ssize_t r = (ssize_t)syscall(SYS_lgetxattr, path, name, value, size);
    if (r == -1 && errno == EBADF)
        errno = ENODATA;
    return r;
}
