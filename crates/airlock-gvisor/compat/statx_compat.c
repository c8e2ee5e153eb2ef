/*
 * Preloaded into every command of a gVisor box (LD_PRELOAD): clears AT_NO_AUTOMOUNT from
 * statx(2) and fstatat(2) before the system call. Older runsc releases (Debian's 2022 one among
 * them) answer EINVAL to that flag in both calls, which breaks `ls -l`, `stat` and anything
 * else built on gnulib (coreutils pass it on every stat). The flag only matters where automount
 * points exist, and the Sentry has none: dropping it changes nothing else. Answering ENOSYS
 * instead would not help: glibc then emulates statx with fstatat, passing the same flag on.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask,
          struct statx *restrict buf)
{
    return (int)syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}

int fstatat(int dirfd, const char *restrict path, struct stat *restrict buf, int flags)
{
    return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}

int fstatat64(int dirfd, const char *restrict path, struct stat64 *restrict buf, int flags)
{
    return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}
