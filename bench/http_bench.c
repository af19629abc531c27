/* http_bench.c - the HTTP connector alone, without the gateway behind it.
 *
 *   http_bench [--seconds S]
 *     codec figures on one core: JSON submits (one message, a batch of 100),
 *     Kannel sendsms parameters, dlr-url expansion, the JSON answer.
 *   http_bench --serve HOST:PORT [--port-file F] [--threads N] [--receipts]
 *     the server on N event loops (threads) with a gateway that takes every
 *     message at once (ids from a counter), for emgload --protocol http to drive (bench/http_bench.sh).
 *     With --receipts each message with a dlr-url or callback gets a
 *     DELIVERED receipt through the callback sender right away. Runs until
 *     SIGINT or SIGTERM, then prints its counters as one JSON object.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "evloop.h"
#include "http_callback.h"
#include "http_codec.h"
#include "http_server.h"
#include "netutil.h"

/* ---- codec figures ---- */

static double seconds_per_run = 1.0;

/* Runs fn until seconds_per_run passes, three times; returns the best rate. */
static double best_rate(void (*fn)(void *), void *arg)
{
  double best = 0;
  for (int run = 0; run < 3; run++) {
    uint64_t start = clock_now_ns(), end = start + (uint64_t)(seconds_per_run * 1e9), n = 0, now;
    do {
      for (int i = 0; i < 100; i++)
        fn(arg);
      n += 100;
    } while ((now = clock_now_ns()) < end);
    double rate = (double)n / ((double)(now - start) / 1e9);
    if (rate > best)
      best = rate;
  }
  return best;
}

static const char json_one[] =
  "{\"from\":\"Shop\",\"to\":\"+4917012345678\",\"text\":\"emgload #0000000042 The quick brown fox jumps "
  "over the lazy dog 0123456789. The quick brown fox jumps over the lazy dog 0123456789. The quick br\","
  "\"dlr_url\":\"http://127.0.0.1:9000/dlr?seq=42&type=%d\",\"dlr_mask\":3}";
static char json_batch[32768];
static char kannel_query[1024];

static void parse_json(void *arg)
{
  const char *body = arg;
  struct http_codec_batch *b;
  if (http_codec_json_parse(&b, body, strlen(body), NULL) != 0)
    abort();
  http_codec_batch_free(b);
}

static void parse_kannel(void *arg)
{
  static char buf[1024];
  struct http_codec_param p[32];
  struct http_codec_batch *b;
  size_t len = strlen(kannel_query);
  memcpy(buf, kannel_query, len + 1);
  int n = http_codec_form_parse(buf, len, p, 32);
  if (n < 0 || http_codec_kannel_parse(&b, p, (size_t)n, NULL) != 0)
    abort();
  http_codec_batch_free(b);
}

static void expand_dlr(void *arg)
{
  static char out[1024];
  if (http_codec_dlr_url(out, sizeof out, "http://127.0.0.1:9000/dlr?seq=42&type=%d&id=%I&to=%p&t=%T", arg) < 0)
    abort();
}

static void json_answer(void *arg)
{
  const struct http_codec_batch *b = arg;
  static struct http_codec_result results[1] = { { HTTP_CODEC_ACCEPTED, 72057594037927937ull } };
  unsigned status;
  free(http_codec_json_answer(b, results, &status));
}

