/* http_pool.c - origins, their connections and the requests waiting for
 * them.
 *
 * A request is formatted whole when it is sent and queued on its origin;
 * the origin gives the oldest waiting request to an idle connection (the
 * most recently used first: its socket is the warmest), or opens a new
 * one while under its bound. A connection carries one request at a time:
 * connecting, then a TLS handshake for https, then the request written and
 * its answer read; kept alive after it unless the answer said otherwise.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_pool.h"
#include "http_wire.h"
#include "netutil.h"

#define READ_CHUNK 16384
#define SCAN_MS 50
#define RESOLVE_EVERY_MS 60000
#define RESOLVE_RETRY_MS 10000         /* after a name failed to resolve */
#define HOST_MAX 256

struct preq {
  struct preq *next;
  struct origin *origin;
  void *cookie;
  uint64_t deadline_ms;
  bool resent;
  size_t len;
  char bytes[];                  /* the request as it goes on the wire */
};

struct origin {
  struct origin *next;
  bool tls;
  char host[HOST_MAX];           /* for TLS: the name sent and verified */
  char hostport[HOST_MAX + 10];  /* "host:port", "[v6]:port": the address, and for errors */
  char host_header[HOST_MAX + 10]; /* the same without a default port */
  char prefix[HOST_MAX + 24];    /* "scheme://authority" as a URL to it was written, for the fast path */
  size_t prefix_len;
  struct sockaddr_storage addr;
  socklen_t addr_len;            /* 0 until resolved */
  uint64_t resolved_ms;          /* when last resolved, or tried */
  char resolve_error[NETUTIL_ERR_LEN + HOST_MAX + 16];   /* why the last try failed, for those meanwhile */
  unsigned n_conns;
  struct pconn *conns;           /* all of its connections */
  struct pconn *idle;            /* with nothing in flight, most recently used first */
  struct preq *wait_head, *wait_tail;
};

enum pconn_state { PCONN_CONNECTING, PCONN_HANDSHAKE, PCONN_READY };

struct pconn {
  struct http_pool *pool;
  struct origin *o;
  struct pconn *prev, *next;     /* every connection of the pool */
  struct pconn *next_in_origin;
  struct pconn *next_idle;
  struct pconn *next_dirty;
  bool in_idle, dirty;
  struct http_wire w;
  http_parser parser;
  enum pconn_state state;
  unsigned events;               /* what the loop watches for now */
  struct preq *first, *last;     /* in flight, in the order sent: first's answer is read next */
  unsigned n_inflight;
  uint64_t since_ms;             /* connecting since, or idle since */
  bool reused;                   /* has answered a request before */
  bool answer_started;
  bool complete;
  struct iobuf answer;
};

struct http_pool {
  struct http_pool_config cfg;
  struct evloop *loop;
  http_pool_done_fn done;
  void *arg;
  struct origin *origins;
  struct origin *last;           /* the origin of the last request (most go to the same) */
  struct pconn *conns;
  unsigned outstanding;
  struct pconn *dirty;           /* output to write at the end of the iteration */
  bool pass_scheduled, destroyed;
  uint64_t next_scan_ms;
  struct http_pool_stats stats;
};

static void dispatch(struct http_pool *p, struct origin *o);
static void conn_close(struct pconn *c);

/* ---- requests ---- */

static void finish(struct http_pool *p, struct preq *r, unsigned status, const char *body, size_t body_len,
                   const char *error)
{
  struct http_pool_answer a = { status, body ? body : "", body_len, error ? error : "" };
  p->outstanding--;
  if (status)
    p->stats.answers++;
  else
    p->stats.failures++;
  void *cookie = r->cookie;
  free(r);
  p->done(p->arg, cookie, &a);
}

static void wait_push(struct origin *o, struct preq *r, bool front)
{
  if (front) {
    r->next = o->wait_head;
    o->wait_head = r;
    if (!o->wait_tail)
      o->wait_tail = r;
    return;
  }
  r->next = NULL;
  if (o->wait_tail)
    o->wait_tail->next = r;
  else
    o->wait_head = r;
  o->wait_tail = r;
}

static struct preq *wait_pop(struct origin *o)
{
  struct preq *r = o->wait_head;
  if (r && !(o->wait_head = r->next))
    o->wait_tail = NULL;
  return r;
}

/* ---- connections ---- */

