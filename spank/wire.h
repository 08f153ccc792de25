/*
 * wire.h - the messages between the task child and the step's helper.
 *
 * Both ends are the same build of the same plugin (the step's helper is
 * installed with it), so the layout
 * is native; the magic numbers only catch a helper that died halfway
 * through an answer.
 *
 *   request  (task -> helper): struct so_wire_request, then env_bytes of
 *                              NUL-terminated "NAME=value" entries, then
 *                              exclude_bytes of the keys never written and
 *                              task.node_files_len bytes of the step's node
 *                              files.
 *   answer   (helper -> task): struct so_wire_answer, then value_len bytes
 *                              of value and log_len bytes of log.
 */
#ifndef SPANK_OTEL_WIRE_H
#define SPANK_OTEL_WIRE_H

#include <stdint.h>

#include "../cgo/contract.h"

#define SO_WIRE_REQUEST_MAGIC 0x534f5251u /* "SORQ" */
#define SO_WIRE_ANSWER_MAGIC 0x534f414eu  /* "SOAN" */

/* Bounds a confused or hostile peer cannot push past. A task environment
 * larger than execve() takes (6 MiB at most) is not sent at all. */
#define SO_WIRE_MAX_EXCLUDE (64u << 10)
#define SO_WIRE_MAX_ENV (8u << 20)
#define SO_WIRE_MAX_VALUE (1u << 20)
#define SO_WIRE_MAX_LOG (64u << 10)

struct so_wire_request {
	uint32_t magic;
	uint32_t env_count;
	uint64_t env_bytes;
	/* The helper ends itself this long after the request arrives, wherever
	 * it is then (placing itself, loading, in the library): the
	 * task has given up on it by then. */
	uint32_t deadline_ms;
	uint32_t exclude_bytes;
	/* The library's request: its scalars as the task filled them; its
	 * pointers are sent as NULL and set by the helper. */
	struct so_task_request task;
};

struct so_wire_answer {
	uint32_t magic;
	int32_t status;    /* enum so_status */
	int32_t rc;        /* spank_otel_task_env's return code */
	uint32_t has_value;
	uint32_t value_len;
	uint32_t log_len;
};

#endif
