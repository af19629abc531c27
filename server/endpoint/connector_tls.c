/* connector_tls.c - a connector's TLS: the context its connections begin
 * with, and a reload's new certificates put in place without touching
 * the connections made.
 *
 * A server's listener takes the current context for each connection it
 * accepts; a client's instances take it, on their own thread, for their
 * next connect; an HTTP server connector's listener takes it for each
 * connection it accepts, as a session server's does.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>
#include "connector_internal.h"
#include "netutil.h"
#include "tls.h"

static void log_certificate(struct connector *c, struct tls_ctx *ctx, const char *what)
{
  char subject[256], expires[64];
  if (!ctx)
    return;
  tls_ctx_describe(ctx, subject, sizeof subject, expires, sizeof expires);
  if (subject[0])
    LOGI(c->log, "TLS %s: certificate %s, valid until %s", what, subject, expires);
  else
    LOGI(c->log, "TLS %s", what);
}

int connector_tls_init(struct connector *c, char *err, size_t err_len)
{
  const struct config_tls *t = &c->cfg->tls;
  pthread_mutex_init(&c->tls_lock, NULL);
  if (!t->enabled)
    return 0;
  if (c->ops->tls == ENDPOINT_TLS_OWN) {
    if (!t->verify_peer)
      LOGW(c->log, "tls.verify_peer = false: the provider's certificate and name are not checked");
    return 0;
  }
  if ((c->tls = t->ctx))
    tls_ctx_ref(c->tls);
  snprintf(c->tls_server_name, sizeof c->tls_server_name, "%s", t->server_name);
  log_certificate(c, c->tls, c->ops->tls == ENDPOINT_TLS_ACCEPTS ? "on every connection" : "to the SMSC");
  return 0;
}

struct tls_ctx *connector_tls_current(struct connector *c, char server_name[CONNECTOR_TLS_NAME_LEN])
{
  pthread_mutex_lock(&c->tls_lock);
  struct tls_ctx *ctx = c->tls;
  if (ctx)
    tls_ctx_ref(ctx);
  if (server_name)
    memcpy(server_name, c->tls_server_name, CONNECTOR_TLS_NAME_LEN);
  pthread_mutex_unlock(&c->tls_lock);
  return ctx;
}

int connector_tls_reload(struct connector *c, const struct config_tls *next, char *err, size_t err_len)
{
  if (c->ops->tls == ENDPOINT_TLS_OWN)
    return 0;   /* built when its instances start */
  pthread_mutex_lock(&c->tls_lock);
  struct tls_ctx *old = c->tls;
  if ((c->tls = next->ctx))
    tls_ctx_ref(c->tls);
  snprintf(c->tls_server_name, sizeof c->tls_server_name, "%s", next->server_name);
  pthread_mutex_unlock(&c->tls_lock);
  tls_ctx_unref(old);
  if (c->http_server)
    http_server_set_tls(c->http_server, next->ctx);
  if (next->ctx)
    log_certificate(c, next->ctx, "reloaded, for the connections to come");
  else if (old)
    LOGI(c->log, "TLS off for the connections to come");
  atomic_fetch_add(&c->tls_generation, 1);
  for (unsigned i = 0; c->ops->tls == ENDPOINT_TLS_CONNECTS && i < c->n_instances; i++)
    if (c->instances[i].started)
      evloop_wake(c->instances[i].loop);
  return 0;
}

void connector_tls_take(struct instance *in)
{
  struct connector *c = in->conn;
  unsigned generation = atomic_load(&c->tls_generation);
  if (generation == in->tls_generation || !in->session)
    return;
  in->tls_generation = generation;
  char server_name[CONNECTOR_TLS_NAME_LEN];
  struct tls_ctx *ctx = connector_tls_current(c, server_name);
  session_set_tls(in->session, ctx, server_name);
  tls_ctx_unref(ctx);
}

void connector_tls_free(struct connector *c)
{
  tls_ctx_unref(c->tls);
  c->tls = NULL;
  pthread_mutex_destroy(&c->tls_lock);
}
