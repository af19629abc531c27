/* http_edge.c - request framing, body limits and request deadlines for the
 * libmicrohttpd servers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include "clock.h"
#include "http_edge.h"
#include "netutil.h"

struct framing {
  const char *length;         /* the first Content-Length */
  bool lengths_differ;
  bool encoded;               /* a Transfer-Encoding */
};

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
  struct framing *f = cls;
  if (!value)
    value = "";
  if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
    if (f->length && strcmp(f->length, value) != 0)
      f->lengths_differ = true;
    f->length = value;
  } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
    f->encoded = true;
  }
  return MHD_YES;
}

bool http_edge_framing_ok(struct MHD_Connection *conn)
{
  struct framing f = { NULL, false, false };
  MHD_get_connection_values(conn, MHD_HEADER_KIND, framing_header, &f);
  return !f.lengths_differ && !(f.length && f.encoded);
}

enum MHD_Result http_edge_refuse_framing(struct MHD_Connection *conn, const char *type,
                                         const char *text)
{
  struct MHD_Response *resp =
    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_BAD_REQUEST, resp);
  MHD_destroy_response(resp);
  return rc;
}

enum MHD_Result http_edge_refuse_body(struct MHD_Connection *conn, const char *type,
                                      const char *text)
{
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  char answer[512];
  int n = snprintf(answer, sizeof answer,
                   "HTTP/1.1 413 Content Too Large\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n%s",
                   type, strlen(text), text);
  if (ci && n > 0 && (size_t)n < sizeof answer) {
    /* Best effort: the socket's buffer is empty at this point, and a
     * client that cannot take 200 bytes only misses the reason. */
    if (send(ci->connect_fd, answer, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
      shutdown(ci->connect_fd, SHUT_WR);
  }
  return MHD_NO;
}

/* ---- request deadlines ---- */

/* One open connection (its socket context). Its fields change under the
 * guard's lock: from libmicrohttpd's threads and the guard's own. */
struct watched {
  struct http_edge_guard *guard;
  MHD_socket fd;
  uint64_t since_ms;          /* opened, or answered its previous request */
  bool receiving;             /* a request has not yet come whole */
  bool shut;                  /* shut down past its deadline */
  struct watched *prev, *next;
};

struct http_edge_guard {
  uint64_t timeout_ms;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool stopping;
  struct watched *open;
  pthread_t thread;
};

static void *guard_run(void *arg)
{
  struct http_edge_guard *g = arg;
  pthread_mutex_lock(&g->lock);
  while (!g->stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250 * 1000 * 1000;
    if (until.tv_nsec >= 1000 * 1000 * 1000) {
      until.tv_sec++;
      until.tv_nsec -= 1000 * 1000 * 1000;
    }
    pthread_cond_timedwait(&g->wake, &g->lock, &until);
    uint64_t now = clock_now_ms();
    /* The socket is still open: libmicrohttpd closes it only after the
     * CLOSED notification, which takes this lock. */
    for (struct watched *w = g->open; w; w = w->next)
      if (w->receiving && !w->shut && now - w->since_ms > g->timeout_ms) {
        shutdown(w->fd, SHUT_RDWR);
        w->shut = true;
      }
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

struct http_edge_guard *http_edge_guard_create(unsigned request_timeout_s)
{
  struct http_edge_guard *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->timeout_ms = (uint64_t)request_timeout_s * 1000;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->wake, NULL);
  if (pthread_create(&g->thread, NULL, guard_run, g) != 0) {
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
  }
  return g;
}

void http_edge_guard_destroy(struct http_edge_guard *g)
{
  if (!g)
    return;
  pthread_mutex_lock(&g->lock);
  g->stopping = true;
  pthread_cond_signal(&g->wake);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->thread, NULL);
  /* The daemon has stopped: every connection was notified closed. */
  pthread_cond_destroy(&g->wake);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

void http_edge_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code)
{
  struct http_edge_guard *g = cls;
  struct watched *w = *socket_context;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || !(w = calloc(1, sizeof *w)))
      return;   /* unwatched: libmicrohttpd's own time-out still applies */
    *w = (struct watched){ g, ci->connect_fd, clock_now_ms(), true, false, NULL, NULL };
    pthread_mutex_lock(&g->lock);
    w->next = g->open;
    if (g->open)
      g->open->prev = w;
    g->open = w;
    pthread_mutex_unlock(&g->lock);
    *socket_context = w;
    return;
  }
  if (!w)
    return;
  pthread_mutex_lock(&g->lock);
  if (w->prev)
    w->prev->next = w->next;
  else
    g->open = w->next;
  if (w->next)
    w->next->prev = w->prev;
  pthread_mutex_unlock(&g->lock);
  free(w);
  *socket_context = NULL;
}

static void guard_mark(struct MHD_Connection *conn, bool receiving)
{
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct watched *w = ci ? ci->socket_context : NULL;
  if (!w)
    return;
  pthread_mutex_lock(&w->guard->lock);
  w->receiving = receiving;
  w->since_ms = clock_now_ms();
  pthread_mutex_unlock(&w->guard->lock);
}

void http_edge_guard_received(struct MHD_Connection *conn)
{
  guard_mark(conn, false);
}

void http_edge_guard_completed(struct MHD_Connection *conn)
{
  guard_mark(conn, true);
}

void http_edge_peer(struct MHD_Connection *conn, char *out, size_t cap)
{
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  net_peer_text(info ? info->client_addr : NULL, out, cap);
}
