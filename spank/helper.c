/*
 * helper.c - the task child's side of the step's helper (see helper.h):
 * send the request on the task's own socket, read the answer within the
 * timeout.
 *
 * Nothing here changes the task process beyond the call: no threads, no
 * signal dispositions or mask, no pending signal, no limits. The socket is
 * used with MSG_NOSIGNAL, so a helper that died cannot raise SIGPIPE in the
 * task, and the buffers are mappings of their own, unmapped before
 * returning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "fds.h"
#include "fullio.h"
#include "helper.h"
#include "wire.h"

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* Requests are staged in a buffer of this size to send few, large
 * writes. */
#define STAGE_BYTES (64 * 1024)

/* What so_io_full waits with on the task's side: the socket or the
 * deadline (in us of the monotonic clock), whichever comes first. Returns
 * 1 when fd is ready, 0 at the deadline, -1 when poll fails. */
static int io_wait(void *ctx, int fd, short events)
{
	long long deadline = *(const long long *)ctx;

	for (;;) {
		struct pollfd p = { fd, events, 0 };
		long long left = (deadline - so_monotonic_us() + 999) / 1000;
		int n;

		if (deadline <= so_monotonic_us())
			return 0;
		n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (p.revents)
			return 1;
	}
}

/* Sends all of buf. Returns 0, -1 when the helper is gone (or answered
 * early and closed), -2 at the deadline. */
static int send_full(int sock, const void *buf, size_t len, long long deadline)
{
	return so_io_full(sock, SO_IO_SEND, (void *)buf, len, io_wait, &deadline);
}

/* Receives exactly len bytes: 0, -1 at end of file or on an error, -2 at
 * the deadline. */
static int recv_full(int sock, void *buf, size_t len, long long deadline)
{
	return so_io_full(sock, SO_IO_RECV, buf, len, io_wait, &deadline);
}

/* Sends the request: a header, then every entry with its NUL, then the
 * keys never written and the step's node files. Returns as send_full, or
 * -3 when the environment is too large to be a real one. */
static int send_request(int sock, const struct so_task_request *req,
			uint32_t helper_ms, long long deadline)
{
	struct so_wire_request rq;
	size_t count = 0, bytes = 0, used = 0, exclude_len = 0, node_len = 0;
	char **envp = req->envp, **p, *stage;
	int rc = 0;

	for (p = envp; p && *p; p++) {
		count++;
		bytes += strlen(*p) + 1;
	}
	if (bytes > SO_WIRE_MAX_ENV)
		return -3;
	exclude_len = req->exclude ? strlen(req->exclude) : 0;
	node_len = req->node_files ? (size_t)req->node_files_len : 0;
	if (exclude_len > SO_WIRE_MAX_EXCLUDE)
		exclude_len = 0; /* no admin writes 64 KiB of keys */
	if (node_len > (size_t)SO_NODE_FILES_MAX)
		node_len = 0;
	memset(&rq, 0, sizeof(rq));
	rq.magic = SO_WIRE_REQUEST_MAGIC;
	rq.env_count = (uint32_t)count;
	rq.env_bytes = bytes;
	rq.deadline_ms = helper_ms;
	rq.exclude_bytes = (uint32_t)exclude_len;
	rq.task = *req;
	rq.task.envp = NULL;
	rq.task.exclude = NULL;
	rq.task.node_files = NULL;
	rq.task.node_files_len = node_len;

	stage = mmap(NULL, STAGE_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stage == MAP_FAILED) {
		/* Unbuffered: one write per entry. */
		rc = send_full(sock, &rq, sizeof(rq), deadline);
		for (p = envp; rc == 0 && p && *p; p++)
			rc = send_full(sock, *p, strlen(*p) + 1, deadline);
	} else {
		memcpy(stage, &rq, sizeof(rq));
		used = sizeof(rq);
		for (p = envp; rc == 0 && p && *p; p++) {
			size_t len = strlen(*p) + 1;

			if (used + len > STAGE_BYTES) {
				rc = send_full(sock, stage, used, deadline);
				used = 0;
			}
			if (rc != 0)
				break;
			if (len > STAGE_BYTES) {
				rc = send_full(sock, *p, len, deadline);
				continue;
			}
			memcpy(stage + used, *p, len);
			used += len;
		}
		if (rc == 0 && used > 0)
			rc = send_full(sock, stage, used, deadline);
		munmap(stage, STAGE_BYTES);
	}
	if (rc == 0 && exclude_len)
		rc = send_full(sock, req->exclude, exclude_len, deadline);
	if (rc == 0 && node_len)
		rc = send_full(sock, req->node_files, node_len, deadline);
	return rc;
}

/* Where an answer broke the protocol. */
struct fault {
	size_t at;
	unsigned char byte;
};

/* The first control character of a value, which the canonical format
 * never has (it percent-encodes everything but A-Z a-z 0-9 - . _ ~): a
 * NUL would cut the value short, a newline would reach the environment and
 * split the log line. Returns 1 and where, or 0. */
static int control_char(const char *v, size_t len, struct fault *f)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f) {
			f->at = i;
			f->byte = c;
			return 1;
		}
	}
	return 0;
}

