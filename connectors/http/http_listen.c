/* http_listen.c - connections, request parsing and ordered answers on the
 * attached loops.
 *
 * A connection's life: accepted by whichever attached loop saw the socket
 * readable first; a TLS handshake if the server has TLS; then requests,
 * read by http-parser into the connection's head and body buffers. The
 * parser pauses at the end of each request, which is handed to the owner
 * with an http_pending that keeps its place in the connection's queue of
 * answers. Answers leave in request order, each gathered into the output
 * when every one before it is there; the output is written once per loop
 * iteration, from a list of the connections that have something to do.
 *
 * A connection is only ever freed in that pass, so closing one from any
 * callback is safe. A pending request whose connection went is an orphan:
 * its answer frees it and goes nowhere.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <http_parser.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "http_listen.h"
#include "http_wire.h"
#include "netutil.h"

#define READ_CHUNK 16384
#define READS_PER_EVENT 4
#define ACCEPTS_PER_EVENT 32
#define OUTPUT_PAUSE (256u * 1024u)    /* unsent answers at which a connection is not read */
#define SCAN_MS 250                    /* how often deadlines are checked */
#define DRAIN_MS 2000                  /* after our last answer, input read and dropped this long */
#define DRAIN_MAX (64u * 1024u)        /* ... and at most this much of it */
#define HTTP_LISTEN_LOOPS_MAX 64

/* A connection accepted by one loop for another, the one with fewest. */
struct handed {
  struct handed *next;
  int fd;
  char peer[64];
};

struct http_pending {
  struct http_listen *l;
  struct hconn *conn;            /* NULL once the connection is gone */
  struct http_pending *next;     /* in the connection's queue of answers */
  bool answered;
  bool close_after;
  bool counted;                  /* in the server's busy count */
  struct iobuf answer;           /* formatted, waiting for the ones before it */
};

/* Connections open from one address; in a chained hash table, freed when
 * its last connection closes. */
struct ip_count {
  struct ip_count *next;
  unsigned count;
  char host[48];
};

#define IP_BUCKETS 4096

struct http_listen {
  struct http_listen_config cfg;
  struct http_listen_handler h;
  int fd;
  int port;
  pthread_mutex_t lock;          /* guards tls and ips */
  struct tls_ctx *tls;
  struct ip_count **ips;         /* IP_BUCKETS chains */
  atomic_uint open, busy;
  pthread_mutex_t loops_lock;    /* guards loops and each loop's handed list */
  struct http_listen_loop *loops[HTTP_LISTEN_LOOPS_MAX];   /* attached and accepting */
  unsigned n_loops;
  atomic_bool quiesced;
  atomic_uint_fast64_t connections, refused_connections, requests, refused_requests, timeouts, tls_failures;
};

struct hconn;

struct http_listen_loop {
  struct http_listen *l;
  struct evloop *loop;
  void *ctx;
  bool listening;
  atomic_uint n_conns;
  int handoff_fd;                /* eventfd: connections handed to this loop by another */
  struct handed *handed;         /* under l->loops_lock */
  struct hconn *conns;           /* open connections */
  struct hconn *dirty;           /* to flush (or free) at the end of the iteration */
  bool pass_scheduled;
  bool detached;                 /* freed by the pass still scheduled */
  uint64_t next_scan_ms;
  time_t date_at;
  char date[40];                 /* "Date: ...\r\n" of date_at */
};

enum head_part { HEAD_NONE, HEAD_URL, HEAD_FIELD, HEAD_VALUE };

struct hconn {
  struct http_listen_loop *ll;
  struct hconn *prev, *next;     /* in ll->conns */
  struct hconn *next_dirty;
  bool dirty, dead;
  struct http_wire w;
  http_parser parser;
  char peer[64];
  bool handshaking, read_paused, eof, want_close, draining;
  bool refused;                  /* answered by refuse(): closed once the answer is out, unread */
  size_t dropped;                /* input read and dropped after our last answer */
  unsigned events;               /* what the loop watches for now */
  uint64_t deadline_ms;          /* the request being read (or handshake) must be whole by */
  uint64_t idle_since_ms;        /* nothing in progress since */
  uint64_t out_moved_ms;
  /* the request being read */
  bool started, complete;
  bool headers_done;             /* what comes as headers now are a chunked body's trailers */
  size_t trailer_bytes;
  const char *refuse_reason;     /* set by a parser callback that gave up */
  unsigned refuse_status;
  struct iobuf head;             /* URL, header names and values, each NUL-terminated */
  enum head_part part;
  uint32_t hdr_name[HTTP_LISTEN_HEADERS_MAX], hdr_value[HTTP_LISTEN_HEADERS_MAX];
  unsigned n_hdr;
  struct iobuf body;
  /* answers */
  struct http_pending *first, *last;
  unsigned in_progress;
};

static void conn_close(struct hconn *c);
static void conn_parse(struct hconn *c);
static void mark_dirty(struct hconn *c);

