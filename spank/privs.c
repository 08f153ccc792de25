/*
 * privs.c - drop every privilege and check (see privs.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privs.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* Capability numbers fit in the two 32-bit words of version 3. */
#define MAX_CAP 63

static int capget3(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	return (int)syscall(SYS_capget, &h, d);
}

static int capset_none(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	return (int)syscall(SYS_capset, &h, d);
}

/* The three sets, each as one 64-bit mask. */
struct capsets {
	uint64_t eff, prm, inh;
};

static int capget_sets(struct capsets *s)
{
	struct __user_cap_data_struct d[2];

	if (capget3(d) != 0)
		return -1;
	s->eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	s->prm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	s->inh = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
	return 0;
}

static int capset_sets(const struct capsets *s)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	d[0].effective = (uint32_t)s->eff;
	d[1].effective = (uint32_t)(s->eff >> 32);
	d[0].permitted = (uint32_t)s->prm;
	d[1].permitted = (uint32_t)(s->prm >> 32);
	d[0].inheritable = (uint32_t)s->inh;
	d[1].inheritable = (uint32_t)(s->inh >> 32);
	return (int)syscall(SYS_capset, &h, d);
}

/* Empties the bounding set. Returns 0, or -1 with errno set when a
 * capability could not be dropped (EPERM without CAP_SETPCAP). */
static int empty_bounding(void)
{
	int cap, rc = 0, e = 0;

	for (cap = 0; cap <= MAX_CAP; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			break; /* past the kernel's last capability */
		if (in == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && !rc) {
			rc = -1;
			e = errno;
		}
	}
	if (rc)
		errno = e;
	return rc;
}

/* Clears PR_SET_KEEPCAPS and every securebit whose lock is not set. */
static void clear_securebits(void)
{
	static const int pairs[][2] = {
		{ SECBIT_NOROOT, SECBIT_NOROOT_LOCKED },
		{ SECBIT_NO_SETUID_FIXUP, SECBIT_NO_SETUID_FIXUP_LOCKED },
		{ SECBIT_KEEP_CAPS, SECBIT_KEEP_CAPS_LOCKED },
#ifdef SECBIT_NO_CAP_AMBIENT_RAISE
		{ SECBIT_NO_CAP_AMBIENT_RAISE, SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED },
#endif
	};
	int cur = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), keep = 0;
	size_t i;

	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	if (cur <= 0)
		return;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (cur & pairs[i][1])
			keep |= cur & (pairs[i][0] | pairs[i][1]);
	if (keep != cur)
		prctl(PR_SET_SECUREBITS, keep, 0, 0, 0);
}

static int cmp_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;

	return x < y ? -1 : x > y;
}

/* Are the process's supplementary groups exactly want (as a set)? */
static int groups_are(const gid_t *want, size_t n)
{
	gid_t *have, *sorted;
	int got, same = 0;

	got = getgroups(0, NULL);
	if (got < 0 || (size_t)got != n)
		return 0;
	have = calloc(n + 1, sizeof(gid_t));
	sorted = calloc(n + 1, sizeof(gid_t));
	if (have && sorted && getgroups((int)n, have) == (int)n) {
		memcpy(sorted, want, n * sizeof(gid_t));
		qsort(have, n, sizeof(gid_t), cmp_gid);
		qsort(sorted, n, sizeof(gid_t), cmp_gid);
		same = !memcmp(have, sorted, n * sizeof(gid_t));
	}
	free(have);
	free(sorted);
	return same;
}

static int ids_are(const struct so_creds *c)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	return getresuid(&ru, &eu, &su) == 0 && getresgid(&rg, &eg, &sg) == 0 &&
	       ru == c->uid && eu == c->uid && su == c->uid && rg == c->gid &&
	       eg == c->gid && sg == c->gid;
}

static int set_ids(const struct so_creds *c, char *err, size_t len)
{
	const gid_t *groups = c->groups;
	size_t n = c->ngroups;

	if (!groups || !n) {
		groups = &c->gid;
		n = 1;
	}
	/* A caller that already is the job's user (a non-root slurmstepd)
	 * cannot and need not change anything. */
	if (ids_are(c) && groups_are(groups, n))
		return 0;
	if (setgroups(n, groups) != 0 || setresgid(c->gid, c->gid, c->gid) != 0 ||
	    setresuid(c->uid, c->uid, c->uid) != 0) {
		snprintf(err, len, "cannot become uid %u gid %u: %s",
			 (unsigned)c->uid, (unsigned)c->gid, strerror(errno));
		return -1;
	}
	if (!ids_are(c) || !groups_are(groups, n)) {
		snprintf(err, len, "still not uid %u gid %u with the job's "
			 "groups after setresuid", (unsigned)c->uid,
			 (unsigned)c->gid);
		return -1;
	}
	return 0;
}

