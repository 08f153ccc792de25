/*
 * privs.h - the helper becomes a process of the job's user with no
 * privilege at all, and proves it before it loads anything.
 *
 * The helper is forked from the task child while that still runs as root
 * (slurmstepd's rights, and whatever an earlier plugin left: PR_SET_KEEPCAPS
 * or securebits that keep capabilities across setuid, ambient or
 * inheritable capabilities). At its start it keeps only the capabilities
 * its credential change needs (so_privs_narrow): placing itself needs
 * none, since with root's effective uid it owns root's cgroup files. Then
 * it drops everything, in this order:
 *
 *   1. as root: empties the capability bounding set and the ambient set,
 *      clears PR_SET_KEEPCAPS and every securebit that is not locked;
 *   2. takes the job's supplementary groups, gid and uid (real, effective
 *      and saved);
 *   3. empties the effective, permitted and inheritable sets, sets
 *      PR_SET_NO_NEW_PRIVS (no execve can gain anything back, not even
 *      root's) and makes itself not dumpable (the user cannot ptrace it);
 *   4. checks all of that with getresuid, getresgid, getgroups, capget,
 *      the ambient set, PR_GET_NO_NEW_PRIVS and PR_GET_DUMPABLE.
 *
 * A job of uid 0 gets a helper of uid 0 with every capability set empty:
 * it can still open root's files by their permission bits (as the job
 * itself can, and more), but holds no capability and cannot gain one.
 */
#ifndef SPANK_OTEL_PRIVS_H
#define SPANK_OTEL_PRIVS_H

#include <stddef.h>
#include <sys/types.h>

/* The credentials to take. change_ids 0 keeps the caller's uid, gid and
 * groups (the harness); capabilities are dropped either way. */
struct so_creds {
	int change_ids;
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* NULL/0: just gid */
	size_t ngroups;
};

/* At the helper's start, before it places itself: empties the bounding
 * and ambient sets, clears PR_SET_KEEPCAPS and the unlocked securebits
 * (while CAP_SETPCAP allows it; without it none of them can be changed, as
 * in so_privs_drop), and leaves in the effective and permitted sets only
 * CAP_SETGID, and CAP_SETUID when the real uid is not c->uid yet, when c
 * changes ids (none otherwise), the inheritable set empty. Returns 0 when
 * capget shows exactly that, or -1 with why in err: the caller must not go
 * on. */
int so_privs_narrow(const struct so_creds *c, char *err, size_t len);

/* Drops to c as above. Returns 0 when the result was verified, or -1
 * with why in err. *bounding_kept is set when the bounding set could not
 * be emptied (no CAP_SETPCAP: a non-root caller), which no_new_privs makes
 * harmless. */
int so_privs_drop(const struct so_creds *c, int *bounding_kept, char *err,
		  size_t len);

#endif