static void conn_events(struct pconn *c)
{
  unsigned ev;
  if (c->state == PCONN_CONNECTING)
    ev = EVLOOP_WRITE;
  else
    ev = http_wire_events(&c->w, false, c->state == PCONN_HANDSHAKE);
  if (ev != c->events && evloop_modify(c->pool->loop, c->w.fd, ev) == 0)
    c->events = ev;   /* a system call only when it changes */
}

static void idle_remove(struct pconn *c)
{
  if (!c->in_idle)
    return;
  for (struct pconn **pp = &c->o->idle; *pp; pp = &(*pp)->next_idle)
    if (*pp == c) {
      *pp = c->next_idle;
      break;
    }
  c->in_idle = false;
}

static void conn_close(struct pconn *c)
{
  struct http_pool *p = c->pool;
  struct origin *o = c->o;
  evloop_remove(p->loop, c->w.fd);
  http_wire_close(&c->w);
  iobuf_destroy(&c->answer);
  idle_remove(c);
  for (struct pconn **pp = &o->conns; *pp; pp = &(*pp)->next_in_origin)
    if (*pp == c) {
      *pp = c->next_in_origin;
      break;
    }
  if (c->dirty)
    for (struct pconn **pp = &p->dirty; *pp; pp = &(*pp)->next_dirty)
      if (*pp == c) {
        *pp = c->next_dirty;
        break;
      }
  if (c->prev)
    c->prev->next = c->next;
  else
    p->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  o->n_conns--;
  free(c);
}

/* The connection failed or ended with requests in flight: each goes back
 * to wait for another connection when it may be sent once more, else it
 * ends. Once more means nothing of its answer came and it was not sent
 * twice already; and for the first, that the connection had answered
 * before (a kept-alive one the server may have closed meanwhile); for those
 * pipelined behind it, that the server cannot have taken them: it said it
 * closes (server_closes), or the connection never got as far as sending. A
 * time-out or a reset mid-stream fails them all: the server may have acted
 * on them. */
static void conn_fail_as(struct pconn *c, const char *why, bool server_closes)
{
  struct http_pool *p = c->pool;
  struct origin *o = c->o;
  struct preq *r = c->first, *resend = NULL, **tail = &resend;
  char error[HTTP_WIRE_ERR_LEN + HOST_MAX + 8];
  bool first_may = c->reused && !c->answer_started;
  bool followers_may = server_closes || c->state != PCONN_READY;
  snprintf(error, sizeof error, "%s: %s", o->hostport, why);
  c->first = c->last = NULL;
  conn_close(c);
  for (bool is_first = true; r; is_first = false) {
    struct preq *next = r->next;
    if (!r->resent && (is_first ? first_may : followers_may)) {
      r->resent = true;
      p->stats.resends++;
      *tail = r;
      tail = &r->next;
      r->next = NULL;
    } else {
      finish(p, r, 0, NULL, 0, error);
    }
    r = next;
  }
  /* Back at the head of the queue, in their order. */
  if (resend) {
    *tail = o->wait_head;
    if (!o->wait_head)
      for (struct preq *t = resend; t; t = t->next)
        o->wait_tail = t;
    o->wait_head = resend;
  }
  dispatch(p, o);
}

static void conn_fail(struct pconn *c, const char *why)
{
  conn_fail_as(c, why, false);
}

/* Writes what the connection holds; false when it failed (and is gone). */
static bool conn_write(struct pconn *c)
{
  if (iobuf_len(&c->w.out) && http_wire_write(&c->w) < 0) {
    conn_fail(c, c->w.error);
    return false;
  }
  conn_events(c);
  return true;
}

/* The end of the loop's iteration: every connection given requests in it
 * writes them at once (pipelined ones together). */
static void pass(struct evloop *loop, void *arg)
{
  struct http_pool *p = arg;
  p->pass_scheduled = false;
  while (p->dirty) {
    struct pconn *c = p->dirty;
    p->dirty = c->next_dirty;
    c->dirty = false;
    if (c->state == PCONN_READY)
      conn_write(c);
  }
  if (p->destroyed)
    free(p);   /* destroyed while this pass was due: its memory waited for it */
}

static void parser_reset(struct pconn *c)
{
  c->answer_started = c->complete = false;
  iobuf_consume(&c->answer, iobuf_len(&c->answer));
  http_parser_init(&c->parser, HTTP_RESPONSE);
  c->parser.data = c;
}

