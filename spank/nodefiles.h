/*
 * nodefiles.h - read the node's files the library's GPU search reads, once
 * per step.
 *
 * The step parent reads them in slurm_spank_user_init, where slurmstepd
 * has already taken the job user's effective uid: with the rights the
 * helper reads them with, and in slurmstepd's own mount namespace, which
 * no user controls. Every task child inherits the records, and so every
 * helper, which hands them to the library (contract.h's SO_NODE_*): a
 * task's helper then makes no system call for them. What the records do
 * not answer the library reads from the node, so a record left out costs
 * time, never a result.
 */
#ifndef SPANK_OTEL_NODEFILES_H
#define SPANK_OTEL_NODEFILES_H

#include <stddef.h>

/* The records of one step. */
struct so_node_files {
	char *buf; /* NULL when there are none */
	size_t len;
	size_t cap;
};

/* Reads the records below root ("" for the node itself; a directory for
 * tests) for a node whose Slurm configuration file is slurm_conf (the
 * step parent's SLURM_CONF, which slurmd sets; NULL: no configuration
 * files recorded). A node without the NVIDIA driver's GPU directory gets
 * none: it has no GPU to find. Returns the number of records, or -1 with
 * nf empty and errno set (no driver directory: ENOENT; more than
 * SO_NODE_FILES_MAX bytes: E2BIG). */
int so_node_files_read(struct so_node_files *nf, const char *root,
		       const char *slurm_conf);

/* Releases the records. */
void so_node_files_free(struct so_node_files *nf);

#endif
