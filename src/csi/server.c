/*
 * server.c - gRPC core transport (see server.h).  No other file includes
 * gRPC headers; handlers see only rpc.h.
 *
 * Threads and states:
 *   main thread   start() -> [serving] -> stop(): shutdown_and_notify, wait
 *                 while handlers hold calls (at most the grace), then
 *                 cancel_all_calls, wait until inflight == 0,
 *                 server_destroy, shut every queue down, join workers.
 *   worker i      loop: request_call on its own queue -> call arrives ->
 *                 RECV_MESSAGE -> dispatch -> send status (+message) ->
 *                 unref.  A failed request_call (server shutting down)
 *                 ends the loop; the worker then drains its queue until
 *                 GRPC_QUEUE_SHUTDOWN.
 * Invariant: a queue is shut down only after the server is destroyed and
 * no handler holds a call (inflight == 0), which gRPC requires.
 *
 * gRPC's own log goes through gpr_set_log_function(), a process-wide hook
 * without a user pointer: the one global of objfs-csi (grpc_log_sink) holds
 * the logger it forwards to.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "common/errors.h"
#include "common/log.h"
#include "csi/server.h"

#define DEFAULT_THREADS 16
#define METHOD_MAX 256

struct worker {
	struct objfs_grpc_server *srv;
	grpc_completion_queue *cq;
	pthread_t thread;
	int started;
};

struct objfs_grpc_server {
	grpc_server *server;
	grpc_completion_queue *shutdown_cq;
	struct worker *workers;
	unsigned n_workers;
	const struct objfs_rpc_method *methods;
	size_t n_methods;
	void *ctx;
	struct objfs_log *log;
	void (*observe)(void *arg, const char *method, enum objfs_rpc_code code,
			uint64_t ns);
	void *observe_arg;
	char *sock_path;
	char *lock_path;
	int lock_fd;
	int grpc_inited;
	int serving;             /* grpc_server_start() was called */
	pthread_mutex_t mu;
	pthread_cond_t idle;
	unsigned inflight;       /* calls held by handlers; protected by mu */
};

/* The process-wide gRPC log hook (see the design comment). */
static struct objfs_log *grpc_log_sink;

static void grpc_log_forward(gpr_log_func_args *args)
{
	enum objfs_log_level level = OBJFS_LOG_DEBUG;

	if (args->severity == GPR_LOG_SEVERITY_ERROR)
		level = OBJFS_LOG_ERROR;
	else if (args->severity == GPR_LOG_SEVERITY_INFO)
		level = OBJFS_LOG_INFO;
	objfs_logf(grpc_log_sink, level, "grpc", "%s (%s:%d)", args->message,
		   args->file, args->line);
}

int objfs_grpc_endpoint_path(const char *endpoint, char **path)
{
	const char *p;

	*path = NULL;
	if (endpoint == NULL)
		return EINVAL;
	if (strncmp(endpoint, "unix://", 7) == 0)
		p = endpoint + 7;
	else if (strncmp(endpoint, "unix:", 5) == 0)
		p = endpoint + 5;
	else
		p = endpoint;
	/* unix:///abs -> "/abs"; unix://relative is not accepted. */
	if (p[0] != '/' || strlen(p) >= 108)
		return EINVAL;
	*path = strdup(p);
	return *path != NULL ? 0 : ENOMEM;
}

static char *slice_to_str(grpc_slice s, char *buf, size_t cap)
{
	size_t n = GRPC_SLICE_LENGTH(s);

	if (n >= cap)
		n = cap - 1;
	memcpy(buf, GRPC_SLICE_START_PTR(s), n);
	buf[n] = '\0';
	return buf;
}

/* Runs one batch and waits for it on the worker's queue.  Returns the
 * event's success flag. */