static void conn_assign(struct pconn *c, struct preq *r)
{
  struct http_pool *p = c->pool;
  idle_remove(c);
  r->next = NULL;
  if (c->last)
    c->last->next = r;
  else
    c->first = r;
  c->last = r;
  if (c->n_inflight++ == 0)
    parser_reset(c);
  if (iobuf_append(&c->w.out, r->bytes, r->len) == -1) {
    conn_fail(c, "out of memory");
    return;
  }
  if (!c->dirty) {
    c->dirty = true;
    c->next_dirty = p->dirty;
    p->dirty = c;
    if (!p->pass_scheduled && evloop_defer(p->loop, pass, p) == 0)
      p->pass_scheduled = true;
  }
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
  struct pconn *c = hp->data;
  size_t room = c->pool->cfg.max_answer - iobuf_len(&c->answer);
  if (room)
    iobuf_append(&c->answer, at, len < room ? len : room);
  return 0;
}

static int on_message_begin(http_parser *hp)
{
  ((struct pconn *)hp->data)->answer_started = true;
  return 0;
}

static int on_message_complete(http_parser *hp)
{
  struct pconn *c = hp->data;
  c->complete = true;
  http_parser_pause(hp, 1);
  return 0;
}

static const http_parser_settings answer_settings = {
  .on_message_begin = on_message_begin,
  .on_body = on_body,
  .on_message_complete = on_message_complete,
};

/* The first request's answer is whole: it ends; the connection goes on
 * with the next in flight, waits idle, or closes when the server said so.
 * Returns false when the connection is gone. */
static bool conn_answered(struct pconn *c)
{
  struct http_pool *p = c->pool;
  struct origin *o = c->o;
  struct preq *r = c->first;
  bool keep = http_should_keep_alive(&c->parser);
  unsigned status = c->parser.status_code;
  if (status >= 100 && status < 200) {
    parser_reset(c);   /* an interim answer (100 Continue): the final one follows */
    return true;
  }
  if (status < 100) {
    conn_fail(c, "an answer with a malformed status");
    return false;
  }
  struct iobuf answer = c->answer;   /* the request's answer, kept past the connection */
  iobuf_init(&c->answer);
  if (!(c->first = r->next))
    c->last = NULL;
  c->n_inflight--;
  c->reused = true;
  uint8_t *nul = iobuf_reserve(&answer, 1);
  if (nul)
    *nul = 0;
  bool gone = false;
  if (!keep) {
    parser_reset(c);   /* nothing of the next answer came */
    conn_fail_as(c, "closed by the server", true);   /* what was pipelined behind goes again */
    gone = true;
  } else if (!c->n_inflight) {
    if (iobuf_len(&c->w.in)) {
      conn_fail(c, "an answer nobody asked for");
      gone = true;
    } else {
      c->since_ms = evloop_now_ms(p->loop);
      c->next_idle = o->idle;
      o->idle = c;
      c->in_idle = true;
    }
  } else {
    parser_reset(c);
  }
  finish(p, r, status, nul ? (const char *)iobuf_head(&answer) : "", nul ? iobuf_len(&answer) : 0, NULL);
  iobuf_destroy(&answer);
  dispatch(p, o);
  return !gone;
}

/* Reads and parses answers as they come. */
static void conn_read(struct pconn *c)
{
  for (;;) {
    ssize_t n = http_wire_read(&c->w, READ_CHUNK);
    if (n < 0 && errno == EAGAIN)
      return;
    if (n < 0) {
      conn_fail(c, c->w.error);
      return;
    }
    if (!c->first) {
      /* An idle connection that speaks, or closes: it is done with. */
      conn_close(c);
      return;
    }
    /* Answer after answer from what the input holds; at its end, an
     * answer without a length ends with the connection. */
    for (;;) {
      size_t len = iobuf_len(&c->w.in);
      size_t used = http_parser_execute(&c->parser, &answer_settings,
                                        n == 0 ? NULL : (const char *)iobuf_head(&c->w.in), n == 0 ? 0 : len);
      enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
      if (n > 0)
        iobuf_consume(&c->w.in, used);
      if (c->complete) {
        http_parser_pause(&c->parser, 0);
        if (!conn_answered(c))
          return;
        if (!c->first || (n > 0 && !iobuf_len(&c->w.in)))
          break;
        if (n == 0)
          break;
        continue;
      }
      if (err != HPE_OK && err != HPE_PAUSED) {
        conn_fail(c, http_errno_description(err));
        return;
      }
      break;
    }
    if (n == 0) {
      if (c->first)
        conn_fail(c, "connection closed before the answer");
      else
        conn_close(c);
      return;
    }
    if (!http_wire_pending(&c->w) && (size_t)n < READ_CHUNK)
      return;
  }
}

