/* http_edge.h - what both libmicrohttpd servers (the HTTP connector's and
 * the admin API's) check at the edge before a request reaches them: its
 * framing, and a body limit enforced while the body is read. */
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

#endif
