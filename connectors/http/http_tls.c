/* http_tls.c - certificates for libmicrohttpd's HTTPS, swapped live
 * (http_tls.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "http_tls.h"

/* Certificates in a chain, at most. */
#define CHAIN_MAX 16
/* How long a replaced identity is kept: a handshake that took it has
 * long ended by then (libmicrohttpd drops a connection idle for 30 s). */
#define RETIRED_KEEP_S 3600

struct identity {
  gnutls_pcert_st certs[CHAIN_MAX];
  unsigned n_certs;
  gnutls_privkey_t key;
  time_t retired_at;
  struct identity *next;
};

struct http_tls {
  pthread_mutex_t lock;
  struct identity *current;
  struct identity *retired;
  struct MHD_Daemon *daemon;
  struct http_tls *next;           /* in the registry */
  char priorities[128];
  struct MHD_OptionItem options[3];
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct http_tls *registry;

static void identity_free(struct identity *id)
{
  if (!id)
    return;
  for (unsigned i = 0; i < id->n_certs; i++)
    gnutls_pcert_deinit(&id->certs[i]);
  if (id->key)
    gnutls_privkey_deinit(id->key);
  free(id);
}

static struct identity *identity_load(const char *cert, const char *key, char *err, size_t err_len)
{
  gnutls_datum_t data = { 0 };
  struct identity *id = calloc(1, sizeof *id);
  int rc;
  if (!id) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  if ((rc = gnutls_load_file(cert, &data)) < 0)
    goto cert_failed;
  id->n_certs = CHAIN_MAX;
  rc = gnutls_pcert_list_import_x509_raw(id->certs, &id->n_certs, &data, GNUTLS_X509_FMT_PEM, 0);
  gnutls_free(data.data);
  if (rc < 0) {
    id->n_certs = 0;
    goto cert_failed;
  }
  const char *key_file = key && *key ? key : cert;
  if ((rc = gnutls_load_file(key_file, &data)) < 0)
    goto key_failed;
  if ((rc = gnutls_privkey_init(&id->key)) >= 0)
    rc = gnutls_privkey_import_x509_raw(id->key, &data, GNUTLS_X509_FMT_PEM, NULL, 0);
  gnutls_free(data.data);
  if (rc < 0)
    goto key_failed;
  return id;
cert_failed:
  snprintf(err, err_len, "cert %s: %s", cert, gnutls_strerror(rc));
  identity_free(id);
  return NULL;
key_failed:
  snprintf(err, err_len, "key %s: %s", key_file, gnutls_strerror(rc));
  identity_free(id);
  return NULL;
}

/* GnuTLS asks for the server's certificate: the current identity of the
 * daemon the connection belongs to (libmicrohttpd makes the connection
 * the session's pointer). */
static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                    unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
  (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
  struct MHD_Connection *conn = gnutls_session_get_ptr(session);
  const union MHD_ConnectionInfo *info = conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON) : NULL;
  int rc = -1;
  pthread_mutex_lock(&registry_lock);
  for (struct http_tls *t = registry; t && info; t = t->next) {
    if (t->daemon != info->daemon)
      continue;
    pthread_mutex_lock(&t->lock);
    *pcert = t->current->certs;
    *pcert_length = t->current->n_certs;
    *privkey = t->current->key;
    pthread_mutex_unlock(&t->lock);
    rc = 0;
    break;
  }
  pthread_mutex_unlock(&registry_lock);
  return rc;
}

struct http_tls *http_tls_create(const char *cert, const char *key, const char *min_version, char *err, size_t err_len)
{
  struct http_tls *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  if (!(t->current = identity_load(cert, key, err, err_len))) {
    free(t);
    return NULL;
  }
  pthread_mutex_init(&t->lock, NULL);
  /* GnuTLS's defaults, from the lowest version allowed up. */
  snprintf(t->priorities, sizeof t->priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3%s",
           min_version && strcmp(min_version, "1.3") == 0 ? "" : ":+VERS-TLS1.2");
  t->options[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)retrieve };
  t->options[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, t->priorities };
  t->options[2] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
  return t;
}

int http_tls_reload(struct http_tls *t, const char *cert, const char *key, char *err, size_t err_len)
{
  struct identity *id = identity_load(cert, key, err, err_len);
  if (!id)
    return -1;
  time_t now = time(NULL);
  pthread_mutex_lock(&t->lock);
  struct identity *old = t->current;
  t->current = id;
  old->retired_at = now;
  old->next = t->retired;
  t->retired = old;
  /* Those replaced long ago can go: nothing uses them any more. */
  for (struct identity **p = &t->retired; *p;) {
    struct identity *r = *p;
    if (now - r->retired_at >= RETIRED_KEEP_S) {
      *p = r->next;
      identity_free(r);
    } else {
      p = &r->next;
    }
  }
  pthread_mutex_unlock(&t->lock);
  return 0;
}

const struct MHD_OptionItem *http_tls_options(struct http_tls *t)
{
  static const struct MHD_OptionItem none[] = { { MHD_OPTION_END, 0, NULL } };
  return t ? t->options : none;
}

unsigned http_tls_flags(const struct http_tls *t)
{
  return t ? MHD_USE_TLS : 0;
}

void http_tls_starting(void)
{
  pthread_mutex_lock(&registry_lock);
}

void http_tls_attach(struct http_tls *t, struct MHD_Daemon *daemon)
{
  if (t && daemon) {
    t->daemon = daemon;
    t->next = registry;
    registry = t;
  }
  pthread_mutex_unlock(&registry_lock);
}

void http_tls_detach(struct http_tls *t)
{
  if (!t)
    return;
  pthread_mutex_lock(&registry_lock);
  for (struct http_tls **p = &registry; *p; p = &(*p)->next)
    if (*p == t) {
      *p = t->next;
      break;
    }
  t->daemon = NULL;
  pthread_mutex_unlock(&registry_lock);
}

void http_tls_destroy(struct http_tls *t)
{
  if (!t)
    return;
  http_tls_detach(t);
  identity_free(t->current);
  while (t->retired) {
    struct identity *r = t->retired;
    t->retired = r->next;
    identity_free(r);
  }
  pthread_mutex_destroy(&t->lock);
  free(t);
}