static void on_conn_io(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct pconn *c = arg;
  if (c->state == PCONN_CONNECTING) {
    int soerr = 0;
    socklen_t len = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr) {
      char why[96];
      snprintf(why, sizeof why, "connect: %s", strerror(soerr));
      conn_fail(c, why);
      return;
    }
    c->state = c->w.tls ? PCONN_HANDSHAKE : PCONN_READY;
    c->pool->stats.connects++;
  }
  if (c->state == PCONN_HANDSHAKE) {
    int rc = http_wire_handshake(&c->w);
    if (rc < 0) {
      conn_fail(c, c->w.error);
      return;
    }
    if (rc == 0) {
      conn_events(c);
      return;
    }
    c->state = PCONN_READY;
  }
  if (!conn_write(c))
    return;
  if (events & EVLOOP_READ)
    conn_read(c);
}

/* Opens a connection to o for r. */
static void conn_open(struct http_pool *p, struct origin *o, struct preq *r)
{
  char err[NETUTIL_ERR_LEN + HOST_MAX + 16];
  uint64_t now = evloop_now_ms(p->loop);
  /* A name that did not resolve is not tried again for a while: each try
   * may hold the loop for the resolver's time-out. */
  if (!o->addr_len && o->resolve_error[0] && now < o->resolved_ms + RESOLVE_RETRY_MS) {
    finish(p, r, 0, NULL, 0, o->resolve_error);
    return;
  }
  if (!o->addr_len || (o->resolved_ms + RESOLVE_EVERY_MS <= now && !o->n_conns)) {
    socklen_t len;
    o->resolved_ms = now;
    if (net_parse_addr(o->hostport, &o->addr, &len, err, sizeof err) == -1) {
      if (!o->addr_len) {
        snprintf(o->resolve_error, sizeof o->resolve_error, "%s", err);
        finish(p, r, 0, NULL, 0, err);
        return;
      }
    } else {
      o->addr_len = len;
      o->resolve_error[0] = 0;
    }
  }
  struct pconn *c = calloc(1, sizeof *c);
  int fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct tls_conn *tls = NULL;
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (fd >= 0 && o->tls)
    tls = tls_conn_create(p->cfg.tls, fd, false, o->host);
  if (!c || fd < 0 || (o->tls && !tls) ||
      (connect(fd, (struct sockaddr *)&o->addr, o->addr_len) == -1 && errno != EINPROGRESS) ||
      evloop_add(p->loop, fd, EVLOOP_WRITE, on_conn_io, c) == -1) {
    snprintf(err, sizeof err, "%s: connect: %s", o->hostport, fd < 0 || !c ? "out of resources" : strerror(errno));
    if (tls)
      tls_conn_free(tls);
    if (fd >= 0)
      close(fd);
    free(c);
    finish(p, r, 0, NULL, 0, err);
    return;
  }
  c->pool = p;
  c->o = o;
  http_wire_init(&c->w, fd, tls);
  iobuf_init(&c->answer);
  c->state = PCONN_CONNECTING;
  c->events = EVLOOP_WRITE;
  c->since_ms = now;
  c->next = p->conns;
  if (p->conns)
    p->conns->prev = c;
  p->conns = c;
  c->next_in_origin = o->conns;
  o->conns = c;
  o->n_conns++;
  conn_assign(c, r);
}

/* With pipelining: the connection with the fewest requests in flight that
 * takes one more, or NULL. */
static struct pconn *least_busy(const struct http_pool *p, const struct origin *o)
{
  struct pconn *best = NULL;
  for (struct pconn *c = o->conns; c; c = c->next_in_origin)
    if (c->n_inflight < p->cfg.pipeline && (!best || c->n_inflight < best->n_inflight))
      best = c;
  return best;
}

