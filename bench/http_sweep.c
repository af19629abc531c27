/* http_sweep.c - the receipt callback sender against a server that answers
 * every request after 10 ms, in the format of the HTTP client benchmark the
 * project measures itself against: connection pool sizes × concurrency
 * (requests in flight), requests per second and errors.
 *
 *   http_sweep [--seconds S] [--delay MS] [--pools 1,10,100]
 *              [--concurrency 64,256,1024,4096]
 *
 * The client is emgd's own callback sender (http_callback over http_pool),
 * on its own thread and loop, given `concurrency` callbacks at once through
 * `pool` connections: with more in flight than connections, each connection
 * pipelines concurrency / pool of them. Nothing is retried, so every
 * request that does not get a 2xx counts as an error. The server, on
 * another thread, is http_listen holding each request for the delay
 * (pipelined requests as deep as the client sends them). Both share this
 * machine's cores.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "evloop.h"
#include "http_callback.h"
#include "http_listen.h"
#include "netutil.h"

/* ---- the server: every answer after the delay ---- */

struct held {
  struct http_pending *p;
  uint64_t due_ms;
};

struct slow_server {
  struct http_listen *l;
  struct evloop *loop;
  unsigned delay_ms;
  struct held *ring;             /* all held for the same delay: due in arrival order */
  size_t cap, head, count;
  atomic_bool quit;
};

static void slow_request(void *ctx, const struct http_request *r, struct http_pending *p)
{
  struct slow_server *s = ctx;
  if (s->count == s->cap) {
    http_answer(p, 503, "text/plain", "full", 4, NULL, false);
    return;
  }
  s->ring[(s->head + s->count++) % s->cap] = (struct held){ p, evloop_now_ms(s->loop) + s->delay_ms };
}

static void slow_tick(struct evloop *loop, void *arg)
{
  struct slow_server *s = arg;
  uint64_t now = evloop_now_ms(loop);
  while (s->count && s->ring[s->head].due_ms <= now) {
    http_answer(s->ring[s->head].p, 200, "text/plain", "ok", 2, NULL, false);
    s->head = (s->head + 1) % s->cap;
    s->count--;
  }
  if (atomic_load(&s->quit))
    evloop_stop(loop);
}

static void *slow_run(void *arg)
{
  struct slow_server *s = arg;
  struct http_listen_loop *ll = http_listen_attach(s->l, s->loop, s);
  if (ll && evloop_tick(s->loop, slow_tick, s) == 0)
    evloop_run(s->loop);
  /* what is still held is answered before the connections close */
  while (s->count) {
    http_answer(s->ring[s->head].p, 200, "text/plain", "ok", 2, NULL, false);
    s->head = (s->head + 1) % s->cap;
    s->count--;
  }
  http_listen_detach(ll);
  return NULL;
}

/* ---- the client: the callback sender kept at `concurrency` ---- */

struct sweep_point {
  unsigned pool, concurrency;
  uint64_t ok, failed, refused;
  double seconds;
};

struct client {
  struct evloop *loop;
  struct http_callback *cb;
  char url[64];
  bool counting, stopping;
  uint64_t ok, failed, sent;
  uint64_t end_ms, count_from_ms;
};

static void client_done(void *arg, void *cookie, enum http_callback_outcome outcome)
{
  struct client *c = arg;
  if (c->counting) {
    if (outcome == HTTP_CALLBACK_SENT)
      c->ok++;
    else
      c->failed++;
  }
  if (!c->stopping && http_callback_send(c->cb, c->url, HTTP_CALLBACK_GET, NULL, NULL) == 0)
    c->sent++;
}

static void client_tick(struct evloop *loop, void *arg)
{
  struct client *c = arg;
  uint64_t now = evloop_now_ms(loop);
  if (!c->counting && now >= c->count_from_ms)
    c->counting = true;
  if (now >= c->end_ms) {
    c->stopping = true;
    evloop_stop(loop);
  }
}