/* ---- addresses ---- */

/* The chain for a peer's host, and the host's length (at most 47). */
static struct ip_count **ip_chain(struct http_listen *l, const char *peer, const char **host, size_t *len)
{
  *len = net_peer_host(peer, host);
  if (*len >= sizeof l->ips[0]->host)
    *len = sizeof l->ips[0]->host - 1;
  uint32_t h = 2166136261u;   /* FNV-1a */
  for (size_t i = 0; i < *len; i++)
    h = (h ^ (uint8_t)(*host)[i]) * 16777619u;
  return &l->ips[h % IP_BUCKETS];
}

static struct ip_count **ip_find(struct ip_count **chain, const char *host, size_t len)
{
  for (; *chain; chain = &(*chain)->next)
    if (strncmp((*chain)->host, host, len) == 0 && !(*chain)->host[len])
      return chain;
  return NULL;
}

static bool ip_take(struct http_listen *l, const char *peer)
{
  const char *host;
  size_t len;
  bool ok = false;
  struct ip_count **chain = ip_chain(l, peer, &host, &len);
  pthread_mutex_lock(&l->lock);
  struct ip_count **found = ip_find(chain, host, len);
  if (found) {
    if ((ok = (*found)->count < l->cfg.connections_per_ip))
      (*found)->count++;
  } else {
    struct ip_count *e = malloc(sizeof *e);
    if ((ok = e != NULL)) {
      memcpy(e->host, host, len);
      e->host[len] = 0;
      e->count = 1;
      e->next = *chain;
      *chain = e;
    }
  }
  pthread_mutex_unlock(&l->lock);
  return ok;
}

static void ip_release(struct http_listen *l, const char *peer)
{
  const char *host;
  size_t len;
  struct ip_count **chain = ip_chain(l, peer, &host, &len);
  pthread_mutex_lock(&l->lock);
  struct ip_count **found = ip_find(chain, host, len);
  if (found && --(*found)->count == 0) {
    struct ip_count *e = *found;
    *found = e->next;
    free(e);
  }
  pthread_mutex_unlock(&l->lock);
}

/* ---- answers ---- */

static const char *date_line(struct http_listen_loop *ll)
{
  time_t now = time(NULL);
  if (now != ll->date_at) {
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ll->date, sizeof ll->date, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    ll->date_at = now;
  }
  return ll->date;
}

static int format_answer(struct http_listen_loop *ll, struct iobuf *out, unsigned status, const char *type,
                         const char *body, size_t body_len, const char *extra, bool close)
{
  char head[512];
  const char *reason = http_status_str((enum http_status)status);
  int n = snprintf(head, sizeof head, "HTTP/1.1 %u %s\r\n%sContent-Type: %s\r\nContent-Length: %zu\r\n%s",
                   status, reason, date_line(ll), type ? type : "text/plain", body_len,
                   close ? "Connection: close\r\n" : "");
  if (n < 0 || (size_t)n >= sizeof head)
    return -1;
  size_t extra_len = extra ? strlen(extra) : 0;
  uint8_t *dst = iobuf_reserve(out, (size_t)n + extra_len + 2 + body_len);
  if (!dst)
    return -1;
  memcpy(dst, head, (size_t)n);
  if (extra_len)
    memcpy(dst + n, extra, extra_len);
  memcpy(dst + n + extra_len, "\r\n", 2);
  if (body_len)
    memcpy(dst + n + extra_len + 2, body, body_len);
  iobuf_commit(out, (size_t)n + extra_len + 2 + body_len);
  return 0;
}

static void pending_uncount(struct http_listen *l, struct http_pending *p)
{
  if (p->counted) {
    p->counted = false;
    atomic_fetch_sub(&l->busy, 1);
  }
}

/* Moves the answers that are due, in order, into the output. */
static void release_answers(struct hconn *c)
{
  struct http_listen_loop *ll = c->ll;
  while (c->first && c->first->answered) {
    struct http_pending *p = c->first;
    c->first = p->next;
    if (!c->first)
      c->last = NULL;
    if (!iobuf_len(&c->w.out))
      c->out_moved_ms = evloop_now_ms(ll->loop);   /* the clock of a client that does not read starts now */
    if (iobuf_len(&p->answer) && iobuf_append(&c->w.out, iobuf_head(&p->answer), iobuf_len(&p->answer)) == -1)
      p->close_after = true;
    if (p->close_after) {
      c->want_close = true;
      c->draining = true;
    }
    iobuf_destroy(&p->answer);
    free(p);
    c->in_progress--;
  }
  if (!c->in_progress) {
    uint64_t now = evloop_now_ms(ll->loop);
    c->idle_since_ms = now;
    c->deadline_ms = now + ll->l->cfg.request_timeout_s * 1000ull;
  }
  mark_dirty(c);
}