/* Gives o's waiting requests to its connections, as far as they go. */
static void dispatch(struct http_pool *p, struct origin *o)
{
  struct pconn *c;
  while (o->wait_head && !p->destroyed) {
    if (o->idle) {
      p->stats.reuses++;
      conn_assign(o->idle, wait_pop(o));
    } else if (o->n_conns < p->cfg.connections) {
      conn_open(p, o, wait_pop(o));
    } else if (p->cfg.pipeline > 1 && (c = least_busy(p, o))) {
      conn_assign(c, wait_pop(o));
    } else {
      return;
    }
  }
}

/* ---- origins and URLs ---- */

static struct origin *origin_for(struct http_pool *p, bool tls, const char *host, size_t host_len, unsigned port)
{
  char hostport[HOST_MAX + 10];
  bool v6 = memchr(host, ':', host_len) != NULL;
  if (host_len >= HOST_MAX)
    return NULL;
  snprintf(hostport, sizeof hostport, v6 ? "[%.*s]:%u" : "%.*s:%u", (int)host_len, host, port);
  for (struct origin *o = p->origins; o; o = o->next)
    if (o->tls == tls && strcmp(o->hostport, hostport) == 0)
      return o;
  struct origin *o = calloc(1, sizeof *o);
  if (!o)
    return NULL;
  o->tls = tls;
  memcpy(o->host, host, host_len);
  memcpy(o->hostport, hostport, sizeof hostport);
  if (port == (tls ? 443u : 80u))
    snprintf(o->host_header, sizeof o->host_header, v6 ? "[%.*s]" : "%.*s", (int)host_len, host);
  else
    memcpy(o->host_header, hostport, sizeof hostport);
  o->next = p->origins;
  p->origins = o;
  return o;
}

/* The request as it goes on the wire. */
static void put(char **dst, const char *s, size_t n)
{
  memcpy(*dst, s, n);
  *dst += n;
}

static void put_str(char **dst, const char *s)
{
  put(dst, s, strlen(s));
}

/* The request as it goes on the wire (put together without a format
 * string: this is done for every request). */
static struct preq *format_request(const struct http_pool_request *rq, const struct origin *o, const char *target,
                                   size_t target_len, const char *userinfo, size_t userinfo_len)
{
  char auth[300] = "";
  if (userinfo_len) {
    if (userinfo_len > 200)
      return NULL;
    EVP_EncodeBlock((unsigned char *)auth, (const unsigned char *)userinfo, (int)userinfo_len);
  }
  char length[24] = "";
  bool with_length = rq->content_type || rq->body_len || strcmp(rq->method, "POST") == 0 ||
                     strcmp(rq->method, "PUT") == 0;
  if (with_length)
    snprintf(length, sizeof length, "%zu", rq->body_len);
  const char *extra = rq->headers ? rq->headers : "";
  size_t cap = strlen(rq->method) + target_len + strlen(o->host_header) + strlen(auth) + strlen(length) +
               strlen(extra) + (rq->content_type ? strlen(rq->content_type) : 0) + rq->body_len + 160;
  struct preq *r = malloc(sizeof *r + cap);
  if (!r)
    return NULL;
  char *d = r->bytes;
  put_str(&d, rq->method);
  put(&d, " ", 1);
  put(&d, target, target_len);
  put_str(&d, " HTTP/1.1\r\nHost: ");
  put_str(&d, o->host_header);
  put_str(&d, "\r\nUser-Agent: emg\r\n");
  if (auth[0]) {
    put_str(&d, "Authorization: Basic ");
    put_str(&d, auth);
    put(&d, "\r\n", 2);
  }
  if (rq->content_type) {
    put_str(&d, "Content-Type: ");
    put_str(&d, rq->content_type);
    put(&d, "\r\n", 2);
  }
  if (with_length) {
    put_str(&d, "Content-Length: ");
    put_str(&d, length);
    put(&d, "\r\n", 2);
  }
  put_str(&d, extra);
  put(&d, "\r\n", 2);
  if (rq->body_len)
    put(&d, rq->body, rq->body_len);
  r->len = (size_t)(d - r->bytes);
  return r;
}

/* The fast path: a URL to the origin of the last request, written the same
 * way up to its path, needs no parse. Its origin, and its target in *t,
 * *t_len; NULL when it is not such a URL. */
