/*
 * guard.c - save and restore signal dispositions, mask and alternate stack.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"

/* The C library sets SA_RESTORER on every handler it installs; it is not
 * part of what a program sees as the disposition. */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

static int catchable(int sig)
{
	return sig != SIGKILL && sig != SIGSTOP;
}

void so_sigstate_save(struct so_sigstate *s)
{
	int sig;

	memset(s, 0, sizeof(*s));
	for (sig = 1; sig < _NSIG; sig++) {
		if (!catchable(sig))
			continue;
		/* glibc refuses the signals it keeps for threads (32, 33). */
		if (sigaction(sig, NULL, &s->act[sig]) == 0)
			s->saved[sig] = 1;
	}
	s->have_mask = pthread_sigmask(SIG_SETMASK, NULL, &s->mask) == 0;
	s->have_altstack = sigaltstack(NULL, &s->altstack) == 0;
}

static int same_altstack(const stack_t *a, const stack_t *b)
{
	if ((a->ss_flags & SS_DISABLE) && (b->ss_flags & SS_DISABLE))
		return 1;
	return a->ss_sp == b->ss_sp && a->ss_size == b->ss_size &&
	       (a->ss_flags & SS_DISABLE) == (b->ss_flags & SS_DISABLE);
}

static const void *handler_of(const struct sigaction *a)
{
	if (a->sa_flags & SA_SIGINFO)
		return (const void *)a->sa_sigaction;
	return (const void *)a->sa_handler;
}

static void describe_handler(const struct sigaction *a, char *buf, size_t len)
{
	if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL)
		snprintf(buf, len, "SIG_DFL");
	else if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN)
		snprintf(buf, len, "SIG_IGN");
	else
		snprintf(buf, len, "handler %p", handler_of(a));
}

static int same_set(const sigset_t *a, const sigset_t *b)
{
	int sig;

	for (sig = 1; sig < _NSIG; sig++)
		if (sigismember(a, sig) != sigismember(b, sig))
			return 0;
	return 1;
}

static int same_action(const struct sigaction *a, const struct sigaction *b)
{
	return handler_of(a) == handler_of(b) &&
	       (a->sa_flags & ~SA_RESTORER) == (b->sa_flags & ~SA_RESTORER) &&
	       same_set(&a->sa_mask, &b->sa_mask);
}

int so_sigstate_restore(const struct so_sigstate *s)
{
	int sig, failed = 0;

	for (sig = 1; sig < _NSIG; sig++) {
		struct sigaction now;

		if (!s->saved[sig])
			continue;
		/* Rewrite only what changed: an untouched entry stays
		 * bit-for-bit as it was. */
		if (sigaction(sig, NULL, &now) == 0 &&
		    same_action(&now, &s->act[sig]))
			continue;
		if (sigaction(sig, &s->act[sig], NULL) != 0)
			failed++;
	}
	if (s->have_mask && pthread_sigmask(SIG_SETMASK, &s->mask, NULL) != 0)
		failed++;
	if (s->have_altstack) {
		stack_t now;

		if (sigaltstack(NULL, &now) == 0 &&
		    !same_altstack(&now, &s->altstack)) {
			stack_t want = s->altstack;

			/* SS_ONSTACK is a read-only status bit. */
			want.ss_flags &= SS_DISABLE;
			if (want.ss_flags & SS_DISABLE) {
				want.ss_sp = NULL;
				want.ss_size = 0;
			}
			if (sigaltstack(&want, NULL) != 0)
				failed++;
		}
	}
	return failed;
}

static void append(char *diff, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void append(char *diff, size_t len, const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (!diff || !len)
		return;
	used = strlen(diff);
	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(diff + used, len - used, fmt, ap);
	va_end(ap);
}

int so_sigstate_diff(const struct so_sigstate *a, const struct so_sigstate *b,
		     char *diff, size_t len)
{
	int sig, n = 0;
	char x[64], y[64];

	if (diff && len)
		diff[0] = '\0';
	for (sig = 1; sig < _NSIG; sig++) {
		const struct sigaction *p = &a->act[sig], *q = &b->act[sig];

		if (a->saved[sig] != b->saved[sig]) {
			n++;
			continue;
		}
		if (!a->saved[sig])
			continue;
		if (handler_of(p) != handler_of(q) ||
		    (p->sa_flags & SA_SIGINFO) != (q->sa_flags & SA_SIGINFO)) {
			describe_handler(p, x, sizeof(x));
			describe_handler(q, y, sizeof(y));
			append(diff, len, "signal %d: %s -> %s; ", sig, x, y);
			n++;
		} else if (!same_action(p, q)) {
			append(diff, len, "signal %d: flags or mask; ", sig);
			n++;
		}
	}
	if (a->have_mask != b->have_mask ||
	    (a->have_mask && !same_set(&a->mask, &b->mask))) {
		append(diff, len, "thread signal mask changed; ");
		n++;
	}
	if (a->have_altstack != b->have_altstack ||
	    (a->have_altstack && !same_altstack(&a->altstack, &b->altstack))) {
		append(diff, len, "alternate signal stack changed; ");
		n++;
	}
	return n;
}
