/*
 * contract.c - checks the shim's side of the contract with the Go library
 * (cgo/contract.h) against its worked examples, cgo/testdata/contract.tsv,
 * which cgo/contract_test.go checks against the Go side.
 *
 *   spank-otel-contract-test FILE
 *
 * Prints one "ok - " or "FAIL - " line per example and exits 1 when any
 * failed, when a line cannot be read, or when a kind has no example.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../budget.h"

#define MAX_FIELDS 6

static int failed, passed;

static void result(int ok, int line, const char *what, const char *detail)
{
	if (ok)
		passed++;
	else
		failed++;
	printf("%s - line %d: %s%s%s\n", ok ? "ok" : "FAIL", line, what,
	       detail[0] ? ": " : "", detail);
}

/* Parses s as a whole base-10 number. */
static int number(const char *s, long long *out)
{
	char *end;

	if (!*s)
		return -1;
	*out = strtoll(s, &end, 10);
	return *end ? -1 : 0;
}

/* Checks one example; f[0] is its kind. Returns -1 for a line it cannot
 * read. */
static int check(int line, char **f, int n, const char *text)
{
	char detail[160] = "";
	long long a = 0;

	if (!strcmp(f[0], "entry") && n == 3 && !number(f[1], &a) &&
		   a >= 0 && (!strcmp(f[2], "fits") || !strcmp(f[2], "refused"))) {
		int fits = so_entry_fits((size_t)a);

		snprintf(detail, sizeof(detail), "so_entry_fits says %s",
			 fits ? "fits" : "refused");
		result(fits == !strcmp(f[2], "fits"), line, text, detail);
	} else {
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *kinds[] = { "entry" };
	int seen[1] = { 0 }, lineno = 0, bad = 0;
	char buf[512];
	size_t k;
	FILE *fp;

	if (argc != 2) {
		fprintf(stderr, "usage: %s cgo/testdata/contract.tsv\n", argv[0]);
		return 64;
	}
	if (!(fp = fopen(argv[1], "r"))) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(buf, sizeof(buf), fp)) {
		char text[512], *f[MAX_FIELDS], *save = NULL, *p;
		int n = 0;

		lineno++;
		buf[strcspn(buf, "\n")] = '\0';
		if (!buf[0] || buf[0] == '#')
			continue;
		snprintf(text, sizeof(text), "%s", buf);
		/* n counts every field; only the first MAX_FIELDS are kept,
		 * and no kind has that many. */
		for (p = strtok_r(buf, "\t", &save); p;
		     p = strtok_r(NULL, "\t", &save), n++)
			if (n < MAX_FIELDS)
				f[n] = p;
		for (k = 0; n && k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (!strcmp(f[0], kinds[k]))
				seen[k]++;
		for (p = text; (p = strchr(p, '\t'));)
			*p = ' ';
		if (!n || check(lineno, f, n, text) != 0) {
			printf("FAIL - line %d: cannot read \"%s\"\n", lineno, text);
			bad++;
		}
	}
	fclose(fp);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!seen[k]) {
			printf("FAIL - %s has no \"%s\" line\n", argv[1], kinds[k]);
			bad++;
		}
	printf("contract: %d passed, %d failed\n", passed, failed + bad);
	return failed || bad ? 1 : 0;
}
