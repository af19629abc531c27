/* test_http_conn.c - the HTTP/1.1 server (http_listen) and client
 * (http_pool) on an event loop: pipelined requests answered in order,
 * refusals at the edge, 100-continue; the client against our server (keep
 * alive, reuse, a close asked for) and against a raw peer (a kept-alive
 * connection closed under it, chunked answers, an answer ended by the
 * close, a server that never answers).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "evloop.h"
#include "http_listen.h"
#include "http_pool.h"
#include "netutil.h"
#include "testutil.h"

/* ---- a server on a loop thread ---- */

struct srv {
  struct http_listen *l;
  struct evloop *loop;
  pthread_t thread;
  atomic_bool quit;
  /* requests whose answer waits for the next tick (path "/late"), in order */
  struct http_pending *late[16];
  char late_body[16][64];
  unsigned n_late;
  atomic_int requests;
  int close_every;             /* answer with close=true every n-th request (0: never) */
};

static void srv_request(void *ctx, const struct http_request *r, struct http_pending *p)
{
  struct srv *s = ctx;
  int n = atomic_fetch_add(&s->requests, 1) + 1;
  char body[64];
  snprintf(body, sizeof body, "%s %s?%s %zu", r->method, r->path, r->query, r->body_len);
  if (strcmp(r->path, "/late") == 0 && s->n_late < 16) {
    snprintf(s->late_body[s->n_late], sizeof s->late_body[0], "%s", body);
    s->late[s->n_late++] = p;
    return;
  }
  http_answer(p, 200, "text/plain", body, strlen(body), NULL, s->close_every && n % s->close_every == 0);
}

/* Answers the late requests last first: they must still leave in order. */
static void srv_tick(struct evloop *loop, void *arg)
{
  struct srv *s = arg;
  while (s->n_late) {
    unsigned i = --s->n_late;
    http_answer(s->late[i], 200, "text/plain", s->late_body[i], strlen(s->late_body[i]), NULL, false);
  }
  if (atomic_load(&s->quit))
    evloop_stop(loop);
}

static void *srv_run(void *arg)
{
  struct srv *s = arg;
  struct http_listen_loop *ll = http_listen_attach(s->l, s->loop, s);
  CU_ASSERT_PTR_NOT_NULL(ll);
  evloop_tick(s->loop, srv_tick, s);
  evloop_run(s->loop);
  http_listen_detach(ll);
  return NULL;
}

static struct srv *srv_start(size_t max_body, unsigned request_timeout_s)
{
  char err[NETUTIL_ERR_LEN];
  struct srv *s = calloc(1, sizeof *s);
  struct http_listen_config cfg = { .listen = "127.0.0.1:0", .max_body = max_body,
                                    .request_timeout_s = request_timeout_s };
  struct http_listen_handler h = { .on_request = srv_request };
  s->l = http_listen_create(&cfg, &h, NULL, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s->l);
  s->loop = evloop_create(5);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&s->thread, NULL, srv_run, s), 0);
  return s;
}

static void srv_stop(struct srv *s)
{
  atomic_store(&s->quit, true);
  pthread_join(s->thread, NULL);
  http_listen_free(s->l);
  evloop_destroy(s->loop);
  free(s);
}

/* ---- a raw client ---- */