static int codec_figures(void)
{
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);
  size_t len = (size_t)snprintf(json_batch, sizeof json_batch, "[");
  for (int i = 0; i < 100; i++)
    len += (size_t)snprintf(json_batch + len, sizeof json_batch - len, "%s%s", i ? "," : "", json_one);
  snprintf(json_batch + len, sizeof json_batch - len, "]");
  snprintf(kannel_query, sizeof kannel_query,
           "username=load&password=secret&from=%%2B4917000&to=4917012345678&text=emgload+%%230000000042+The+"
           "quick+brown+fox+jumps+over+the+lazy+dog+0123456789.+The+quick+brown+fox+jumps+over+the+lazy+dog"
           "&dlr-mask=3&dlr-url=http%%3A%%2F%%2F127.0.0.1%%3A9000%%2Fdlr%%3Fseq%%3D42%%26type%%3D%%25d");
  struct msg_receipt r = { .state = MSG_STATE_DELIVERED };
  snprintf(r.dst.addr, sizeof r.dst.addr, "4917012345678");
  struct http_codec_dlr d = { .receipt = &r, .id = 42, .time = 1704164645 };
  struct http_codec_batch *one_batch;
  if (http_codec_json_parse(&one_batch, json_one, strlen(json_one), NULL) != 0)
    return 1;
  double json1 = best_rate(parse_json, (void *)json_one);
  double json100 = best_rate(parse_json, json_batch) * 100;
  double kannel = best_rate(parse_kannel, NULL);
  double dlr = best_rate(expand_dlr, &d);
  double answer = best_rate(json_answer, one_batch);
  http_codec_batch_free(one_batch);
  printf("operation                                   ops/s\n");
  printf("JSON submit, one message (%3zu bytes)   %10.0f\n", strlen(json_one), json1);
  printf("JSON submit, batch of 100 (messages/s)  %10.0f\n", json100);
  printf("Kannel sendsms parameters (%3zu bytes)  %10.0f\n", strlen(kannel_query), kannel);
  printf("dlr-url expansion                       %10.0f\n", dlr);
  printf("JSON answer, one message                %10.0f\n", answer);
  return 0;
}

/* ---- the server with an instant gateway ---- */

struct instant_gw {
  atomic_uint_fast64_t next_id;
  bool receipts;
  atomic_uint_fast64_t receipts_refused;
};

/* One loop serving, with its callback sender. */
struct serve_loop {
  struct http_server *srv;
  struct evloop *loop;
  struct http_callback *callbacks;
  pthread_t thread;
};

static struct instant_gw gw;

static int bench_check_user(void *ctx, const char *peer, const char *user, const char *password)
{
  return strcmp(user, "load") == 0 && strcmp(password, "secret") == 0 ? 0 : -1;
}

/* A DELIVERED receipt for m, straight away. */
static void bench_receipt(struct instant_gw *g, struct http_callback *callbacks, const struct http_server_message *hm,
                          uint64_t id)
{
  char url[2048], body[1024];
  struct msg_receipt r = { .state = MSG_STATE_DELIVERED, .src = hm->msg->src, .dst = hm->msg->dst };
  struct http_codec_dlr d = { .receipt = &r, .id = id, .smsc = "bench", .user = hm->user,
                              .time = (int64_t)time(NULL) };
  snprintf(r.id, sizeof r.id, "%" PRIu64, id);
  r.submit_time = r.done_time = d.time;
  int rc;
  if (hm->dlr_method == HTTP_CODEC_DLR_GET && http_codec_dlr_url(url, sizeof url, hm->dlr_url, &d) >= 0)
    rc = http_callback_send(callbacks, url, HTTP_CALLBACK_GET, NULL, NULL);
  else if (hm->dlr_method == HTTP_CODEC_DLR_POST && http_codec_dlr_json(body, sizeof body, &d) >= 0)
    rc = http_callback_send(callbacks, hm->dlr_url, HTTP_CALLBACK_POST, body, NULL);
  else
    return;
  if (rc != 0)
    atomic_fetch_add(&g->receipts_refused, 1);
}

static void bench_submit(void *ctx, const struct http_server_message *m, struct http_server_completion c)
{
  struct instant_gw *g = &gw;
  struct serve_loop *sl = ctx;
  uint64_t id = atomic_fetch_add(&g->next_id, 1) + 1;
  if (sl->callbacks && m->msg->dlr_mask && m->dlr_url)
    bench_receipt(g, sl->callbacks, m, id);
  http_server_complete(c, HTTP_CODEC_ACCEPTED, id);
}

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int signo)
{
  stop_requested = 1;
}

static void serve_tick(struct evloop *loop, void *arg)
{
  if (stop_requested)
    evloop_stop(loop);
}

/* One loop serving: attached, run until a signal, detached. */
static void *serve_run(void *arg)
{
  struct serve_loop *sl = arg;
  struct http_server_loop *attached = http_server_attach(sl->srv, sl->loop, sl);
  if (attached && evloop_tick(sl->loop, serve_tick, NULL) == 0)
    evloop_run(sl->loop);
  http_server_detach(attached);
  return NULL;
}