static struct origin *same_origin(struct http_pool *p, const char *url, size_t url_len, const char **t, size_t *t_len)
{
  struct origin *o = p->last;
  if (!o || !o->prefix_len || url_len < o->prefix_len || memcmp(url, o->prefix, o->prefix_len) != 0)
    return NULL;
  const char *rest = url + o->prefix_len;
  if (*rest != '/' || strchr(rest, '#'))
    return NULL;   /* a query without a path, or a fragment: the full parse */
  *t = rest;
  *t_len = url_len - o->prefix_len;
  return o;
}

/* A formatted request (NULL: out of memory) joins its origin's queue. */
static int enqueue(struct http_pool *p, struct origin *o, struct preq *r, void *cookie)
{
  if (!r)
    return HTTP_POOL_E_NOMEM;
  r->origin = o;
  r->cookie = cookie;
  r->resent = false;
  r->deadline_ms = evloop_now_ms(p->loop) + p->cfg.timeout_ms;
  p->outstanding++;
  p->stats.requests++;
  wait_push(o, r, false);
  dispatch(p, o);
  return 0;
}

int http_pool_send(struct http_pool *p, const struct http_pool_request *rq, void *cookie)
{
  struct http_parser_url u;
  size_t url_len = strlen(rq->url);
  const char *fast_target;
  size_t fast_len;
  struct origin *fast = same_origin(p, rq->url, url_len, &fast_target, &fast_len);
  if (fast)
    return enqueue(p, fast, format_request(rq, fast, fast_target, fast_len, NULL, 0), cookie);
  http_parser_url_init(&u);
  if (http_parser_parse_url(rq->url, url_len, 0, &u) != 0 || !(u.field_set & (1 << UF_SCHEMA)) ||
      !(u.field_set & (1 << UF_HOST)))
    return HTTP_POOL_E_URL;
  const char *scheme = rq->url + u.field_data[UF_SCHEMA].off;
  size_t scheme_len = u.field_data[UF_SCHEMA].len;
  bool tls;
  if (scheme_len == 4 && strncasecmp(scheme, "http", 4) == 0)
    tls = false;
  else if (scheme_len == 5 && strncasecmp(scheme, "https", 5) == 0 && p->cfg.tls)
    tls = true;
  else
    return HTTP_POOL_E_URL;
  unsigned port = (u.field_set & (1 << UF_PORT)) ? u.port : tls ? 443u : 80u;
  struct origin *o = origin_for(p, tls, rq->url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len, port);
  if (!o)
    return HTTP_POOL_E_NOMEM;
  /* The target: path and query as they are written, "/" when there is none. */
  const char *target = "/";
  size_t target_len = 1;
  if (u.field_set & (1 << UF_PATH)) {
    target = rq->url + u.field_data[UF_PATH].off;
    target_len = u.field_data[UF_PATH].len;
    if (u.field_set & (1 << UF_QUERY))
      target_len = u.field_data[UF_QUERY].off + u.field_data[UF_QUERY].len - u.field_data[UF_PATH].off;
  }
  char *with_slash = NULL;
  if (!(u.field_set & (1 << UF_PATH)) && (u.field_set & (1 << UF_QUERY))) {
    size_t qlen = u.field_data[UF_QUERY].len;
    if (!(with_slash = malloc(qlen + 3)))
      return HTTP_POOL_E_NOMEM;
    snprintf(with_slash, qlen + 3, "/?%.*s", (int)qlen, rq->url + u.field_data[UF_QUERY].off);
    target = with_slash;
    target_len = qlen + 2;
  }
  const char *userinfo = (u.field_set & (1 << UF_USERINFO)) ? rq->url + u.field_data[UF_USERINFO].off : NULL;
  struct preq *r = format_request(rq, o, target, target_len, userinfo, userinfo ? u.field_data[UF_USERINFO].len : 0);
  free(with_slash);
  /* The next URLs to this origin, written the same way and without
   * credentials, take the fast path. */
  if (!userinfo && (u.field_set & (1 << UF_PATH)) && u.field_data[UF_PATH].off < sizeof o->prefix) {
    o->prefix_len = u.field_data[UF_PATH].off;
    memcpy(o->prefix, rq->url, o->prefix_len);
  }
  p->last = o;
  return enqueue(p, o, r, cookie);
}

/* ---- time ---- */