static int raw_connect(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  CU_ASSERT_FATAL(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  struct timeval tv = { 10, 0 };   /* a hang guard: every read here ends sooner */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static void raw_send(int fd, const char *text)
{
  CU_ASSERT_EQUAL(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
}

/* Reads until want appears want_count times, the peer closes, or 10 s pass;
 * returns what came (NUL-terminated). closed: whether it ended by a close. */
static size_t raw_read(int fd, char *buf, size_t cap, const char *want, int want_count, bool *closed)
{
  size_t len = 0;
  *closed = false;
  buf[0] = 0;
  for (;;) {
    int found = 0;
    for (const char *p = buf; want && (p = strstr(p, want)); p++)
      found++;
    if (want && found >= want_count)
      return len;
    ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
    if (n <= 0) {
      *closed = n == 0;
      return len;
    }
    len += (size_t)n;
    buf[len] = 0;
  }
}

/* ---- the server ---- */

static void test_listen_pipelined_in_order(void)
{
  struct srv *s = srv_start(0, 0);
  int fd = raw_connect(http_listen_port(s->l));
  /* three requests in one write: the first two are answered late, last first */
  raw_send(fd, "GET /late?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
               "POST /late?a=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
               "POST /now HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  char buf[4096];
  bool closed;
  raw_read(fd, buf, sizeof buf, "HTTP/1.1 200", 3, &closed);
  const char *first = strstr(buf, "GET /late?a=1 0");
  const char *second = strstr(buf, "POST /late?a=2 5");
  const char *third = strstr(buf, "POST /now? 5");
  CU_ASSERT_PTR_NOT_NULL(first);
  CU_ASSERT_PTR_NOT_NULL(second);
  CU_ASSERT_PTR_NOT_NULL(third);
  CU_ASSERT_TRUE(first && second && third && first < second && second < third);
  CU_ASSERT_FALSE(closed);
  /* the connection stays for more */
  raw_send(fd, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n");
  raw_read(fd, buf, sizeof buf, "GET /again", 1, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Content-Length: 13\r\n"));   /* "GET /again? 0" */
  /* the absolute form is served as its path */
  raw_send(fd, "GET http://x:80/abs?q=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  raw_read(fd, buf, sizeof buf, "GET /abs?q=1 0", 1, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "GET /abs?q=1 0"));
  /* a chunked body with trailers: answered, the trailers not kept */
  raw_send(fd, "POST /trail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               "3\r\nabc\r\n0\r\nX-Kannel-From: v\r\nX-Other: w\r\n\r\n");
  raw_read(fd, buf, sizeof buf, "POST /trail? 3", 1, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "POST /trail? 3"));
  /* HTTP/1.0 without keep-alive: answered, then closed */
  raw_send(fd, "GET /old HTTP/1.0\r\n\r\n");
  raw_read(fd, buf, sizeof buf, NULL, 0, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "GET /old"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Connection: close\r\n"));
  CU_ASSERT_TRUE(closed);
  close(fd);
  /* a request and the client's half-close in one go: still answered */
  fd = raw_connect(http_listen_port(s->l));
  raw_send(fd, "GET /half HTTP/1.1\r\nHost: x\r\n\r\n");
  shutdown(fd, SHUT_WR);
  raw_read(fd, buf, sizeof buf, NULL, 0, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "GET /half? 0"));
  CU_ASSERT_TRUE(closed);
  close(fd);
  CU_ASSERT_EQUAL(atomic_load(&s->requests), 8);
  srv_stop(s);
}

static void test_listen_refusals(void)
{
  struct srv *s = srv_start(64, 1);
  char buf[4096];
  bool closed;
  static const struct {
    const char *request, *status;
  } cases[] = {
    { "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "HTTP/1.1 400" },
    { "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "HTTP/1.1 400" },
    { "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 413" },
    { "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n"
      "01234567890123456789012345678901234567890123456789012345678901234567890123456789\r\n0\r\n\r\n",
      "HTTP/1.1 413" },
    { "GET /a HTTP/1.1\r\nHost: x\r\nX: \x01\x02\r\n\r\n", "HTTP/1.1 400" },
    { "BREW /a HTCPCP/1.0\r\n\r\n", "HTTP/1.1 400" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int fd = raw_connect(http_listen_port(s->l));
    raw_send(fd, cases[i].request);
    raw_read(fd, buf, sizeof buf, NULL, 0, &closed);
    if (strncmp(buf, cases[i].status, strlen(cases[i].status)) != 0)
      fprintf(stderr, "case %zu: %.40s\n", i, buf);
    CU_ASSERT_EQUAL(strncmp(buf, cases[i].status, strlen(cases[i].status)), 0);
    CU_ASSERT_TRUE(closed);
    close(fd);
  }
  /* a head that never ends: closed without an answer at the deadline (1 s) */
  int fd = raw_connect(http_listen_port(s->l));
  raw_send(fd, "GET /slow HTTP/1.1\r\nHost: x\r\n");
  uint64_t start = clock_now_ms();
  size_t n = raw_read(fd, buf, sizeof buf, NULL, 0, &closed);
  CU_ASSERT_TRUE(closed);
  CU_ASSERT_EQUAL(n, 0);
  /* not before the deadline; after it, as soon as a busy machine gets to it */
  CU_ASSERT_TRUE(clock_now_ms() - start >= 700 && clock_now_ms() - start < 5000);
  close(fd);
  /* 100-continue: asked first, then answered */
  fd = raw_connect(http_listen_port(s->l));
  raw_send(fd, "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  raw_read(fd, buf, sizeof buf, "100 Continue\r\n\r\n", 1, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "HTTP/1.1 100 Continue"));
  raw_send(fd, "ok");
  raw_read(fd, buf, sizeof buf, "POST /c? 2", 1, &closed);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "POST /c? 2"));
  close(fd);
  struct http_listen_stats st;
  http_listen_stats(s->l, &st);
  CU_ASSERT_EQUAL(st.refused_requests, 6);
  CU_ASSERT_EQUAL(st.timeouts, 1);
  srv_stop(s);
}

/* ---- the client ---- */

struct pool_run {
  struct evloop *loop;
  int done, want;
  unsigned status[64];
  char body[64][64];
  char error[64][128];
  uint64_t deadline_ms;
  bool running;                /* in pool_wait: a stop is for it */
};

static void pool_done(void *arg, void *cookie, const struct http_pool_answer *a)
{
  struct pool_run *run = arg;
  int i = (int)(intptr_t)cookie;
  if (i >= 0 && i < 64) {
    run->status[i] = a->status;
    snprintf(run->body[i], sizeof run->body[0], "%s", a->body);
    snprintf(run->error[i], sizeof run->error[0], "%s", a->error);
  }
  if (++run->done >= run->want && run->running)
    evloop_stop(run->loop);
}

static void pool_deadline(struct evloop *loop, void *arg)
{
  struct pool_run *run = arg;
  if (clock_now_ms() > run->deadline_ms)
    evloop_stop(loop);
}

/* Until want are done; ms is a hang guard, at least 30 s, which no slow
 * machine reaches for answers that take milliseconds. */
static void pool_wait(struct pool_run *run, int want, unsigned ms)
{
  run->want = want;
  run->deadline_ms = clock_now_ms() + (ms < 30000 ? 30000 : ms);
  run->running = true;
  if (run->done < want)
    evloop_run(run->loop);
  run->running = false;
}

static void pool_get(struct http_pool *p, const char *url, int i)
{
  struct http_pool_request rq = { .method = "GET", .url = url };
  CU_ASSERT_EQUAL(http_pool_send(p, &rq, (void *)(intptr_t)i), 0);
}

static void test_pool_against_listen(void)
{
  struct srv *s = srv_start(0, 0);
  s->close_every = 7;
  struct pool_run run = { .loop = evloop_create(5) };
  evloop_tick(run.loop, pool_deadline, &run);
  struct http_pool_config cfg = { .connections = 3 };
  struct http_pool *p = http_pool_create(run.loop, &cfg, pool_done, &run);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/x?n=1", http_listen_port(s->l));
  for (int i = 0; i < 40; i++)
    pool_get(p, url, i);
  CU_ASSERT_EQUAL(http_pool_outstanding(p), 40);
  pool_wait(&run, 40, 5000);
  CU_ASSERT_EQUAL(run.done, 40);
  int ok = 0;
  for (int i = 0; i < 40; i++)
    ok += run.status[i] == 200 && strcmp(run.body[i], "GET /x?n=1 0") == 0;
  CU_ASSERT_EQUAL(ok, 40);
  struct http_pool_stats st;
  http_pool_stats(p, &st);
  /* 3 connections, and a new one after each close the server asked for */
  CU_ASSERT_TRUE(st.connects >= 3 && st.connects <= 3 + 40 / 7 + 1);
  CU_ASSERT_TRUE(st.reuses >= 40 - st.connects);
  CU_ASSERT_EQUAL(st.failures, 0);
  /* a POST with a body, and a URL with credentials and no path */
  struct http_pool_request rq = { .method = "POST", .url = url, .content_type = "application/json",
                                  .body = "{\"a\":1}", .body_len = 7 };
  CU_ASSERT_EQUAL(http_pool_send(p, &rq, (void *)(intptr_t)40), 0);
  snprintf(url, sizeof url, "http://u:p@127.0.0.1:%d?q=1", http_listen_port(s->l));
  pool_get(p, url, 41);
  pool_wait(&run, 42, 5000);
  CU_ASSERT_STRING_EQUAL(run.body[40], "POST /x?n=1 7");
  CU_ASSERT_STRING_EQUAL(run.body[41], "GET /?q=1 0");
  /* what is not an http URL is refused at once */
  rq = (struct http_pool_request){ .method = "GET", .url = "ftp://127.0.0.1/x" };
  CU_ASSERT_EQUAL(http_pool_send(p, &rq, NULL), HTTP_POOL_E_URL);
  rq.url = "https://127.0.0.1/x";   /* no TLS context given */
  CU_ASSERT_EQUAL(http_pool_send(p, &rq, NULL), HTTP_POOL_E_URL);
  rq.url = "not a url";
  CU_ASSERT_EQUAL(http_pool_send(p, &rq, NULL), HTTP_POOL_E_URL);
  http_pool_destroy(p);

  /* pipelined: 2 connections, 8 in flight on each; each answer to its own
   * request, though the server closes a connection every 7th answer */
  struct http_pool_config piped = { .connections = 2, .pipeline = 8 };
  p = http_pool_create(run.loop, &piped, pool_done, &run);
  run.done = 0;
  for (int i = 0; i < 60; i++) {
    snprintf(url, sizeof url, "http://127.0.0.1:%d/p?n=%d", http_listen_port(s->l), i);
    pool_get(p, url, i);
  }
  pool_wait(&run, 60, 5000);
  CU_ASSERT_EQUAL(run.done, 60);
  ok = 0;
  for (int i = 0; i < 60; i++) {
    char want[64];
    snprintf(want, sizeof want, "GET /p?n=%d 0", i);
    ok += run.status[i] == 200 && strcmp(run.body[i], want) == 0;
  }
  CU_ASSERT_EQUAL(ok, 60);
  http_pool_stats(p, &st);
  CU_ASSERT_EQUAL(st.failures, 0);
  CU_ASSERT_TRUE(st.connects <= 2 + 60 / 7 + 1);
  CU_ASSERT_TRUE(st.resends > 0);   /* those pipelined behind a closing answer went again */
  http_pool_destroy(p);
  evloop_destroy(run.loop);
  srv_stop(s);
}

/* A peer of our own making: for each connection, reads one request and
 * writes the answer the mode asks for. */
enum raw_mode {
  RAW_CLOSE_AFTER,             /* a kept-alive answer, then the connection closed anyway */
  RAW_CHUNKED,                 /* a chunked answer */
  RAW_UNTIL_CLOSE,             /* an answer with no length, ended by the close */
  RAW_SILENT                   /* reads, never answers */
};

struct raw_peer {
  int fd, port;
  enum raw_mode mode;
  int connections;
  pthread_t thread;
};

static void *raw_peer_run(void *arg)
{
  struct raw_peer *rp = arg;
  for (;;) {
    int c = accept(rp->fd, NULL, NULL);
    if (c < 0)
      return NULL;
    rp->connections++;
    char buf[2048];
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (n <= 0) {
      close(c);
      continue;
    }
    static const char *const answers[] = {
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nchun\r\n3\r\nked\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end",
    };
    if (rp->mode == RAW_SILENT) {
      nanosleep(&(struct timespec){ 1, 500000000 }, NULL);
      close(c);
      continue;
    }
    send(c, answers[rp->mode], strlen(answers[rp->mode]), MSG_NOSIGNAL);
    if (rp->mode == RAW_CHUNKED) {
      /* kept alive: a second request on it gets the same */
      if ((n = recv(c, buf, sizeof buf, 0)) > 0)
        send(c, answers[rp->mode], strlen(answers[rp->mode]), MSG_NOSIGNAL);
    }
    nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
    close(c);
  }
}

static struct raw_peer *raw_peer_start(enum raw_mode mode)
{
  char err[NETUTIL_ERR_LEN];
  struct raw_peer *rp = calloc(1, sizeof *rp);
  rp->mode = mode;
  rp->fd = net_listen("127.0.0.1:0", err, sizeof err);
  CU_ASSERT_FATAL(rp->fd >= 0);
  /* the peer's thread blocks in accept */
  fcntl(rp->fd, F_SETFL, fcntl(rp->fd, F_GETFL) & ~O_NONBLOCK);
  rp->port = net_local_port(rp->fd);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&rp->thread, NULL, raw_peer_run, rp), 0);
  return rp;
}

static void raw_peer_stop(struct raw_peer *rp)
{
  shutdown(rp->fd, SHUT_RDWR);
  pthread_join(rp->thread, NULL);
  close(rp->fd);
  free(rp);
}

static void test_pool_against_raw_peers(void)
{
  struct pool_run run = { .loop = evloop_create(5) };
  evloop_tick(run.loop, pool_deadline, &run);
  char url[128];

  /* kept alive by the answer, closed by the server meanwhile: the next
   * request on it gets nothing, and is sent again on a new connection */
  struct raw_peer *rp = raw_peer_start(RAW_CLOSE_AFTER);
  struct http_pool_config cfg = { .connections = 1 };
  struct http_pool *p = http_pool_create(run.loop, &cfg, pool_done, &run);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/a", rp->port);
  pool_get(p, url, 0);
  pool_wait(&run, 1, 3000);
  nanosleep(&(struct timespec){ 0, 200000000 }, NULL);   /* the server closes it */
  pool_get(p, url, 1);
  pool_wait(&run, 2, 3000);
  CU_ASSERT_EQUAL(run.status[0], 200);
  CU_ASSERT_STRING_EQUAL(run.body[0], "kept");
  CU_ASSERT_EQUAL(run.status[1], 200);
  CU_ASSERT_STRING_EQUAL(run.body[1], "kept");
  CU_ASSERT_EQUAL(rp->connections, 2);
  http_pool_destroy(p);
  raw_peer_stop(rp);

  /* chunked, twice on one connection */
  rp = raw_peer_start(RAW_CHUNKED);
  p = http_pool_create(run.loop, &cfg, pool_done, &run);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/c", rp->port);
  pool_get(p, url, 2);
  pool_get(p, url, 3);
  pool_wait(&run, 4, 3000);
  CU_ASSERT_STRING_EQUAL(run.body[2], "chunked");
  CU_ASSERT_STRING_EQUAL(run.body[3], "chunked");
  CU_ASSERT_EQUAL(rp->connections, 1);
  http_pool_destroy(p);
  raw_peer_stop(rp);

  /* no length: the answer ends with the connection */
  rp = raw_peer_start(RAW_UNTIL_CLOSE);
  p = http_pool_create(run.loop, &cfg, pool_done, &run);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/e", rp->port);
  pool_get(p, url, 4);
  pool_wait(&run, 5, 3000);
  CU_ASSERT_EQUAL(run.status[4], 200);
  CU_ASSERT_STRING_EQUAL(run.body[4], "to the end");
  http_pool_destroy(p);
  raw_peer_stop(rp);

  /* a server that never answers: timed out, not sent again */
  rp = raw_peer_start(RAW_SILENT);
  cfg.timeout_ms = 300;
  p = http_pool_create(run.loop, &cfg, pool_done, &run);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/s", rp->port);
  pool_get(p, url, 5);
  pool_get(p, url, 6);   /* waits for the one connection, and times out waiting */
  pool_wait(&run, 7, 3000);
  CU_ASSERT_EQUAL(run.status[5], 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(run.error[5], "timed out"));
  CU_ASSERT_EQUAL(run.status[6], 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(run.error[6], "timed out"));
  /* destroying with one out ends it as stopped */
  pool_get(p, url, 7);
  http_pool_destroy(p);
  CU_ASSERT_EQUAL(run.done, 8);
  CU_ASSERT_PTR_NOT_NULL(strstr(run.error[7], "stopped"));
  raw_peer_stop(rp);

  /* nobody listening: a connect error, said */
  p = http_pool_create(run.loop, &cfg, pool_done, &run);
  char err[NETUTIL_ERR_LEN];
  int fd = net_listen("127.0.0.1:0", err, sizeof err);
  int port = net_local_port(fd);
  close(fd);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/x", port);
  pool_get(p, url, 8);
  pool_wait(&run, 9, 3000);
  CU_ASSERT_EQUAL(run.status[8], 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(run.error[8], "refused"));
  http_pool_destroy(p);
  evloop_destroy(run.loop);
}

void suite_http_conn(void);
void suite_http_conn(void)
{
  static const struct test_case cases[] = {
    { "server: pipelined requests answered in order", test_listen_pipelined_in_order },
    { "server: refusals, deadline, 100-continue", test_listen_refusals },
    { "client: against the server", test_pool_against_listen },
    { "client: stale, chunked, until close, silent", test_pool_against_raw_peers },
    { NULL, NULL },
  };
  test_add_suite("http_conn", cases);
}