void http_answer(struct http_pending *p, unsigned status, const char *content_type, const char *body,
                 size_t body_len, const char *extra, bool close)
{
  struct hconn *c = p->conn;
  pending_uncount(p->l, p);
  if (!c) {
    iobuf_destroy(&p->answer);
    free(p);
    return;
  }
  p->answered = true;
  p->close_after |= close || atomic_load(&c->ll->l->quiesced);
  if (format_answer(c->ll, &p->answer, status, content_type, body, body_len, extra, p->close_after) == -1)
    p->close_after = true;   /* out of memory: the client sees the connection close */
  if (c->first == p)
    release_answers(c);
}

const char *http_pending_peer(const struct http_pending *p)
{
  return p->conn ? p->conn->peer : "";
}

/* Answers by the server itself, dressed by the owner, then closes: after a
 * refusal the rest of the stream cannot be trusted to start a request. */
static void refuse(struct hconn *c, unsigned status, const char *reason)
{
  struct http_listen_loop *ll = c->ll;
  const char *path = "";
  if (c->part != HEAD_NONE && c->part != HEAD_URL && iobuf_len(&c->head))
    path = (const char *)iobuf_head(&c->head);
  struct http_refusal r = { .path = path, .status = status, .reason = reason, .content_type = "text/plain", .body = reason };
  if (ll->l->h.on_refuse)
    ll->l->h.on_refuse(ll->ctx, &r);
  atomic_fetch_add(&ll->l->refused_requests, 1);
  struct http_pending *p = calloc(1, sizeof *p);
  c->want_close = true;
  c->refused = true;
  if (!p) {
    c->draining = true;
    mark_dirty(c);
    return;
  }
  iobuf_init(&p->answer);
  p->l = ll->l;
  p->conn = c;
  if (c->last)
    c->last->next = p;
  else
    c->first = p;
  c->last = p;
  c->in_progress++;
  http_answer(p, status, r.content_type, r.body, r.body ? strlen(r.body) : 0, NULL, true);
}

/* ---- parsing ---- */

static int head_put(struct hconn *c, const char *at, size_t len)
{
  if (iobuf_len(&c->head) + len + 1 > c->ll->l->cfg.max_head) {
    c->refuse_status = c->part == HEAD_URL ? 414 : 431;
    c->refuse_reason = c->part == HEAD_URL ? "URI too long" : "request header fields too large";
    return -1;
  }
  return iobuf_append(&c->head, at, len);
}

static int head_end_part(struct hconn *c)
{
  return iobuf_append(&c->head, "", 1);
}

static int on_message_begin(http_parser *p)
{
  struct hconn *c = p->data;
  c->started = true;
  return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
  struct hconn *c = p->data;
  c->part = HEAD_URL;
  return head_put(c, at, len);
}

/* Trailers after a chunked body are not kept (nothing here reads them),
 * only counted against the head's bound. */