static int run_point(struct sweep_point *pt, int port, unsigned seconds)
{
  char err[TLS_ERR_LEN];
  struct client c = { .loop = evloop_create(5) };
  unsigned pipeline = (pt->concurrency + pt->pool - 1) / pt->pool;
  struct http_callback_limits lim = {
    .queue_max = pt->concurrency, .concurrency = pt->concurrency, .connections = pt->pool,
    .pipeline = pipeline, .attempts_max = 1, .timeout_ms = 10000,
  };
  snprintf(c.url, sizeof c.url, "http://127.0.0.1:%d/dlr?id=1&status=1", port);
  if (!c.loop || !(c.cb = http_callback_create(c.loop, &lim, client_done, &c, err, sizeof err))) {
    fprintf(stderr, "http_sweep: %s\n", err);
    return -1;
  }
  evloop_tick(c.loop, client_tick, &c);
  uint64_t start = clock_now_ms();
  c.count_from_ms = start + 500;   /* connections open and fill first */
  c.end_ms = c.count_from_ms + seconds * 1000ull;
  for (unsigned i = 0; i < pt->concurrency; i++)
    if (http_callback_send(c.cb, c.url, HTTP_CALLBACK_GET, NULL, NULL) == 0)
      c.sent++;
  evloop_run(c.loop);
  struct http_callback_stats st;
  http_callback_stats(c.cb, &st);
  pt->ok = c.ok;
  pt->failed = c.failed;
  pt->refused = st.refused;
  pt->seconds = (double)seconds;
  http_callback_destroy(c.cb);   /* what is in flight is dropped, uncounted */
  evloop_destroy(c.loop);
  return 0;
}

static int parse_list(const char *s, unsigned *out, int cap)
{
  int n = 0;
  for (char *end; *s && n < cap; s = *end ? end + 1 : end) {
    out[n++] = (unsigned)strtoul(s, &end, 10);
    if (end == s)
      return -1;
  }
  return n;
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    { "seconds", required_argument, 0, 's' }, { "delay", required_argument, 0, 'd' },
    { "pools", required_argument, 0, 'p' },   { "concurrency", required_argument, 0, 'c' },
    { 0, 0, 0, 0 }
  };
  unsigned seconds = 3, delay = 10, pools[8] = { 1, 10, 100 }, conc[8] = { 64, 256, 1024, 4096 };
  int n_pools = 3, n_conc = 4, ch;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (ch) {
    case 's': seconds = (unsigned)atoi(optarg); break;
    case 'd': delay = (unsigned)atoi(optarg); break;
    case 'p': n_pools = parse_list(optarg, pools, 8); break;
    case 'c': n_conc = parse_list(optarg, conc, 8); break;
    default:
      fprintf(stderr, "usage: http_sweep [--seconds S] [--delay MS] [--pools 1,10,100] "
                      "[--concurrency 64,256,1024,4096]\n");
      return 5;
    }
  }
  if (n_pools <= 0 || n_conc <= 0 || !seconds) {
    fprintf(stderr, "http_sweep: bad --pools, --concurrency or --seconds\n");
    return 5;
  }
  signal(SIGPIPE, SIG_IGN);
  char err[NETUTIL_ERR_LEN];
  struct slow_server srv = { .delay_ms = delay, .cap = 1u << 16 };
  struct http_listen_config lc = { .listen = "127.0.0.1:0", .connection_limit = 4096, .connections_per_ip = 4096,
                                   .pipeline = 8192 };
  struct http_listen_handler h = { .on_request = slow_request };
  srv.ring = calloc(srv.cap, sizeof *srv.ring);
  srv.loop = evloop_create(1);
  if (!srv.ring || !srv.loop || !(srv.l = http_listen_create(&lc, &h, NULL, err, sizeof err))) {
    fprintf(stderr, "http_sweep: %s\n", srv.l ? "out of memory" : err);
    return 2;
  }
  pthread_t server_thread;
  if (pthread_create(&server_thread, NULL, slow_run, &srv) != 0)
    return 2;
  printf("server answers after %u ms; %u s per point\n", delay, seconds);
  printf("%6s %12s %12s %9s\n", "pool", "concurrency", "requests/s", "errors %");
  for (int i = 0; i < n_pools; i++)
    for (int j = 0; j < n_conc; j++) {
      struct sweep_point pt = { .pool = pools[i], .concurrency = conc[j] };
      if (run_point(&pt, http_listen_port(srv.l), seconds) == -1)
        return 2;
      uint64_t total = pt.ok + pt.failed;
      printf("%6u %12u %12.0f %9.2f\n", pt.pool, pt.concurrency, (double)pt.ok / pt.seconds,
             total ? 100.0 * (double)pt.failed / (double)total : 0.0);
      fflush(stdout);
    }
  atomic_store(&srv.quit, true);
  pthread_join(server_thread, NULL);
  http_listen_free(srv.l);
  evloop_destroy(srv.loop);
  free(srv.ring);
  return 0;
}