/* Reads the answer into one mapping. */
static enum so_status read_answer(int sock, struct so_result *res,
				  long long deadline, struct fault *f)
{
	struct so_wire_answer a;
	char *map;
	size_t len;
	int r;

	r = recv_full(sock, &a, sizeof(a), deadline);
	if (r != 0)
		return r == -2 ? SO_TIMEOUT : SO_HELPER_DIED;
	if (a.magic != SO_WIRE_ANSWER_MAGIC || a.value_len > SO_WIRE_MAX_VALUE ||
	    a.log_len > SO_WIRE_MAX_LOG || a.status < SO_CALLED ||
	    a.status > SO_HELPER_DIED || (!a.has_value && a.value_len))
		return SO_HELPER_DIED;
	len = (size_t)a.value_len + 1 + a.log_len + 1;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return SO_HELPER_FAILED;
	res->map = map;
	res->map_len = len;
	r = recv_full(sock, map, a.value_len, deadline);
	if (r == 0)
		r = recv_full(sock, map + a.value_len + 1, a.log_len, deadline);
	if (r != 0)
		return r == -2 ? SO_TIMEOUT : SO_HELPER_DIED;
	map[a.value_len] = '\0';
	map[a.value_len + 1 + a.log_len] = '\0';
	if (control_char(map, a.value_len, f))
		return SO_BAD_ANSWER;
	so_sanitize_text(map + a.value_len + 1, a.log_len);
	res->rc = a.rc;
	res->value = a.has_value ? map : NULL;
	res->value_len = a.value_len;
	res->log = a.log_len ? map + a.value_len + 1 : NULL;
	return (enum so_status)a.status;
}

void so_emit_stderr(const char *text, int truncated, const struct so_logger *lg)
{
	const char *p = text;

	while (*p) {
		const char *end = strchr(p, '\n');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if (n > 0)
			so_logf(lg, SO_LOG_DEBUG, "helper stderr: %.*s", n, p);
		p = end ? end + 1 : p + n;
	}
	if (truncated)
		so_logf(lg, SO_LOG_DEBUG, "helper stderr: (more not shown)");
}

enum so_status so_step_helper_call(struct so_step_end *end,
				   const struct so_task_request *req,
				   int timeout_ms, struct so_result *res,
				   const struct so_logger *lg)
{
	int sock = end->fd;
	struct fault f = { 0, 0 };
	long long start = so_monotonic_us();
	long long deadline = start + (long long)timeout_ms * 1000;
	unsigned long long now[2];
	enum so_status st;
	int sent;

	memset(res, 0, sizeof(*res));
	res->rc = SO_RC_ERROR;
	end->fd = -1;
	so_fd_id(sock, now);
	if (now[0] != end->id[0] || now[1] != end->id[1]) {
		so_logf(lg, SO_LOG_ERROR, "a plugin that ran between "
			"task_init_privileged and task_init closed or replaced the "
			"socket %d to the step's helper; %s left unchanged", sock,
			ENV_VAR);
		return SO_HELPER_FAILED;
	}
	/* The helper ends itself a tenth past this deadline: a call still
	 * running then is stuck. */
	sent = send_request(sock, req, (uint32_t)timeout_ms, deadline);
	if (sent == -2)
		st = SO_TIMEOUT;
	else if (sent == -3)
		st = SO_HELPER_FAILED;
	else
		st = read_answer(sock, res, deadline, &f);
	close(sock);
	switch (st) {
	case SO_TIMEOUT:
		so_logf(lg, SO_LOG_ERROR, "the step's helper did not answer within %d "
			"ms (timeout=); %s left unchanged", timeout_ms, ENV_VAR);
		break;
	case SO_HELPER_DIED:
		so_logf(lg, SO_LOG_ERROR, "the step's helper ended before it answered "
			"(how, where known, is logged at the step's end); %s left unchanged",
			ENV_VAR);
		break;
	case SO_BAD_ANSWER:
		so_logf(lg, SO_LOG_ERROR, "the step's helper answered a value with "
			"control character 0x%02x at byte %zu (the library broke "
			"the protocol); %s left unchanged", f.byte, f.at, ENV_VAR);
		break;
	default:
		if (sent == -3) {
			so_logf(lg, SO_LOG_ERROR, "the task environment is larger than "
				"execve() accepts; %s left unchanged", ENV_VAR);
			break;
		}
		so_emit_library_log(res->log, lg);
		break;
	}
	so_logf(lg, SO_LOG_DEBUG, "step helper %s in %lld us", so_status_name(st),
		so_monotonic_us() - start);
	if (st != SO_CALLED)
		so_result_free(res);
	return st;
}

void so_result_free(struct so_result *res)
{
	if (res->map)
		munmap(res->map, res->map_len);
	res->map = NULL;
	res->map_len = 0;
	res->value = NULL;
	res->log = NULL;
}

void so_emit_library_log(const char *log, const struct so_logger *lg)
{
	const char *line = log;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		int len = end ? (int)(end - line) : (int)strlen(line);

		if (len >= 2 && line[1] == ' ' &&
		    (line[0] == SO_LINE_ERROR || line[0] == SO_LINE_INFO ||
		     line[0] == SO_LINE_VERBOSE || line[0] == SO_LINE_DEBUG)) {
			enum so_level lv = line[0] == SO_LINE_ERROR  ? SO_LOG_ERROR
					   : line[0] == SO_LINE_INFO ? SO_LOG_INFO
					   : line[0] == SO_LINE_VERBOSE
					       ? SO_LOG_VERBOSE
					       : SO_LOG_DEBUG;

			so_logf(lg, lv, "%.*s", len - 2, line + 2);
		} else if (len > 0) {
			so_logf(lg, SO_LOG_VERBOSE, "%.*s", len, line);
		}
		line = end ? end + 1 : NULL;
	}
}

static void sanitize(char *s, size_t len, int keep_newlines)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(keep_newlines && (c == '\n' || c == '\t'))) || c == 0x7f)
			s[i] = '?';
	}
}

void so_sanitize_text(char *s, size_t len) { sanitize(s, len, 1); }

void so_sanitize_line(char *s, size_t len) { sanitize(s, len, 0); }