static int trailer(struct hconn *c, size_t len)
{
  c->trailer_bytes += len;
  if (c->trailer_bytes > c->ll->l->cfg.max_head) {
    c->refuse_status = 431;
    c->refuse_reason = "request header fields too large";
    return -1;
  }
  return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
  struct hconn *c = p->data;
  if (c->headers_done)
    return trailer(c, len);
  if (c->part != HEAD_FIELD) {
    if (head_end_part(c) == -1)
      return -1;
    if (c->n_hdr == HTTP_LISTEN_HEADERS_MAX) {
      c->refuse_status = 431;
      c->refuse_reason = "too many header fields";
      return -1;
    }
    c->hdr_name[c->n_hdr] = (uint32_t)iobuf_len(&c->head);
    c->hdr_value[c->n_hdr++] = UINT32_MAX;
    c->part = HEAD_FIELD;
  }
  return head_put(c, at, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
  struct hconn *c = p->data;
  if (c->headers_done)
    return trailer(c, len);
  if (c->part != HEAD_VALUE) {
    if (head_end_part(c) == -1)
      return -1;
    c->hdr_value[c->n_hdr - 1] = (uint32_t)iobuf_len(&c->head);
    c->part = HEAD_VALUE;
  }
  return head_put(c, at, len);
}

static int on_headers_complete(http_parser *p)
{
  struct hconn *c = p->data;
  struct http_listen *l = c->ll->l;
  if (head_end_part(c) == -1)
    return -1;
  c->headers_done = true;
  if (c->part == HEAD_URL)
    c->part = HEAD_VALUE;   /* no header at all: the URL is terminated */
  if ((p->flags & F_CONTENTLENGTH) && p->content_length > l->cfg.max_body) {
    c->refuse_status = 413;
    c->refuse_reason = "request body too large";
    return -1;
  }
  /* A client that asks first: said yes once every answer before is out. */
  for (unsigned i = 0; i < c->n_hdr; i++)
    if (c->hdr_value[i] != UINT32_MAX &&
        strcasecmp((const char *)iobuf_head(&c->head) + c->hdr_name[i], "Expect") == 0 &&
        strcasecmp((const char *)iobuf_head(&c->head) + c->hdr_value[i], "100-continue") == 0 && !c->first) {
      iobuf_append(&c->w.out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
      mark_dirty(c);
    }
  return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
  struct hconn *c = p->data;
  if (iobuf_len(&c->body) + len > c->ll->l->cfg.max_body) {
    c->refuse_status = 413;
    c->refuse_reason = "request body too large";
    return -1;
  }
  return iobuf_append(&c->body, at, len);
}

static int on_message_complete(http_parser *p)
{
  struct hconn *c = p->data;
  c->complete = true;
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings parser_settings = {
  .on_message_begin = on_message_begin,
  .on_url = on_url,
  .on_header_field = on_header_field,
  .on_header_value = on_header_value,
  .on_headers_complete = on_headers_complete,
  .on_body = on_body,
  .on_message_complete = on_message_complete,
};

static void request_reset(struct hconn *c)
{
  iobuf_consume(&c->head, iobuf_len(&c->head));
  iobuf_consume(&c->body, iobuf_len(&c->body));
  c->n_hdr = 0;
  c->part = HEAD_NONE;
  c->started = c->complete = c->headers_done = false;
  c->trailer_bytes = 0;
}

const char *http_request_header(const struct http_request *r, const char *name)
{
  for (unsigned i = 0; i < r->n_headers; i++)
    if (strcasecmp(r->headers[i].name, name) == 0)
      return r->headers[i].value;
  return NULL;
}

/* The request the parser just finished goes to the owner. */
static void handle_request(struct hconn *c)
{
  struct http_listen_loop *ll = c->ll;
  struct http_listen *l = ll->l;
  struct http_header headers[HTTP_LISTEN_HEADERS_MAX];
  char *head = (char *)iobuf_head(&c->head);
  char *url = head;
  /* An absolute form ("http://host/path") is served as its path; the
   * usual form starts with its path, and is not searched. */
  char *scheme = url[0] != '/' ? strstr(url, "://") : NULL;
  if (scheme && scheme < strchr(url, '/')) {
    char *path = strchr(scheme + 3, '/');
    url = path ? path : (char *)"/";
  }
  char *query = strchr(url, '?');
  if (query)
    *query++ = 0;
  for (unsigned i = 0; i < c->n_hdr; i++)
    headers[i] = (struct http_header){ head + c->hdr_name[i], c->hdr_value[i] == UINT32_MAX ? "" : head + c->hdr_value[i] };
  uint8_t *nul = iobuf_reserve(&c->body, 1);
  struct http_pending *p = calloc(1, sizeof *p);
  if (!nul || !p) {
    free(p);
    refuse(c, 503, "out of memory");
    return;
  }
  *nul = 0;
  iobuf_init(&p->answer);
  p->l = l;
  p->conn = c;
  p->counted = true;
  p->close_after = !http_should_keep_alive(&c->parser);
  if (p->close_after)
    c->want_close = true;
  if (c->last)
    c->last->next = p;
  else
    c->first = p;
  c->last = p;
  c->in_progress++;
  c->deadline_ms = 0;   /* the owner takes its time; the next request's clock starts at the answer */
  atomic_fetch_add(&l->busy, 1);
  atomic_fetch_add(&l->requests, 1);
  struct http_request r = {
    http_method_str((enum http_method)c->parser.method), url, query ? query : "", headers, c->n_hdr,
    iobuf_head(&c->body), iobuf_len(&c->body), c->peer,
  };
  l->h.on_request(ll->ctx, &r, p);
}

/* Parses what the input holds, request by request, while the pipeline
 * and the output have room. */
static void conn_parse(struct hconn *c)
{
  struct http_listen *l = c->ll->l;
  while (!c->dead && !c->want_close && iobuf_len(&c->w.in) && c->in_progress < l->cfg.pipeline &&
         iobuf_len(&c->w.out) < OUTPUT_PAUSE) {
    size_t len = iobuf_len(&c->w.in);
    size_t n = http_parser_execute(&c->parser, &parser_settings, (const char *)iobuf_head(&c->w.in), len);
    enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
    iobuf_consume(&c->w.in, n);
    if (err == HPE_PAUSED || c->complete) {
      http_parser_pause(&c->parser, 0);
      if (c->complete) {
        handle_request(c);
        request_reset(c);
      }
      continue;
    }
    if (err != HPE_OK) {
      if (c->refuse_reason)
        refuse(c, c->refuse_status, c->refuse_reason);
      else if (err == HPE_UNEXPECTED_CONTENT_LENGTH || err == HPE_INVALID_CONTENT_LENGTH ||
               err == HPE_INVALID_TRANSFER_ENCODING)
        refuse(c, 400, "ambiguous request length");
      else if (err == HPE_HEADER_OVERFLOW)
        refuse(c, 431, "request header fields too large");
      else if (err == HPE_CB_headers_complete || err == HPE_CB_url || err == HPE_CB_header_field ||
               err == HPE_CB_header_value || err == HPE_CB_body)
        refuse(c, 503, "out of memory");
      else
        refuse(c, 400, http_errno_description(err));
      return;
    }
    if (n == len)
      break;
  }
}

/* ---- connections ---- */

static void pass(struct evloop *loop, void *arg);

static void mark_dirty(struct hconn *c)
{
  struct http_listen_loop *ll = c->ll;
  if (c->dirty)
    return;
  c->dirty = true;
  c->next_dirty = ll->dirty;
  ll->dirty = c;
  if (!ll->pass_scheduled && evloop_defer(ll->loop, pass, ll) == 0)
    ll->pass_scheduled = true;
}

static void update_interest(struct hconn *c)
{
  if (c->dead)
    return;
  c->read_paused = c->eof || iobuf_len(&c->w.out) >= OUTPUT_PAUSE ||
                   c->in_progress >= c->ll->l->cfg.pipeline || (c->want_close && c->first);
  unsigned events = http_wire_events(&c->w, c->read_paused, c->handshaking);
  if (events != c->events && evloop_modify(c->ll->loop, c->w.fd, events) == 0)
    c->events = events;   /* a system call only when it changes */
}

static void conn_close(struct hconn *c)
{
  struct http_listen_loop *ll = c->ll;
  if (c->dead)
    return;
  c->dead = true;
  evloop_remove(ll->loop, c->w.fd);
  http_wire_close(&c->w);
  for (struct http_pending *p = c->first; p; p = p->next)
    p->conn = NULL;   /* orphans: freed by their answers */
  for (struct http_pending *p = c->first, *next; p; p = next) {
    next = p->next;
    if (p->answered) {   /* answered, waiting for one before it: nobody else holds it */
      iobuf_destroy(&p->answer);
      free(p);
    }
  }
  c->first = c->last = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    ll->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  atomic_fetch_sub(&ll->l->open, 1);
  atomic_fetch_sub(&ll->n_conns, 1);
  ip_release(ll->l, c->peer);
  mark_dirty(c);   /* freed in the pass */
}

static void conn_free(struct hconn *c)
{
  iobuf_destroy(&c->head);
  iobuf_destroy(&c->body);
  free(c);
}

/* Output written, input parsed further, a finished connection closed. */
static void conn_flush(struct hconn *c)
{
  struct http_listen_loop *ll = c->ll;
  conn_parse(c);
  if (c->dead)
    return;
  if (iobuf_len(&c->w.out)) {
    ssize_t n = http_wire_write(&c->w);
    if (n < 0) {
      conn_close(c);
      return;
    }
    if (n > 0)
      c->out_moved_ms = evloop_now_ms(ll->loop);
  }
  if (c->want_close && !c->first && !iobuf_len(&c->w.out)) {
    if (c->eof) {
      conn_close(c);
      return;
    }
    /* After a refusal (a body too large, a head that cannot be read) the
     * rest of the stream is not read at all: the answer is out, the
     * connection ends now. What the client sent already is dropped first,
     * so that the close is a FIN rather than a reset unless it sends on. */
    if (c->refused) {
      if (c->w.tls)
        tls_close(c->w.tls);
      else
        shutdown(c->w.fd, SHUT_WR);
      net_drop_pending_input(c->w.fd);
      conn_close(c);
      return;
    }
    /* Our last answer is out: say so (a FIN, or TLS's close_notify), and
     * read what the client still sends for a moment, so that closing does
     * not reset the answer away. */
    if (c->draining) {
      if (c->w.tls)
        tls_close(c->w.tls);
      else
        shutdown(c->w.fd, SHUT_WR);
      c->draining = false;
      c->deadline_ms = evloop_now_ms(ll->loop) + DRAIN_MS;
    }
  }
  update_interest(c);
}

/* Flushes (or frees) every connection marked in this iteration. */
static void flush_dirty(struct http_listen_loop *ll)
{
  while (ll->dirty) {
    struct hconn *c = ll->dirty;
    ll->dirty = c->next_dirty;
    c->dirty = false;
    if (!c->dead)
      conn_flush(c);
    if (c->dead && !c->dirty)
      conn_free(c);
  }
}

static void pass(struct evloop *loop, void *arg)
{
  struct http_listen_loop *ll = arg;
  ll->pass_scheduled = false;
  flush_dirty(ll);
  if (ll->detached && !ll->pass_scheduled)
    free(ll);   /* detached while this pass was due: its memory waited for it */
}

/* Our last answer is out and the connection ends: input is read and dropped. */
static bool finished(const struct hconn *c)
{
  return c->want_close && !c->first && !iobuf_len(&c->w.out);
}

static void read_input(struct hconn *c)
{
  for (int i = 0; i < READS_PER_EVENT || http_wire_pending(&c->w); i++) {
    if (c->read_paused && !finished(c))
      break;
    ssize_t n = http_wire_read(&c->w, READ_CHUNK);
    /* Once the connection is to end, nothing more is parsed: what comes is
     * dropped as it comes, not kept; after our last answer, DRAIN_MAX of it
     * at most, then the connection closes. */
    if (c->want_close) {
      iobuf_consume(&c->w.in, iobuf_len(&c->w.in));
      if (n > 0 && finished(c) && (c->dropped += (size_t)n) > DRAIN_MAX) {
        conn_close(c);
        return;
      }
    }
    if (n == 0) {
      c->eof = true;
      break;
    }
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        conn_close(c);
      if (c->dead)
        return;
      break;
    }
  }
  conn_parse(c);
  if (c->dead || !c->eof)
    return;
  /* The client sent all it will: what it sent whole is answered, then the
   * connection closes; a request it left unfinished never will be. */
  c->want_close = true;
  if (!c->first && !iobuf_len(&c->w.out))
    conn_close(c);
}

/* An event while reading is paused comes from the socket's error or hang-up
 * (epoll reports those whatever it watches): seen, the connection closes,
 * rather than the event coming back at every turn. */
static bool hung_up(struct hconn *c)
{
  int err = 0;
  socklen_t len = sizeof err;
  char byte;
  if (getsockopt(c->w.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
    return true;
  return recv(c->w.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void on_conn_io(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct hconn *c = arg;
  if (c->handshaking) {
    int rc = http_wire_handshake(&c->w);
    if (rc < 0) {
      atomic_fetch_add(&c->ll->l->tls_failures, 1);
      conn_close(c);
      return;
    }
    if (rc == 0) {
      update_interest(c);
      return;
    }
    c->handshaking = false;
  }
  if ((events & EVLOOP_READ) && c->read_paused && !finished(c) && !c->w.write_wants_read && hung_up(c)) {
    conn_close(c);
    return;
  }
  if (events & EVLOOP_READ)
    read_input(c);
  if (!c->dead)
    mark_dirty(c);
}

static int conn_open(struct http_listen_loop *ll, int fd, const char *peer)
{
  struct http_listen *l = ll->l;
  struct hconn *c = calloc(1, sizeof *c);
  struct tls_conn *tls = NULL;
  pthread_mutex_lock(&l->lock);
  struct tls_ctx *ctx = l->tls;
  if (ctx)
    tls_ctx_ref(ctx);
  pthread_mutex_unlock(&l->lock);
  if (ctx) {
    tls = tls_conn_create(ctx, fd, true, NULL);
    tls_ctx_unref(ctx);
  }
  if (!c || (ctx && !tls) || evloop_add(ll->loop, fd, EVLOOP_READ, on_conn_io, c) == -1) {
    if (tls)
      tls_conn_free(tls);
    free(c);
    close(fd);
    atomic_fetch_add(&l->refused_connections, 1);
    atomic_fetch_sub(&l->open, 1);
    ip_release(l, peer);
    return -1;
  }
  c->ll = ll;
  http_wire_init(&c->w, fd, tls);
  iobuf_init(&c->head);
  iobuf_init(&c->body);
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  c->handshaking = tls != NULL;
  c->events = EVLOOP_READ;
  uint64_t now = evloop_now_ms(ll->loop);
  c->idle_since_ms = c->out_moved_ms = now;
  c->deadline_ms = now + l->cfg.request_timeout_s * 1000ull;
  c->next = ll->conns;
  if (ll->conns)
    ll->conns->prev = c;
  ll->conns = c;
  atomic_fetch_add(&ll->n_conns, 1);
  atomic_fetch_add(&l->connections, 1);
  return 0;
}

/* Takes a connection in, or refuses it (closed at once, so that the
 * backlog drains) when over a limit. */
static int take_connection(struct http_listen_loop *ll, int fd, const char *peer)
{
  struct http_listen *l = ll->l;
  bool quiesced = atomic_load(&l->quiesced);
  if (quiesced || atomic_fetch_add(&l->open, 1) >= l->cfg.connection_limit) {
    if (!quiesced)
      atomic_fetch_sub(&l->open, 1);
    atomic_fetch_add(&l->refused_connections, 1);
    close(fd);
    return -1;
  }
  if (!ip_take(l, peer)) {
    atomic_fetch_sub(&l->open, 1);
    atomic_fetch_add(&l->refused_connections, 1);
    close(fd);
    return -1;
  }
  return conn_open(ll, fd, peer);
}

/* The attached loop serving fewest connections (ll itself on a tie). */
static struct http_listen_loop *least_loaded(struct http_listen_loop *ll)
{
  struct http_listen *l = ll->l;
  struct http_listen_loop *best = ll;
  unsigned fewest = atomic_load(&ll->n_conns);
  for (unsigned i = 0; i < l->n_loops; i++) {
    unsigned n = atomic_load(&l->loops[i]->n_conns);
    if (n < fewest) {
      fewest = n;
      best = l->loops[i];
    }
  }
  return best;
}

/* Accepts what is pending; each connection goes to the loop serving
 * fewest, so that the loops' threads share the work whichever woke first. */
static void on_listen_io(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct http_listen_loop *ll = arg;
  struct http_listen *l = ll->l;
  char peer[64];
  for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
    int cfd = net_accept(fd, peer, sizeof peer);
    if (cfd < 0)
      return;
    pthread_mutex_lock(&l->loops_lock);
    struct http_listen_loop *to = least_loaded(ll);
    struct handed *h = to != ll ? malloc(sizeof *h) : NULL;
    if (h) {
      h->fd = cfd;
      snprintf(h->peer, sizeof h->peer, "%s", peer);
      h->next = to->handed;
      to->handed = h;
      atomic_fetch_add(&to->n_conns, 1);   /* counted now, so that the next accept sees it */
      uint64_t one = 1;
      if (write(to->handoff_fd, &one, sizeof one) < 0) {
        /* an eventfd write fails only on overflow: it is readable anyway */
      }
    }
    pthread_mutex_unlock(&l->loops_lock);
    if (!h)
      take_connection(ll, cfd, peer);
  }
}

/* Connections another loop accepted for this one. */
static void on_handoff(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct http_listen_loop *ll = arg;
  uint64_t count;
  if (read(fd, &count, sizeof count) < 0) {
    /* nothing to take: another read got it */
  }
  pthread_mutex_lock(&ll->l->loops_lock);
  struct handed *h = ll->handed;
  ll->handed = NULL;
  pthread_mutex_unlock(&ll->l->loops_lock);
  while (h) {
    struct handed *next = h->next;
    atomic_fetch_sub(&ll->n_conns, 1);   /* conn_open counts it again */
    take_connection(ll, h->fd, h->peer);
    free(h);
    h = next;
  }
}

int http_listen_adopt(struct http_listen_loop *ll, int fd, const char *peer)
{
  return take_connection(ll, fd, peer);
}

/* Deadlines, and the stop of accepting once quiesced. */
static void on_tick(struct evloop *loop, void *arg)
{
  struct http_listen_loop *ll = arg;
  struct http_listen *l = ll->l;
  uint64_t now = evloop_now_ms(loop);
  if (now < ll->next_scan_ms)
    return;
  ll->next_scan_ms = now + SCAN_MS;
  bool quiesced = atomic_load(&l->quiesced);
  if (quiesced && ll->listening) {
    evloop_remove(loop, l->fd);
    ll->listening = false;
  }
  uint64_t idle_ms = l->cfg.idle_timeout_s * 1000ull;
  for (struct hconn *c = ll->conns, *next; c; c = next) {
    next = c->next;
    if (iobuf_len(&c->w.out) && now - c->out_moved_ms >= idle_ms) {
      atomic_fetch_add(&l->timeouts, 1);   /* a client that does not read */
      conn_close(c);
    } else if (c->want_close) {
      if (finished(c) && c->deadline_ms && now >= c->deadline_ms)
        conn_close(c);   /* drained */
    } else if (c->handshaking || c->started) {
      /* Closed without a word, as a client trickling a request at us
       * deserves no more of our time. */
      if (c->deadline_ms && now >= c->deadline_ms) {
        atomic_fetch_add(&l->timeouts, 1);
        conn_close(c);
      }
    } else if (!c->in_progress && !iobuf_len(&c->w.out) && (quiesced || now - c->idle_since_ms >= idle_ms)) {
      conn_close(c);   /* kept alive with nothing to do */
    }
  }
}

/* ---- the server ---- */

struct http_listen *http_listen_create(const struct http_listen_config *cfg, const struct http_listen_handler *h,
                                       struct tls_ctx *tls, char *err, size_t err_len)
{
  struct http_listen *l = calloc(1, sizeof *l);
  if (!l || !h || !h->on_request) {
    free(l);
    snprintf(err, err_len, l ? "the HTTP server needs a request handler" : "out of memory");
    return NULL;
  }
  l->cfg = *cfg;
  l->h = *h;
  if (!l->cfg.connection_limit)
    l->cfg.connection_limit = 1000;
  if (!l->cfg.connections_per_ip)
    l->cfg.connections_per_ip = 64;
  if (!l->cfg.idle_timeout_s)
    l->cfg.idle_timeout_s = 30;
  if (!l->cfg.request_timeout_s)
    l->cfg.request_timeout_s = 30;
  if (!l->cfg.max_head)
    l->cfg.max_head = 32 * 1024;
  if (!l->cfg.max_body)
    l->cfg.max_body = 1024 * 1024;
  if (!l->cfg.pipeline)
    l->cfg.pipeline = 16;
  if (!(l->ips = calloc(IP_BUCKETS, sizeof *l->ips))) {
    free(l);
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  if ((l->fd = net_listen(cfg->listen, err, err_len)) == -1) {
    free(l->ips);
    free(l);
    return NULL;
  }
  l->port = net_local_port(l->fd);
  l->cfg.listen = NULL;
  pthread_mutex_init(&l->lock, NULL);
  pthread_mutex_init(&l->loops_lock, NULL);
  if ((l->tls = tls))
    tls_ctx_ref(tls);
  return l;
}

int http_listen_port(const struct http_listen *l)
{
  return l->port;
}

void http_listen_set_tls(struct http_listen *l, struct tls_ctx *tls)
{
  if (tls)
    tls_ctx_ref(tls);
  pthread_mutex_lock(&l->lock);
  struct tls_ctx *old = l->tls;
  l->tls = tls;
  pthread_mutex_unlock(&l->lock);
  tls_ctx_unref(old);
}

struct http_listen_loop *http_listen_attach(struct http_listen *l, struct evloop *loop, void *ctx)
{
  struct http_listen_loop *ll = calloc(1, sizeof *ll);
  if (!ll)
    return NULL;
  ll->l = l;
  ll->loop = loop;
  ll->ctx = ctx;
  if (evloop_tick(loop, on_tick, ll) == -1) {
    free(ll);
    return NULL;
  }
  ll->handoff_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ll->handoff_fd < 0 || evloop_add(loop, ll->handoff_fd, EVLOOP_READ, on_handoff, ll) == -1) {
    if (ll->handoff_fd >= 0)
      close(ll->handoff_fd);
    evloop_untick(loop, on_tick, ll);
    free(ll);
    return NULL;
  }
  pthread_mutex_lock(&l->loops_lock);
  if (l->n_loops < HTTP_LISTEN_LOOPS_MAX)
    l->loops[l->n_loops++] = ll;
  pthread_mutex_unlock(&l->loops_lock);
  if (!atomic_load(&l->quiesced) && evloop_add(loop, l->fd, EVLOOP_READ, on_listen_io, ll) == 0)
    ll->listening = true;
  return ll;
}

void http_listen_quiesce(struct http_listen *l)
{
  atomic_store(&l->quiesced, true);
}

unsigned http_listen_busy(const struct http_listen *l)
{
  return atomic_load(&l->busy);
}

void http_listen_detach(struct http_listen_loop *ll)
{
  if (!ll)
    return;
  struct http_listen *l = ll->l;
  if (ll->listening)
    evloop_remove(ll->loop, l->fd);
  /* No more hand-offs to it; those on their way are closed unserved. */
  pthread_mutex_lock(&l->loops_lock);
  for (unsigned i = 0; i < l->n_loops; i++)
    if (l->loops[i] == ll)
      l->loops[i] = l->loops[--l->n_loops];
  struct handed *h = ll->handed;
  ll->handed = NULL;
  pthread_mutex_unlock(&l->loops_lock);
  while (h) {
    struct handed *next = h->next;
    close(h->fd);
    free(h);
    h = next;
  }
  evloop_remove(ll->loop, ll->handoff_fd);
  close(ll->handoff_fd);
  evloop_untick(ll->loop, on_tick, ll);
  /* Answers ready go out; the first one the owner still owes is a 503 in
   * its place and ends the connection (the owner's answer later only frees
   * its memory). */
  while (ll->conns) {
    struct hconn *c = ll->conns;
    release_answers(c);
    if (c->first) {
      struct http_refusal r = { .path = "", .status = 503, .reason = "shutting down", .content_type = "text/plain",
                                .body = "shutting down" };
      if (l->h.on_refuse)
        l->h.on_refuse(ll->ctx, &r);
      format_answer(ll, &c->w.out, 503, r.content_type, r.body, r.body ? strlen(r.body) : 0, "Retry-After: 1\r\n",
                    true);
    }
    for (struct http_pending *p = c->first; p; p = p->next)
      pending_uncount(l, p);
    if (iobuf_len(&c->w.out))
      http_wire_write(&c->w);
    conn_close(c);
  }
  flush_dirty(ll);
  if (ll->pass_scheduled)
    ll->detached = true;   /* the pass the loop still holds frees it */
  else
    free(ll);
}

void http_listen_free(struct http_listen *l)
{
  if (!l)
    return;
  close(l->fd);
  tls_ctx_unref(l->tls);
  pthread_mutex_destroy(&l->lock);
  pthread_mutex_destroy(&l->loops_lock);
  for (unsigned i = 0; i < IP_BUCKETS; i++)
    while (l->ips[i]) {
      struct ip_count *e = l->ips[i];
      l->ips[i] = e->next;
      free(e);
    }
  free(l->ips);
  free(l);
}

void http_listen_stats(const struct http_listen *l, struct http_listen_stats *out)
{
  out->connections = atomic_load(&l->connections);
  out->refused_connections = atomic_load(&l->refused_connections);
  out->requests = atomic_load(&l->requests);
  out->refused_requests = atomic_load(&l->refused_requests);
  out->timeouts = atomic_load(&l->timeouts);
  out->tls_failures = atomic_load(&l->tls_failures);
}
