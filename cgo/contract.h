/*
 * contract.h - the whole contract between the shim and the Go library:
 * the library's C interface, its return codes and log lines, and the
 * limits both sides apply. Every copy of them is this file or generated
 * from it.
 *
 * One file for both languages: cgo/main.go includes it, and because it
 * declares the exports below, a Go export whose signature differs fails
 * to compile. The shim, the test libraries and the package tests include
 * or read it; taskenv/contract_gen.go holds the numbers for the
 * command, which is built without cgo (go generate ./taskenv).
 * It lives here, in the library's package directory, because the go
 * command's build cache only sees headers there: a change to a header
 * elsewhere would leave a cached library with the old numbers.
 */
#ifndef SPANK_OTEL_CONTRACT_H
#define SPANK_OTEL_CONTRACT_H

#include <stdint.h>

/* What spank_otel_abi() returns. It changes whenever the C signature of an
 * export or the layout of struct so_task_request changes; the helper
 * refuses a library that reports another. */
#define SO_ABI_VERSION 5

/* What spank_otel_task_env returns. */
#define SO_RC_ERROR (-1) /* the library failed: leave the variable */
#define SO_RC_LEAVE 0    /* nothing to change: leave the variable */
#define SO_RC_SET 1      /* set it to the value returned */
#define SO_RC_UNSET 2    /* remove it */

/* The library's log is lines of "<letter> <text>\n", the letter saying
 * where the shim sends the line. */
#define SO_LINE_ERROR 'E'   /* error: the user must know */
#define SO_LINE_INFO 'I'    /* info: what a repair dropped */
#define SO_LINE_VERBOSE 'V' /* verbose: details */
#define SO_LINE_DEBUG 'D'   /* debug */

/* The kernel refuses one argument or environment string of this many bytes
 * or more, its NUL included (MAX_ARG_STRLEN), and so does Slurm's own
 * setenvf, which spank_setenv uses without reporting the failure. So
 * "OTEL_RESOURCE_ATTRIBUTES=value" with its NUL must be under it. Both
 * sides apply it: the library to what it returns, the shim to what it
 * sets. */
#define SO_MAX_ENTRY 131072L

/*
 * The execve budget: the bytes the environment of a task may take. The
 * library computes it from the request (stack_limit, argv_count,
 * argv_bytes). The kernel (fs/exec.c) takes argument and environment
 * strings up to a quarter of the stack limit, at least SO_ARG_FLOOR
 * (ARG_MAX, 32 pages) and at most SO_ARG_CEILING (3/4 of its 8 MiB
 * _STK_LIM). The budget is that minus the argument strings with their
 * NULs, one pointer per argument (at least one), and SO_EXEC_SLACK; never
 * less than 1. The environment fits when the sum of strlen(entry) + 1 +
 * sizeof(char *) over its entries is at most the budget.
 */
#define SO_ARG_FLOOR 131072L
#define SO_ARG_CEILING 6291456L

/* Room kept free in the budget for what Slurm still adds after task_init:
 * the resolved program path (the kernel counts it), TMPDIR, and variables
 * a TaskProlog prints. */
#define SO_EXEC_SLACK 8192L

/* Flags of a request. */
#define SO_REQ_STEP 0x1u /* step_id holds the task's step (S_JOB_STEPID) */
#define SO_REQ_RANK 0x2u /* also write the nv.dl rank keys (rank=on) */
#define SO_REQ_DEVICES 0x4u /* devices_asked/devices_usable hold the task's own answers */

/* The largest id of a regular job step; above it are Slurm's special
 * steps (batch 0xfffffffb, interactive 0xfffffffa, extern 0xfffffffc),
 * which are job contexts. */
#define SO_MAX_REGULAR_STEP 0xfffffff0u

/* One task's question to the library. The shim fills it in the task child
 * (the scalars travel to the helper inside the wire request, the helper
 * sets the pointers); the library only reads it. */
struct so_task_request {
	char **envp;         /* the task's environment, NULL-terminated */
	const char *exclude; /* comma-separated keys never written, or NULL */
	uint32_t flags;      /* SO_REQ_* */
	uint32_t step_id;    /* with SO_REQ_STEP: the task's step */
	/* The budget's inputs: the RLIMIT_STACK soft limit the task's
	 * execve will run under (UINT64_MAX for none; 0 for unknown, which
	 * skips the total check), and its arguments: how many, and their
	 * bytes with NULs. */
	uint64_t stack_limit;
	uint64_t argv_count;
	uint64_t argv_bytes;
	/* When above 0, the budget itself (plugstack max_env=), replacing
	 * the one computed from the inputs. */
	int64_t max_env_bytes;
	/* The node's files as the step parent read them (SO_NODE_*, below),
	 * or NULL: the library reads the node itself (within the helper's
	 * deadline). */
	const char *node_files;
	uint64_t node_files_len;
	/* The task's own answers to "may I read and write /dev/nvidia<N>?"
	 * for N below 256, asked in C in task_init (faccessat with the task's
	 * real ids, so its device cgroup decides, v1 list or v2 BPF program):
	 * bit N of devices_asked says it asked, bit N of devices_usable the
	 * answer (word N / 64, bit N % 64). With SO_REQ_DEVICES the library
	 * takes these and never asks the kernel itself: a helper that is not
	 * in the task's cgroups would get its own answer. */
	uint64_t devices_asked[4];
	uint64_t devices_usable[4];
};

/*
 * The node's files the library's GPU search reads (the driver's GPU
 * directory and files, the device nodes, gres.conf, cgroup.conf,
 * fake_gpus.conf), read once per step by the step parent, as the job's
 * user, inherited by every task child and sent with its request to the
 * step's helper: the library then makes no system call for them. A sequence of records, each
 *
 *   kind (1 byte) | absolute name, NUL-terminated | length (uint32, native
 *   byte order, unaligned) | length bytes of data
 *
 * A name without a record is read from the node; so is one whose record
 * does not answer the question asked (a directory's contents, say, of a
 * name recorded as a file).
 */
#define SO_NODE_FILE 'f'    /* a regular file: its contents */
#define SO_NODE_DIR 'd'     /* a directory: its entries' names, each NUL-terminated, no "." or ".." */
#define SO_NODE_CHARDEV 'c' /* a character device (stat, never opened): uint32 major, uint32 minor */
#define SO_NODE_OTHER 'o'   /* exists and is no character device (stat only): no data */
#define SO_NODE_ABSENT 'n'  /* does not exist (ENOENT, ENOTDIR): no data */
/* The step parent's reading did not finish within the plugin's deadline
 * (a wedged GPU driver, a hung file system): the name is the file it was
 * reading, no data, and it is the only record. The library reads nothing
 * of the node for such a step: its GPU search fails, naming the file. */
#define SO_NODE_STALLED 's'
/* The most the records of one step may take; more and there are none. */
#define SO_NODE_FILES_MAX (256L << 10)

/* The exports. The library sets *value (with SO_RC_SET) and *log (lines as
 * above, or NULL) to strings the caller frees. */
typedef int so_abi_fn(void);
typedef int so_task_env_fn(struct so_task_request *req, char **value,
			   char **log);
/* Optional: frees what earlier calls left. A helper that answers many
 * tasks (the step's) calls it between requests, off every task's path. */
typedef void so_collect_fn(void);

so_abi_fn spank_otel_abi;
so_task_env_fn spank_otel_task_env;
so_collect_fn spank_otel_collect;

#endif
