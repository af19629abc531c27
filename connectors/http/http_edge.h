/* http_edge.h - what the admin API's libmicrohttpd server checks at the
 * edge before a request reaches it: its framing, a body limit enforced
 * while the body is read, and a deadline for a whole request to arrive.
 *
 * libmicrohttpd's connection time-out (0.9.75) counts from the last byte
 * received, so a client sending one byte a second keeps a connection, and
 * a thread's attention, for as long as it likes. A guard counts from the
 * moment a connection opened, or answered its previous request, until the
 * request has come whole; past its deadline it shuts the socket down, and
 * libmicrohttpd closes the connection as one the client closed.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_EDGE_H
#define EMG_HTTP_EDGE_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* True when the request's length is unambiguous: no two Content-Length
 * headers with different values, and no Content-Length together with a
 * Transfer-Encoding (libmicrohttpd 0.9.75 takes the first length, or the
 * chunks, where a proxy in front may have taken the other). Call it at the
 * access handler's first call. */
bool http_edge_framing_ok(struct MHD_Connection *conn);

/* The client's address as net_accept writes a peer ("HOST:PORT"), for logs
 * and the per-address brake on guessing. */
void http_edge_peer(struct MHD_Connection *conn, char *out, size_t cap);

/* Answers 400 with "Connection: close" for a request http_edge_framing_ok
 * refused: the rest of the stream cannot be trusted to start a request.
 * type and text are the body; text is copied. Returns MHD_queue_response's
 * result. */
enum MHD_Result http_edge_refuse_framing(struct MHD_Connection *conn, const char *type,
                                         const char *text);

/* Answers 413 with "Connection: close" in the middle of a body, and returns
 * MHD_NO so that libmicrohttpd closes the connection without reading the
 * rest. libmicrohttpd 0.9.75 takes a response only before the body or
 * after all of it, so the answer is written to the socket here: nothing
 * else is being written to it while a request's body is read. */
enum MHD_Result http_edge_refuse_body(struct MHD_Connection *conn, const char *type,
                                      const char *text);

struct http_edge_guard;

/* A guard with its own thread, checking deadlines four times a second.
 * NULL when out of memory or threads. */
struct http_edge_guard *http_edge_guard_create(unsigned request_timeout_s);

/* After MHD_stop_daemon of the daemon it watched. NULL is fine. */
void http_edge_guard_destroy(struct http_edge_guard *g);

/* To pass as MHD_OPTION_NOTIFY_CONNECTION, with the guard as its cls. */
void http_edge_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code);

/* The request on conn has come whole: its answer may take as long as the
 * gateway needs (the connection may be suspended meanwhile). */
void http_edge_guard_received(struct MHD_Connection *conn);

/* The request on conn completed: the deadline of the next one on this
 * connection runs from now. From MHD_OPTION_NOTIFY_COMPLETED. */
void http_edge_guard_completed(struct MHD_Connection *conn);

#endif
