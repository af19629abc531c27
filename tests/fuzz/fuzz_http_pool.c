/* fuzz_http_pool.c - libFuzzer target for the HTTP client's reading of
 * answers (http_pool over Debian's http-parser): a request goes to a local
 * socket, the input comes back as the server's answer, then the server
 * closes. The request must end exactly once, with a status in range (or
 * none and a reason), and an answer body no longer than the bound.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "evloop.h"
#include "http_pool.h"
#include "netutil.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

#define MAX_ANSWER 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct evloop *loop;
static int listener = -1;
static char url[64];
static int done_calls;

static void on_done(void *arg, void *cookie, const struct http_pool_answer *a)
{
  done_calls++;
  CHECK(a->status == 0 || (a->status >= 200 && a->status <= 999));
  CHECK(a->status || a->error[0]);
  CHECK(a->body_len <= MAX_ANSWER && a->body[a->body_len] == 0);
}

static void stop(struct evloop *l, void *arg)
{
  evloop_stop(l);
}

/* One iteration of the loop, without waiting. */
static void turn(void)
{
  evloop_defer(loop, stop, NULL);
  evloop_run(loop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char err[NETUTIL_ERR_LEN];
  if (!loop) {
    CHECK((loop = evloop_create(1000)) != NULL);
    CHECK((listener = net_listen("127.0.0.1:0", err, sizeof err)) >= 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/dlr?id=1", net_local_port(listener));
  }
  if (size > 65536)
    return 0;
  struct http_pool_config cfg = { .connections = 1, .max_answer = MAX_ANSWER };
  struct http_pool *p = http_pool_create(loop, &cfg, on_done, NULL);
  struct http_pool_request rq = { .method = "GET", .url = url };
  done_calls = 0;
  CHECK(p && http_pool_send(p, &rq, NULL) == 0);
  int server = -1;
  for (int i = 0; i < 64 && server < 0; i++) {
    turn();
    server = accept(listener, NULL, NULL);   /* non-blocking: -1 until the connect came */
  }
  CHECK(server >= 0);
  /* The request first, then the answer: the client writes before it reads. */
  char request[1024];
  for (int i = 0; i < 64 && recv(server, request, sizeof request, MSG_DONTWAIT) <= 0; i++)
    turn();
  CHECK(send(server, data, size, MSG_NOSIGNAL) == (ssize_t)size || size == 0);
  shutdown(server, SHUT_WR);
  for (int i = 0; i < 256 && !done_calls; i++)
    turn();
  close(server);
  CHECK(done_calls == 1);
  http_pool_destroy(p);
  CHECK(done_calls == 1);
  return 0;
}