/* Is any capability left in the set: PR_CAPBSET_READ for the bounding
 * set, PR_CAP_AMBIENT for the ambient one? */
static int any_in(int set)
{
	int cap;

	for (cap = 0; cap <= MAX_CAP; cap++) {
		int r = set == PR_CAPBSET_READ
				? prctl(PR_CAPBSET_READ, cap, 0, 0, 0)
				: prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);

		if (r < 0)
			break; /* past the last capability, or no ambient set */
		if (r == 1)
			return 1;
	}
	return 0;
}

#define CAPBIT(c) ((uint64_t)1 << (c))

int so_privs_narrow(const struct so_creds *c, char *err, size_t len)
{
	struct capsets had, now, keep = { 0, 0, 0 };
	int setpcap;

	if (c->change_ids) {
		/* setgroups, setresgid from root's gid. */
		keep.prm = CAPBIT(CAP_SETGID);
		/* setresuid needs none to a uid that is already the real
		 * one (so_helper_start lends it), nor does the effective
		 * uid's round trip to a user-made cgroup (cgroup.c). */
		if (getuid() != c->uid)
			keep.prm |= CAPBIT(CAP_SETUID);
	}
	if (capget_sets(&had) != 0) {
		snprintf(err, len, "cannot read its capabilities: %s",
			 strerror(errno));
		return -1;
	}
	keep.prm &= had.prm; /* a caller without them cannot gain them */
	keep.eff = keep.prm;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	setpcap = (had.prm & CAPBIT(CAP_SETPCAP)) != 0;
	if (setpcap) {
		/* CAP_SETPCAP for these two, then it goes too. */
		struct capsets mid = { keep.eff | CAPBIT(CAP_SETPCAP),
				       keep.prm | CAPBIT(CAP_SETPCAP), 0 };

		if (capset_sets(&mid) != 0) {
			snprintf(err, len, "cannot narrow its capability sets: %s",
				 strerror(errno));
			return -1;
		}
		if (empty_bounding() != 0) {
			snprintf(err, len, "cannot empty its capability bounding "
				 "set: %s", strerror(errno));
			return -1;
		}
		clear_securebits();
	}
	if (capset_sets(&keep) != 0) {
		snprintf(err, len, "cannot narrow its capability sets: %s",
			 strerror(errno));
		return -1;
	}
	if (capget_sets(&now) != 0 || now.eff != keep.eff ||
	    now.prm != keep.prm || now.inh != 0 || any_in(PR_CAP_AMBIENT) ||
	    (setpcap && any_in(PR_CAPBSET_READ))) {
		snprintf(err, len, "still has capabilities it does not need "
			 "after narrowing them");
		return -1;
	}
	return 0;
}

/* What is left, or NULL when nothing is. */
static const char *leftover(void)
{
	struct __user_cap_data_struct d[2];

	if (capget3(d) != 0)
		return "capget failed";
	if (d[0].effective || d[1].effective)
		return "effective capabilities";
	if (d[0].permitted || d[1].permitted)
		return "permitted capabilities";
	if (d[0].inheritable || d[1].inheritable)
		return "inheritable capabilities";
	if (any_in(PR_CAP_AMBIENT))
		return "ambient capabilities";
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return "no_new_privs not set";
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		return "dumpable";
	return NULL;
}

int so_privs_drop(const struct so_creds *c, int *bounding_kept, char *err,
		  size_t len)
{
	const char *left;

	/* While root's capabilities still allow it. */
	*bounding_kept = empty_bounding() != 0;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	clear_securebits();
	if (c->change_ids && set_ids(c, err, len) != 0)
		return -1;
	if (capset_none() != 0) {
		snprintf(err, len, "cannot empty its capability sets: %s",
			 strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		snprintf(err, len, "cannot set no_new_privs: %s", strerror(errno));
		return -1;
	}
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if ((left = leftover())) {
		snprintf(err, len, "still has %s after dropping privileges", left);
		return -1;
	}
	return 0;
}
