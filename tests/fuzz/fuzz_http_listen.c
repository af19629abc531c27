/* fuzz_http_listen.c - libFuzzer target for the HTTP server's reading of
 * requests (http_listen over Debian's http-parser): the input arrives on a
 * connection as a client would send it, then the client stops sending. The
 * server must answer only with whole HTTP/1.1 answers, close the connection
 * in bounded time, and keep nothing of it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "evloop.h"
#include "http_listen.h"
#include "netutil.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct evloop *loop;
static struct http_listen *server;
static struct http_listen_loop *attached;
static unsigned requests;

/* Every request is answered at once, its body echoed. */
static void on_request(void *ctx, const struct http_request *r, struct http_pending *p)
{
  requests++;
  CHECK(r->method && r->path && r->query && r->body && r->body[r->body_len] == 0);
  /* Each name and value is read whole: a missing NUL shows as an overrun. */
  for (unsigned i = 0; i < r->n_headers; i++)
    CHECK(r->headers[i].name && r->headers[i].value && strlen(r->headers[i].name) + strlen(r->headers[i].value) < 8192);
  CHECK(strlen(r->path) + strlen(r->query) < 8192);
  http_answer(p, 200, "text/plain", (const char *)r->body, r->body_len, NULL, false);
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

static void setup(void)
{
  char err[NETUTIL_ERR_LEN];
  struct http_listen_config cfg = { .listen = "127.0.0.1:0", .max_body = 4096, .max_head = 4096, .pipeline = 4 };
  struct http_listen_handler h = { .on_request = on_request };
  loop = evloop_create(1000);
  server = http_listen_create(&cfg, &h, NULL, err, sizeof err);
  CHECK(loop && server);
  attached = http_listen_attach(server, loop, NULL);
  CHECK(attached);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char answer[1 << 20];
  int sv[2];
  if (!loop)
    setup();
  if (size > 65536)
    return 0;
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  fcntl(sv[1], F_SETFL, O_NONBLOCK);
  CHECK(http_listen_adopt(attached, sv[1], "127.0.0.1:1") == 0);
  CHECK(write(sv[0], data, size) == (ssize_t)size);
  shutdown(sv[0], SHUT_WR);
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  size_t len = 0;
  bool closed = false;
  for (int i = 0; i < 64 && !closed; i++) {
    turn();
    ssize_t n;
    while ((n = read(sv[0], answer + len, sizeof answer - 1 - len)) > 0)
      len += (size_t)n;
    closed = n == 0;
  }
  /* The client stopped sending: the server closes, after its answers. */
  CHECK(closed);
  answer[len] = 0;
  CHECK(len == 0 || strncmp(answer, "HTTP/1.1 ", 9) == 0);
  close(sv[0]);
  struct http_listen_stats st;
  http_listen_stats(server, &st);
  CHECK(http_listen_busy(server) == 0);
  return 0;
}
