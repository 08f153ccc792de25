/*
 * fds.h - descriptors and directories handled without allocation, for
 * processes that are raw clones of a multithreaded slurmstepd (where
 * malloc's lock may be held by a thread that does not exist there).
 */
#ifndef SPANK_OTEL_FDS_H
#define SPANK_OTEL_FDS_H

/* Calls fn(name, arg) for each entry of the directory open at dirfd, "."
 * and ".." included, until fn returns nonzero. Returns what fn returned,
 * 0 at the end, or -1 with errno when the directory cannot be read. */
int so_dir_each(int dirfd, int (*fn)(const char *name, void *arg), void *arg);

/* Closes every descriptor from first up. Returns 0, or -1 when it could
 * not make sure: neither close_range (Linux 5.9) nor /proc/self/fd
 * worked, and a process that may keep slurmstepd's sockets must not go
 * on. */
int so_close_from(int first);

/* The file behind fd as (st_dev, st_ino) into id; 0, 0 when fstat fails.
 * A descriptor kept across other plugins' callbacks is checked by it:
 * a number alone may since name another file. */
void so_fd_id(int fd, unsigned long long id[2]);

#endif