static int serve(const char *listen, const char *port_file, unsigned threads, bool receipts)
{
  char err[NETUTIL_ERR_LEN];
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  struct http_callback_limits lim = { .queue_max = 1000000, .concurrency = 10, .backoff_min_ms = 100 };
  struct http_server_config cfg = { .listen = listen };
  struct http_server_handler h = { bench_check_user, bench_submit, NULL };
  struct http_server *srv = http_server_start(&cfg, &h, err, sizeof err);
  if (!srv) {
    fprintf(stderr, "http_bench: %s\n", err);
    return 2;
  }
  if (port_file) {
    FILE *f = fopen(port_file, "w");
    if (!f || fprintf(f, "%d\n", http_server_port(srv)) < 0 || fclose(f) != 0) {
      fprintf(stderr, "http_bench: cannot write %s\n", port_file);
      return 2;
    }
  }
  if (threads < 1)
    threads = 1;
  struct serve_loop loops[16];
  if (threads > 16)
    threads = 16;
  for (unsigned i = 0; i < threads; i++) {
    loops[i] = (struct serve_loop){ srv, evloop_create(50), NULL, 0 };
    if (loops[i].loop && receipts &&
        !(loops[i].callbacks = http_callback_create(loops[i].loop, &lim, NULL, NULL, err, sizeof err))) {
      fprintf(stderr, "http_bench: cannot start the callback sender: %s\n", err);
      return 2;
    }
    if (!loops[i].loop || (i && pthread_create(&loops[i].thread, NULL, serve_run, &loops[i]) != 0)) {
      fprintf(stderr, "http_bench: cannot start a serving loop\n");
      return 2;
    }
  }
  serve_run(&loops[0]);
  for (unsigned i = 1; i < threads; i++)
    pthread_join(loops[i].thread, NULL);
  struct http_server_stats st;
  struct http_callback_stats cst = { 0 };
  http_server_stats(srv, &st);
  http_server_free(srv);
  for (unsigned i = 0; i < threads; i++) {
    if (loops[i].callbacks) {
      struct http_callback_stats one;
      http_callback_stats(loops[i].callbacks, &one);
      cst.sent += one.sent;
      cst.failed += one.failed;
      cst.refused += one.refused;
      http_callback_destroy(loops[i].callbacks);
    }
    evloop_destroy(loops[i].loop);
  }
  printf("{\"requests\":%" PRIu64 ",\"messages\":%" PRIu64 ",\"accepted\":%" PRIu64 ",\"refused\":%" PRIu64
         ",\"bad_requests\":%" PRIu64 ",\"auth_failures\":%" PRIu64 ",\"receipts_sent\":%" PRIu64
         ",\"receipts_failed\":%" PRIu64 ",\"receipts_refused\":%" PRIu64 "}\n",
         st.requests, st.messages, st.accepted, st.refused, st.bad_requests, st.auth_failures, cst.sent,
         cst.failed, cst.refused + (uint64_t)atomic_load(&gw.receipts_refused));
  return 0;
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    { "seconds", required_argument, 0, 's' }, { "serve", required_argument, 0, 'l' },
    { "port-file", required_argument, 0, 'f' }, { "threads", required_argument, 0, 't' },
    { "receipts", no_argument, 0, 'r' },      { 0, 0, 0, 0 }
  };
  const char *listen = NULL, *port_file = NULL;
  unsigned threads = 1;
  bool receipts = false;
  int ch;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (ch) {
    case 's': seconds_per_run = atof(optarg) / 3; break;
    case 'l': listen = optarg; break;
    case 'f': port_file = optarg; break;
    case 't': threads = (unsigned)atoi(optarg); break;
    case 'r': receipts = true; break;
    default:
      fprintf(stderr, "usage: http_bench [--seconds S] | --serve HOST:PORT [--port-file F] [--threads N] [--receipts]\n");
      return 5;
    }
  }
  if (seconds_per_run <= 0)
    seconds_per_run = 1.0;
  return listen ? serve(listen, port_file, threads, receipts) : codec_figures();
}
