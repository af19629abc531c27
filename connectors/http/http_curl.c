/* http_curl.c - curl multi on an evloop: socket and timer callbacks.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "clock.h"
#include "http_curl.h"

struct http_curl {
  struct evloop *loop;
  CURLM *multi;
  http_curl_done_fn done;
  void *arg;
  uint64_t deadline_ms;   /* when curl wants its timeout action; UINT64_MAX = never */
  bool deferred;          /* a deferred timeout action is pending in the loop */
  bool dead;              /* destroyed while deferred: the deferred callback frees */
  int *fds;               /* the sockets the loop watches for curl */
  size_t fd_count, fd_cap;
};

static int fd_track(struct http_curl *hc, int fd)
{
  if (hc->fd_count == hc->fd_cap) {
    size_t cap = hc->fd_cap ? hc->fd_cap * 2 : 16;
    int *fds = realloc(hc->fds, cap * sizeof *fds);
    if (!fds)
      return -1;
    hc->fds = fds;
    hc->fd_cap = cap;
  }
  hc->fds[hc->fd_count++] = fd;
  return 0;
}

static void fd_untrack(struct http_curl *hc, int fd)
{
  for (size_t i = 0; i < hc->fd_count; i++)
    if (hc->fds[i] == fd) {
      hc->fds[i] = hc->fds[--hc->fd_count];
      return;
    }
}

static void finish(struct http_curl *hc)
{
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(hc->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    CURL *easy = m->easy_handle;
    CURLcode result = m->data.result;
    curl_multi_remove_handle(hc->multi, easy);
    hc->done(hc->arg, easy, result);
  }
}

static void timeout_action(struct http_curl *hc)
{
  int running;
  hc->deadline_ms = UINT64_MAX;
  curl_multi_socket_action(hc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  finish(hc);
}

static void on_io(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct http_curl *hc = arg;
  int running;
  int flags = (events & EVLOOP_READ ? CURL_CSELECT_IN : 0) | (events & EVLOOP_WRITE ? CURL_CSELECT_OUT : 0);
  curl_multi_socket_action(hc->multi, fd, flags, &running);
  finish(hc);
}

static void on_deferred(struct evloop *loop, void *arg)
{
  struct http_curl *hc = arg;
  hc->deferred = false;
  if (hc->dead) {
    free(hc);
    return;
  }
  if (hc->deadline_ms <= clock_now_ms())
    timeout_action(hc);
}

static void on_tick(struct evloop *loop, void *arg)
{
  struct http_curl *hc = arg;
  if (hc->deadline_ms <= clock_now_ms())
    timeout_action(hc);
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
  struct http_curl *hc = userp;
  unsigned events = (what & CURL_POLL_IN ? EVLOOP_READ : 0u) | (what & CURL_POLL_OUT ? EVLOOP_WRITE : 0u);
  if (what == CURL_POLL_REMOVE) {
    evloop_remove(hc->loop, s);
    fd_untrack(hc, s);
    return 0;
  }
  if (socketp)
    return evloop_modify(hc->loop, s, events) == 0 ? 0 : -1;
  if (fd_track(hc, s) == -1)
    return -1;
  /* A number curl closed behind our back and opened again: watch it afresh. */
  if (evloop_add(hc->loop, s, events, on_io, hc) == -1) {
    evloop_remove(hc->loop, s);
    if (evloop_add(hc->loop, s, events, on_io, hc) == -1) {
      fd_untrack(hc, s);
      return -1;
    }
  }
  curl_multi_assign(hc->multi, s, hc);
  return 0;
}

/* curl may not act from inside this callback: a timeout of 0 runs from the
 * end of this loop iteration, longer ones from the ticks. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
  struct http_curl *hc = userp;
  if (timeout_ms < 0) {
    hc->deadline_ms = UINT64_MAX;
    return 0;
  }
  hc->deadline_ms = clock_now_ms() + (uint64_t)timeout_ms;
  if (timeout_ms == 0 && !hc->deferred) {
    if (evloop_defer(hc->loop, on_deferred, hc) == -1)
      return -1;
    hc->deferred = true;
  }
  return 0;
}

struct http_curl *http_curl_create(struct evloop *loop, unsigned max_connections,
                                   http_curl_done_fn done, void *arg)
{
  struct http_curl *hc = calloc(1, sizeof *hc);
  if (!hc || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    free(hc);
    return NULL;
  }
  hc->loop = loop;
  hc->done = done;
  hc->arg = arg;
  hc->deadline_ms = UINT64_MAX;
  hc->multi = curl_multi_init();
  if (!hc->multi || evloop_tick(loop, on_tick, hc) == -1) {
    if (hc->multi)
      curl_multi_cleanup(hc->multi);
    curl_global_cleanup();
    free(hc);
    return NULL;
  }
  long connections = max_connections ? (long)max_connections : 1;
  curl_multi_setopt(hc->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(hc->multi, CURLMOPT_SOCKETDATA, hc);
  curl_multi_setopt(hc->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(hc->multi, CURLMOPT_TIMERDATA, hc);
  curl_multi_setopt(hc->multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(hc->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections);
  curl_multi_setopt(hc->multi, CURLMOPT_MAXCONNECTS, connections);
  return hc;
}

int http_curl_add(struct http_curl *hc, CURL *easy)
{
  return curl_multi_add_handle(hc->multi, easy) == CURLM_OK ? 0 : -1;
}

void http_curl_remove(struct http_curl *hc, CURL *easy)
{
  curl_multi_remove_handle(hc->multi, easy);
}

void http_curl_destroy(struct http_curl *hc)
{
  if (!hc)
    return;
  evloop_untick(hc->loop, on_tick, hc);
  /* Closes the cached connections; what curl did not report removed is
   * unwatched here, so the loop keeps no stale watcher for a reused number. */
  curl_multi_cleanup(hc->multi);
  hc->multi = NULL;
  for (size_t i = 0; i < hc->fd_count; i++)
    evloop_remove(hc->loop, hc->fds[i]);
  free(hc->fds);
  hc->fds = NULL;
  hc->fd_count = 0;
  curl_global_cleanup();
  if (hc->deferred)
    hc->dead = true;
  else
    free(hc);
}

void http_curl_tls_apply(CURL *easy, const struct http_curl_tls *t)
{
  bool verify = !t || !t->insecure;
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
  if (!t)
    return;
  if (t->ca && *t->ca)
    curl_easy_setopt(easy, CURLOPT_CAINFO, t->ca);
  if (t->cert && *t->cert) {
    curl_easy_setopt(easy, CURLOPT_SSLCERT, t->cert);
    curl_easy_setopt(easy, CURLOPT_SSLKEY, t->key && *t->key ? t->key : t->cert);
  }
}
