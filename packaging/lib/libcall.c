/*
 * libcall.c - loads an installed libspankotel.so as the shim does (dlopen,
 * dlsym, the ABI check) and asks it for one task's attributes, through the
 * one copy of the interface, cgo/contract.h. The package tests build and
 * run it (testing.sh: lib_computes).
 *
 *   libcall LIBRARY NAME=VALUE...
 *
 * Prints "rc=N", "value=..." and "log=..." lines; exits 1 when the library
 * cannot be loaded or reports another ABI.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cgo/contract.h"

int main(int argc, char **argv)
{
	struct so_task_request req;
	so_abi_fn *abi;
	so_task_env_fn *fn;
	char *value = NULL, *log = NULL;
	void *h;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBRARY NAME=VALUE...\n", argv[0]);
		return 64;
	}
	if (!(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	abi = (so_abi_fn *)dlsym(h, "spank_otel_abi");
	fn = (so_task_env_fn *)dlsym(h, "spank_otel_task_env");
	if (!abi || !fn) {
		fprintf(stderr, "the library does not export the interface\n");
		return 1;
	}
	if ((rc = abi()) != SO_ABI_VERSION) {
		fprintf(stderr, "library ABI %d, contract.h has %d\n", rc,
			SO_ABI_VERSION);
		return 1;
	}
	memset(&req, 0, sizeof(req));
	req.envp = argv + 2; /* NULL-terminated, as argv is */
	rc = fn(&req, &value, &log);
	printf("rc=%d\nvalue=%s\nlog=%s\n", rc, value ? value : "",
	       log ? log : "");
	free(value);
	free(log);
	return 0;
}