static int run_batch(struct worker *w, grpc_call *call, const grpc_op *ops,
		     size_t n, void *tag)
{
	grpc_event ev;

	if (grpc_call_start_batch(call, ops, n, tag, NULL) != GRPC_CALL_OK)
		return 0;
	do {
		ev = grpc_completion_queue_next(w->cq,
				gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	} while (ev.type == GRPC_OP_COMPLETE && ev.tag != tag);
	return ev.type == GRPC_OP_COMPLETE && ev.success;
}

static double elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void handle_call(struct worker *w, grpc_call *call,
			const grpc_call_details *details)
{
	struct objfs_grpc_server *srv = w->srv;
	struct objfs_rpc_status st = { OBJFS_RPC_OK, "" };
	grpc_byte_buffer *recv_buf = NULL;
	grpc_byte_buffer *send_buf = NULL;
	grpc_byte_buffer_reader reader;
	grpc_slice body = grpc_empty_slice();
	grpc_slice resp_slice;
	grpc_slice status_slice;
	grpc_op ops[4];
	char method[METHOD_MAX];
	uint8_t *out = NULL;
	size_t out_len = 0;
	int cancelled = 0;
	int have_body = 0;
	struct timespec t0;
	size_t nops;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	slice_to_str(details->method, method, sizeof(method));

	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_RECV_MESSAGE;
	ops[0].data.recv_message.recv_message = &recv_buf;
	if (!run_batch(w, call, ops, 1, &ops[0])) {
		objfs_debug(srv->log, "grpc", "%s: client went away before its request arrived", method);
		goto out;
	}
	if (recv_buf == NULL) {
		objfs_rpc_fail(&st, OBJFS_RPC_INVALID_ARGUMENT, "request has no message");
	} else if (!grpc_byte_buffer_reader_init(&reader, recv_buf)) {
		objfs_rpc_fail(&st, OBJFS_RPC_INVALID_ARGUMENT, "request message cannot be read");
	} else {
		body = grpc_byte_buffer_reader_readall(&reader);
		grpc_byte_buffer_reader_destroy(&reader);
		have_body = 1;
	}
	if (have_body)
		objfs_rpc_dispatch(srv->methods, srv->n_methods, srv->ctx, method,
				   GRPC_SLICE_START_PTR(body),
				   GRPC_SLICE_LENGTH(body), &out, &out_len, &st);

	memset(ops, 0, sizeof(ops));
	nops = 0;
	ops[nops].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[nops].data.send_initial_metadata.count = 0;
	nops++;
	if (st.code == OBJFS_RPC_OK) {
		resp_slice = grpc_slice_from_copied_buffer((const char *)out, out_len);
		send_buf = grpc_raw_byte_buffer_create(&resp_slice, 1);
		grpc_slice_unref(resp_slice);
		ops[nops].op = GRPC_OP_SEND_MESSAGE;
		ops[nops].data.send_message.send_message = send_buf;
		nops++;
	}
	status_slice = grpc_slice_from_copied_string(st.msg);
	ops[nops].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[nops].data.send_status_from_server.trailing_metadata_count = 0;
	ops[nops].data.send_status_from_server.status = (grpc_status_code)st.code;
	ops[nops].data.send_status_from_server.status_details =
		st.msg[0] != '\0' ? &status_slice : NULL;
	nops++;
	ops[nops].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[nops].data.recv_close_on_server.cancelled = &cancelled;
	nops++;
	if (!run_batch(w, call, ops, nops, &ops[0]))
		cancelled = 1;
	grpc_slice_unref(status_slice);

	if (srv->observe != NULL)
		srv->observe(srv->observe_arg, method, st.code,
			     (uint64_t)(elapsed_ms(&t0) * 1e6));
	if (st.code == OBJFS_RPC_OK)
		objfs_debug(srv->log, "csi", "%s OK in %.1f ms", method, elapsed_ms(&t0));
	else
		objfs_logf(srv->log,
			   st.code == OBJFS_RPC_INTERNAL ? OBJFS_LOG_ERROR : OBJFS_LOG_INFO,
			   "csi", "%s %s in %.1f ms: %s%s", method,
			   objfs_rpc_code_name(st.code), elapsed_ms(&t0), st.msg,
			   cancelled ? " (client cancelled)" : "");
out:
	if (send_buf != NULL)
		grpc_byte_buffer_destroy(send_buf);
	if (recv_buf != NULL)
		grpc_byte_buffer_destroy(recv_buf);
	if (have_body)
		grpc_slice_unref(body);
	free(out);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct objfs_grpc_server *srv = w->srv;
	grpc_event ev;
	int new_tag;

	for (;;) {
		grpc_call *call = NULL;
		grpc_call_details details;
		grpc_metadata_array md;
		grpc_call_error err;

		grpc_call_details_init(&details);
		grpc_metadata_array_init(&md);
		err = grpc_server_request_call(srv->server, &call, &details, &md,
					       w->cq, w->cq, &new_tag);
		if (err == GRPC_CALL_OK) {
			do {
				ev = grpc_completion_queue_next(w->cq,
					gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
			} while (ev.type == GRPC_OP_COMPLETE && ev.tag != &new_tag);
		}
		if (err != GRPC_CALL_OK || ev.type != GRPC_OP_COMPLETE ||
		    !ev.success) {
			/* shutting down */
			if (call != NULL)
				grpc_call_unref(call);
			grpc_call_details_destroy(&details);
			grpc_metadata_array_destroy(&md);
			break;
		}
		pthread_mutex_lock(&srv->mu);
		srv->inflight++;
		pthread_mutex_unlock(&srv->mu);

		handle_call(w, call, &details);
		grpc_call_unref(call);
		grpc_call_details_destroy(&details);
		grpc_metadata_array_destroy(&md);

		pthread_mutex_lock(&srv->mu);
		srv->inflight--;
		pthread_cond_broadcast(&srv->idle);
		pthread_mutex_unlock(&srv->mu);
	}
	/* Drain until stop() shuts the queue down. */
	do {
		ev = grpc_completion_queue_next(w->cq,
				gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	} while (ev.type != GRPC_QUEUE_SHUTDOWN);
	return NULL;
}

/* Takes the lock beside the socket: EADDRINUSE when another live instance
 * holds it. */
static int take_lock(struct objfs_grpc_server *srv, char *err_msg, size_t errlen)
{
	size_t n = strlen(srv->sock_path) + 6;
	char *dir = NULL;
	char *slash;
	int err = 0;

	srv->lock_path = malloc(n);
	dir = strdup(srv->sock_path);
	if (srv->lock_path == NULL || dir == NULL) {
		err = ENOMEM;
		goto out;
	}
	snprintf(srv->lock_path, n, "%s.lock", srv->sock_path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
			err = errno;
			snprintf(err_msg, errlen, "cannot create socket directory %s: %s",
				 dir, objfs_strerror(err));
			goto out;
		}
	}
	srv->lock_fd = open(srv->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (srv->lock_fd < 0) {
		err = errno;
		snprintf(err_msg, errlen, "cannot open lock file %s: %s",
			 srv->lock_path, objfs_strerror(err));
		goto out;
	}
	if (flock(srv->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		err = errno == EWOULDBLOCK ? EADDRINUSE : errno;
		snprintf(err_msg, errlen,
			 "another objfs-csi is already serving %s (lock %s is held); refusing to take its socket",
			 srv->sock_path, srv->lock_path);
		close(srv->lock_fd);
		srv->lock_fd = -1;
		goto out;
	}
out:
	free(dir);
	return err;
}

int objfs_grpc_server_start(const struct objfs_grpc_server_config *cfg,
			    struct objfs_grpc_server **out,
			    char *err_msg, size_t errlen)
{
	struct objfs_grpc_server *srv;
	grpc_server_credentials *creds;
	char addr[128];
	unsigned i;
	int err;

	*out = NULL;
	err_msg[0] = '\0';
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return ENOMEM;
	srv->lock_fd = -1;
	srv->methods = cfg->methods;
	srv->n_methods = cfg->n_methods;
	srv->observe = cfg->observe;
	srv->observe_arg = cfg->observe_arg;
	srv->ctx = cfg->ctx;
	srv->log = cfg->log;
	srv->n_workers = cfg->threads != 0 ? cfg->threads : DEFAULT_THREADS;
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->idle, NULL);

	err = objfs_grpc_endpoint_path(cfg->endpoint, &srv->sock_path);
	if (err != 0) {
		snprintf(err_msg, errlen,
			 "invalid endpoint \"%s\": expected unix:///absolute/path.sock",
			 cfg->endpoint != NULL ? cfg->endpoint : "");
		goto fail;
	}
	err = take_lock(srv, err_msg, errlen);
	if (err != 0)
		goto fail;

	grpc_log_sink = cfg->log;
	gpr_set_log_function(grpc_log_forward);
	gpr_set_log_verbosity(objfs_log_enabled(cfg->log, OBJFS_LOG_DEBUG) ?
			      GPR_LOG_SEVERITY_INFO : GPR_LOG_SEVERITY_ERROR);
	grpc_init();
	srv->grpc_inited = 1;

	srv->server = grpc_server_create(NULL, NULL);
	srv->shutdown_cq = grpc_completion_queue_create_for_next(NULL);
	srv->workers = calloc(srv->n_workers, sizeof(*srv->workers));
	if (srv->server == NULL || srv->shutdown_cq == NULL || srv->workers == NULL) {
		err = ENOMEM;
		snprintf(err_msg, errlen, "cannot create the gRPC server");
		goto fail;
	}
	for (i = 0; i < srv->n_workers; i++) {
		srv->workers[i].srv = srv;
		srv->workers[i].cq = grpc_completion_queue_create_for_next(NULL);
		grpc_server_register_completion_queue(srv->server,
						      srv->workers[i].cq, NULL);
	}
	snprintf(addr, sizeof(addr), "unix:%s", srv->sock_path);
	creds = grpc_insecure_server_credentials_create();
	if (grpc_server_add_http2_port(srv->server, addr, creds) == 0) {
		grpc_server_credentials_release(creds);
		err = EADDRNOTAVAIL;
		snprintf(err_msg, errlen, "cannot listen on %s (see the grpc log line above)",
			 srv->sock_path);
		goto fail;
	}
	grpc_server_credentials_release(creds);
	chmod(srv->sock_path, 0660);
	grpc_server_start(srv->server);
	srv->serving = 1;

	for (i = 0; i < srv->n_workers; i++) {
		if (pthread_create(&srv->workers[i].thread, NULL, worker_main,
				   &srv->workers[i]) != 0) {
			err = EAGAIN;
			snprintf(err_msg, errlen, "cannot start worker threads");
			goto fail;
		}
		srv->workers[i].started = 1;
	}
	objfs_info(srv->log, "csi", "serving CSI on unix:%s with %u workers",
		   srv->sock_path, srv->n_workers);
	*out = srv;
	return 0;
fail:
	objfs_grpc_server_stop(srv, 0);
	return err;
}

void objfs_grpc_server_stop(struct objfs_grpc_server *srv, unsigned grace_ms)
{
	grpc_event ev;
	unsigned i;
	int shutdown_tag;

	if (srv == NULL)
		return;
	if (srv->server != NULL && srv->serving) {
		gpr_timespec end = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
						gpr_time_from_millis(grace_ms, GPR_TIMESPAN));
		unsigned waited = 0;
		bool idle;

		grpc_server_shutdown_and_notify(srv->server, srv->shutdown_cq,
						&shutdown_tag);
		/* The grace is for calls a handler holds.  A call that reached
		 * the server as shutdown began, after the workers' request_call
		 * had been failed, is held by no handler and would never be
		 * answered: it kept shutdown (and its client) waiting the whole
		 * grace, past the client's deadline.  So once no handler holds
		 * a call, what is left is cancelled at once. */
		for (;;) {
			gpr_timespec slice = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
							  gpr_time_from_millis(100, GPR_TIMESPAN));

			ev = grpc_completion_queue_next(srv->shutdown_cq,
							gpr_time_cmp(slice, end) < 0 ? slice : end,
							NULL);
			if (ev.type != GRPC_QUEUE_TIMEOUT)
				break;
			waited += 100;
			pthread_mutex_lock(&srv->mu);
			idle = srv->inflight == 0;
			pthread_mutex_unlock(&srv->mu);
			if (idle || gpr_time_cmp(gpr_now(GPR_CLOCK_REALTIME), end) >= 0) {
				objfs_info(srv->log, "csi", "cancelling calls %s after %u ms",
					   idle ? "no handler holds" : "still running", waited);
				grpc_server_cancel_all_calls(srv->server);
				grpc_completion_queue_next(srv->shutdown_cq,
						gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
				break;
			}
		}
		pthread_mutex_lock(&srv->mu);
		while (srv->inflight > 0)
			pthread_cond_wait(&srv->idle, &srv->mu);
		pthread_mutex_unlock(&srv->mu);
	}
	if (srv->server != NULL)
		grpc_server_destroy(srv->server);
	if (srv->workers != NULL) {
		for (i = 0; i < srv->n_workers; i++) {
			if (srv->workers[i].cq != NULL)
				grpc_completion_queue_shutdown(srv->workers[i].cq);
		}
		for (i = 0; i < srv->n_workers; i++) {
			if (srv->workers[i].started) {
				pthread_join(srv->workers[i].thread, NULL);
			} else if (srv->workers[i].cq != NULL) {
				do {
					ev = grpc_completion_queue_next(srv->workers[i].cq,
						gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
				} while (ev.type != GRPC_QUEUE_SHUTDOWN);
			}
			if (srv->workers[i].cq != NULL)
				grpc_completion_queue_destroy(srv->workers[i].cq);
		}
		free(srv->workers);
	}
	if (srv->shutdown_cq != NULL) {
		grpc_completion_queue_shutdown(srv->shutdown_cq);
		do {
			ev = grpc_completion_queue_next(srv->shutdown_cq,
					gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		} while (ev.type != GRPC_QUEUE_SHUTDOWN);
		grpc_completion_queue_destroy(srv->shutdown_cq);
	}
	if (srv->grpc_inited)
		grpc_shutdown();
	if (srv->lock_fd >= 0) {
		/* Only the holder of the lock removes the socket, then the lock
		 * file itself (while still holding it: an instance starting now
		 * creates a new one), so a clean stop leaves nothing behind. */
		if (srv->sock_path != NULL)
			unlink(srv->sock_path);
		if (srv->lock_path != NULL)
			unlink(srv->lock_path);
		close(srv->lock_fd);
	}
	pthread_mutex_destroy(&srv->mu);
	pthread_cond_destroy(&srv->idle);
	free(srv->sock_path);
	free(srv->lock_path);
	free(srv);
}
