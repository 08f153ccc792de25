/*
 * nodefiles.h - record the node's files the library's GPU search reads,
 * once per step, within a deadline.
 *
 * The step parent records them in slurm_spank_user_init, where slurmstepd
 * has already taken the job user's effective uid, for a step that has
 * GPUs on the node: with the rights the helper reads them with, and in
 * slurmstepd's own mount namespace, which no user controls. Every task
 * child inherits the records and sends them with its request to the
 * step's helper, which hands them to the library (contract.h's
 * SO_NODE_*): the helper then makes no system call for them. What the records do not answer the library reads from the
 * node, so a record left out costs time, never a result.
 *
 * A read of a driver's file enters the driver (NVIDIA's information file
 * asks the GPU's resource manager, which can wait on a lock or a GPU
 * falling off the bus), and one of a configuration file may wait on NFS:
 * such a read can block without end, and a process blocked in it cannot
 * be killed. So the step parent never reads them itself: a child process
 * does, and the step parent waits for it until the deadline only.
 */
#ifndef SPANK_OTEL_NODEFILES_H
#define SPANK_OTEL_NODEFILES_H

#include <stddef.h>
#include <sys/types.h>

/* The reading process's name (comm), as ps shows it. */
#define SO_NODE_READER_NAME "spank-otel-rd"

/* The records of one step. */
struct so_node_files {
	char *buf; /* NULL when there are none */
	size_t len;
	int no_gpu;        /* the node's NVIDIA driver lists no GPU, or is absent */
	pid_t left_behind; /* a recorder still blocked in the kernel, or 0 */
};

/* Records the files below root ("" for the node itself; a directory for
 * tests) for a node whose Slurm configuration file is slurm_conf (the
 * step parent's SLURM_CONF, which slurmd sets; NULL: no configuration
 * files recorded), in a child process with the caller's effective ids as
 * all of its ids, within timeout_ms. A node whose NVIDIA driver lists no
 * GPU, or that has none, gets the same records (the driver's directory
 * absent or empty) and nf->no_gpu: its tasks' searches end at them.
 *
 * Returns the number of records, or -1 with errno:
 *   E2BIG      more than SO_NODE_FILES_MAX bytes, nf empty;
 *   ETIMEDOUT  the child did not finish in time: nf holds one
 *              SO_NODE_STALLED record naming the file it was reading
 *              (so_node_files_stalled), and nf->left_behind the child
 *              when even SIGKILL did not end it (it ends when the
 *              kernel lets its read return);
 *   another    the child could not be started or failed, nf empty. */
int so_node_files_record(struct so_node_files *nf, const char *root,
			 const char *slurm_conf, int timeout_ms);

/* The file a stalled recording was reading, or NULL. */
const char *so_node_files_stalled(const struct so_node_files *nf);

/* Releases the records. */
void so_node_files_free(struct so_node_files *nf);

#endif