static void on_tick(struct evloop *loop, void *arg)
{
  struct http_pool *p = arg;
  uint64_t now = evloop_now_ms(loop);
  if (now < p->next_scan_ms)
    return;
  p->next_scan_ms = now + SCAN_MS;
  for (struct pconn *c = p->conns, *next; c; c = next) {
    next = c->next;
    if (c->first && now >= c->first->deadline_ms) {
      c->first->resent = true;   /* not again */
      conn_fail(c, "timed out");
      next = p->conns;         /* the list may have changed under us: from the start (each fails once) */
    } else if (c->first && c->state != PCONN_READY && now - c->since_ms >= p->cfg.connect_timeout_ms) {
      c->first->resent = true;
      conn_fail(c, c->state == PCONN_CONNECTING ? "connect timed out" : "TLS handshake timed out");
      next = p->conns;
    } else if (!c->first && now - c->since_ms >= p->cfg.idle_ms) {
      conn_close(c);
    }
  }
  for (struct origin **op = &p->origins, *o; (o = *op);) {
    /* Waiting too long for a connection: ended in the order they came. */
    while (o->wait_head && now >= o->wait_head->deadline_ms) {
      struct preq *r = wait_pop(o);
      char why[HOST_MAX + 48];
      snprintf(why, sizeof why, "%s: timed out waiting for a connection", o->hostport);
      finish(p, r, 0, NULL, 0, why);
    }
    /* An origin with nothing for a while is forgotten (callbacks may go to
     * any number of hosts). */
    if (!o->n_conns && !o->wait_head && now - o->resolved_ms >= p->cfg.idle_ms) {
      *op = o->next;
      if (p->last == o)
        p->last = NULL;
      free(o);
    } else {
      op = &o->next;
    }
  }
}

/* ---- the pool ---- */

struct tls_ctx *http_pool_tls_ctx(const struct http_pool_tls *t, char *err, size_t err_len)
{
  struct tls_settings s = {
    .cert = t && t->cert ? t->cert : "", .key = t && t->key ? t->key : "", .ca = t && t->ca ? t->ca : "",
    .verify_peer = !(t && t->insecure), .min_version = "1.2", .ciphers = "",
  };
  return tls_ctx_create(&s, false, err, err_len);
}

struct http_pool *http_pool_create(struct evloop *loop, const struct http_pool_config *cfg, http_pool_done_fn done,
                                   void *arg)
{
  struct http_pool *p = calloc(1, sizeof *p);
  if (!p || !done) {
    free(p);
    return NULL;
  }
  if (cfg)
    p->cfg = *cfg;
  if (!p->cfg.connections)
    p->cfg.connections = 10;
  if (!p->cfg.timeout_ms)
    p->cfg.timeout_ms = 30000;
  if (!p->cfg.connect_timeout_ms)
    p->cfg.connect_timeout_ms = 5000;
  if (!p->cfg.idle_ms)
    p->cfg.idle_ms = 30000;
  if (!p->cfg.pipeline)
    p->cfg.pipeline = 1;
  if (!p->cfg.max_answer)
    p->cfg.max_answer = 65536;
  p->loop = loop;
  p->done = done;
  p->arg = arg;
  if (evloop_tick(loop, on_tick, p) == -1) {
    free(p);
    return NULL;
  }
  if (p->cfg.tls)
    tls_ctx_ref(p->cfg.tls);
  return p;
}

unsigned http_pool_outstanding(const struct http_pool *p)
{
  return p->outstanding;
}

void http_pool_stats(const struct http_pool *p, struct http_pool_stats *out)
{
  *out = p->stats;
}

void http_pool_destroy(struct http_pool *p)
{
  if (!p)
    return;
  evloop_untick(p->loop, on_tick, p);
  /* Nothing is sent again from here: every request ends "stopped". */
  p->destroyed = true;
  while (p->conns) {
    struct pconn *c = p->conns;
    for (struct preq *r = c->first; r; r = r->next)
      r->resent = true;
    conn_fail(c, "stopped");
  }
  while (p->origins) {
    struct origin *o = p->origins;
    struct preq *r;
    while ((r = wait_pop(o)))
      finish(p, r, 0, NULL, 0, "stopped");
    p->origins = o->next;
    free(o);
  }
  tls_ctx_unref(p->cfg.tls);
  if (!p->pass_scheduled)
    free(p);   /* else the pass the loop still holds frees it */
}
