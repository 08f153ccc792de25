/*
 * devices.c - the task asks which GPUs it may use (devices.h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../cgo/contract.h"
#include "devices.h"

#define PREFIX "/dev/nvidia"

/* The N of "/dev/nvidia<N>" for N below 256 written without leading
 * zeros, or -1: the names the GPU search asks about. */
static int minor_of(const char *name)
{
	const char *p = name + sizeof(PREFIX) - 1;
	int n = 0;

	if (strncmp(name, PREFIX, sizeof(PREFIX) - 1) || !*p ||
	    (p[0] == '0' && p[1]))
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (*p - '0');
		if (n > 255)
			return -1;
	}
	return n;
}

int so_devices_ask(const char *records, size_t len, int dev_dir,
		   uint64_t asked[4], uint64_t usable[4])
{
	size_t at = 0;
	int count = 0;

	memset(asked, 0, 4 * sizeof(uint64_t));
	memset(usable, 0, 4 * sizeof(uint64_t));
	/* kind | name NUL | length (uint32, native, unaligned) | data */
	while (records && at < len) {
		char kind = records[at];
		const char *name = records + at + 1;
		size_t name_len = strnlen(name, len - at - 1);
		uint32_t data_len;
		char rel[32];
		int n;

		if (at + 1 + name_len + 1 + sizeof(data_len) > len)
			break;
		memcpy(&data_len, name + name_len + 1, sizeof(data_len));
		at += 1 + name_len + 1 + sizeof(data_len) + data_len;
		if (kind != SO_NODE_CHARDEV || (n = minor_of(name)) < 0 ||
		    (asked[n / 64] >> (n % 64) & 1))
			continue;
		snprintf(rel, sizeof(rel), "nvidia%d", n);
		asked[n / 64] |= 1ULL << (n % 64);
		if (faccessat(dev_dir, rel, R_OK | W_OK, 0) == 0)
			usable[n / 64] |= 1ULL << (n % 64);
		count++;
	}
	return count;
}
