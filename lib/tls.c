/* tls.c - TLS contexts and non-blocking connections on OpenSSL 3.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include "iobuf.h"
#include "tls.h"

struct tls_ctx {
  SSL_CTX *ssl;
  _Atomic unsigned refs;
  bool server;
};

struct tls_conn {
  struct tls_ctx *ctx;
  SSL *ssl;
  bool done;                       /* handshake finished */
  char subject[256];
  char error[TLS_ERR_LEN];
};

/* ---- contexts ---- */

/* The reason OpenSSL queued last, or fallback; the queue emptied. */
/* What one read(2) of a connection may take in. */
#define TLS_READ_AHEAD (64 * 1024)

static const char *openssl_reason(char *buf, size_t len, const char *fallback)
{
  unsigned long e, last = 0;
  while ((e = ERR_get_error()) != 0)
    last = e;
  const char *reason = last ? ERR_reason_error_string(last) : NULL;
  snprintf(buf, len, "%s", reason ? reason : fallback);
  return buf;
}

/* A file that cannot even be opened says why in the system's words. */
static bool readable(const char *what, const char *path, char *err, size_t err_len)
{
  FILE *f = fopen(path, "r");
  if (f) {
    fclose(f);
    return true;
  }
  snprintf(err, err_len, "%s %s: %s", what, path, strerror(errno));
  return false;
}

static void asn1_time_text(const ASN1_TIME *t, char *out, size_t len)
{
  struct tm tm;
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) {
    snprintf(out, len, "?");
    return;
  }
  strftime(out, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* The certificate in use is valid now. */
static bool in_date(SSL_CTX *ssl, const char *path, char *err, size_t err_len)
{
  X509 *x = SSL_CTX_get0_certificate(ssl);
  char when[48];
  if (!x)
    return true;
  if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
    asn1_time_text(X509_get0_notAfter(x), when, sizeof when);
    snprintf(err, err_len, "cert %s: expired on %s", path, when);
    return false;
  }
  if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
    asn1_time_text(X509_get0_notBefore(x), when, sizeof when);
    snprintf(err, err_len, "cert %s: not valid before %s", path, when);
    return false;
  }
  return true;
}

static bool set_version_and_ciphers(SSL_CTX *ssl, const struct tls_settings *s, char *err, size_t err_len)
{
  const char *v = s->min_version && *s->min_version ? s->min_version : "1.2";
  int version = strcmp(v, "1.2") == 0 ? TLS1_2_VERSION : strcmp(v, "1.3") == 0 ? TLS1_3_VERSION : 0;
  if (!version) {
    snprintf(err, err_len, "min_version \"%s\": must be \"1.2\" or \"1.3\"", v);
    return false;
  }
  SSL_CTX_set_min_proto_version(ssl, version);
  char why[128];
  if (s->ciphers && *s->ciphers && SSL_CTX_set_cipher_list(ssl, s->ciphers) != 1) {
    snprintf(err, err_len, "ciphers \"%s\": %s", s->ciphers, openssl_reason(why, sizeof why, "no usable cipher"));
    return false;
  }
  return true;
}

static bool load_identity(SSL_CTX *ssl, const struct tls_settings *s, bool server, char *err, size_t err_len)
{
  char why[128];
  bool has_cert = s->cert && *s->cert;
  if (!has_cert) {
    if (server) {
      snprintf(err, err_len, "cert: a TLS server needs a certificate and its key");
      return false;
    }
    return true;   /* a client without a certificate of its own */
  }
  const char *key = s->key && *s->key ? s->key : s->cert;
  if (!readable("cert", s->cert, err, err_len) || !readable("key", key, err, err_len))
    return false;
  if (SSL_CTX_use_certificate_chain_file(ssl, s->cert) != 1) {
    snprintf(err, err_len, "cert %s: %s", s->cert, openssl_reason(why, sizeof why, "not a PEM certificate"));
    return false;
  }
  if (!in_date(ssl, s->cert, err, err_len))
    return false;
  if (SSL_CTX_use_PrivateKey_file(ssl, key, SSL_FILETYPE_PEM) != 1) {
    openssl_reason(why, sizeof why, "not a PEM private key");
    if (strcmp(why, "key values mismatch") == 0)
      snprintf(err, err_len, "key %s: does not match the certificate %s", key, s->cert);
    else
      snprintf(err, err_len, "key %s: %s", key, why);
    return false;
  }
  if (SSL_CTX_check_private_key(ssl) != 1) {
    ERR_clear_error();
    snprintf(err, err_len, "key %s: does not match the certificate %s", key, s->cert);
    return false;
  }
  return true;
}

static bool load_trust(SSL_CTX *ssl, const struct tls_settings *s, bool server, char *err, size_t err_len)
{
  char why[128];
  bool has_ca = s->ca && *s->ca;
  if (has_ca) {
    if (!readable("ca", s->ca, err, err_len))
      return false;
    if (SSL_CTX_load_verify_locations(ssl, s->ca, NULL) != 1) {
      snprintf(err, err_len, "ca %s: %s", s->ca, openssl_reason(why, sizeof why, "no PEM certificate in it"));
      return false;
    }
  } else if (!server && SSL_CTX_set_default_verify_paths(ssl) != 1) {
    ERR_clear_error();
  }
  if (server && has_ca) {
    /* Asked of every client, checked when sent, required only with
     * verify_peer: without it, a certificate can still stand for an
     * account (tls_peer_subject) while other clients bind by password. */
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(s->ca);
    if (names)
      SSL_CTX_set_client_CA_list(ssl, names);
    ERR_clear_error();
    SSL_CTX_set_verify(ssl, SSL_VERIFY_PEER | (s->verify_peer ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
  } else if (server && s->verify_peer) {
    snprintf(err, err_len, "verify_peer: a server that requires client certificates needs ca");
    return false;
  } else {
    SSL_CTX_set_verify(ssl, s->verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
  }
  return true;
}

struct tls_ctx *tls_ctx_create(const struct tls_settings *s, bool server, char *err, size_t err_len)
{
  ERR_clear_error();
  struct tls_ctx *ctx = calloc(1, sizeof *ctx);
  SSL_CTX *ssl = ctx ? SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) : NULL;
  if (!ssl) {
    snprintf(err, err_len, "out of memory");
    free(ctx);
    return NULL;
  }
  /* Writes of a buffer that may move between tries, taken in part when
   * the socket is full; no renegotiation (a way to make a server work). */
  SSL_CTX_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ssl, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  /* Reads take what the socket holds, many records at once, rather than
   * a record's header and then its body: two read(2) a record otherwise. */
  SSL_CTX_set_read_ahead(ssl, 1);
  SSL_CTX_set_default_read_buffer_len(ssl, TLS_READ_AHEAD);
  if (server)
    SSL_CTX_set_session_id_context(ssl, (const unsigned char *)"emg", 3);
  if (!set_version_and_ciphers(ssl, s, err, err_len) || !load_identity(ssl, s, server, err, err_len) ||
      !load_trust(ssl, s, server, err, err_len)) {
    ERR_clear_error();
    SSL_CTX_free(ssl);
    free(ctx);
    return NULL;
  }
  ctx->ssl = ssl;
  ctx->server = server;
  atomic_init(&ctx->refs, 1);
  return ctx;
}

void tls_ctx_ref(struct tls_ctx *ctx)
{
  atomic_fetch_add(&ctx->refs, 1);
}

void tls_ctx_unref(struct tls_ctx *ctx)
{
  if (ctx && atomic_fetch_sub(&ctx->refs, 1) == 1) {
    SSL_CTX_free(ctx->ssl);
    free(ctx);
  }
}

static void name_text(const X509_NAME *name, char *out, size_t len)
{
  out[0] = 0;
  BIO *b = name ? BIO_new(BIO_s_mem()) : NULL;
  if (!b)
    return;
  X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253);
  int n = BIO_read(b, out, (int)len - 1);
  out[n > 0 ? n : 0] = 0;
  BIO_free(b);
}

void tls_ctx_describe(const struct tls_ctx *ctx, char *subject, size_t subject_len, char *expires,
                      size_t expires_len)
{
  X509 *x = SSL_CTX_get0_certificate(ctx->ssl);
  subject[0] = expires[0] = 0;
  if (!x)
    return;
  name_text(X509_get_subject_name(x), subject, subject_len);
  asn1_time_text(X509_get0_notAfter(x), expires, expires_len);
}

/* ---- connections ---- */

struct tls_conn *tls_conn_create(struct tls_ctx *ctx, int fd, bool server, const char *server_name)
{
  struct tls_conn *c = calloc(1, sizeof *c);
  if (!c || !(c->ssl = SSL_new(ctx->ssl))) {
    free(c);
    ERR_clear_error();
    return NULL;
  }
  SSL_set_fd(c->ssl, fd);
  if (server) {
    SSL_set_accept_state(c->ssl);
  } else {
    SSL_set_connect_state(c->ssl);
    if (server_name && *server_name) {
      unsigned char ip[16];
      bool is_ip = inet_pton(AF_INET, server_name, ip) == 1 || inet_pton(AF_INET6, server_name, ip) == 1;
      if (!is_ip)
        SSL_set_tlsext_host_name(c->ssl, server_name);   /* SNI names hosts, never addresses */
      if (SSL_CTX_get_verify_mode(ctx->ssl) & SSL_VERIFY_PEER) {
        X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
        if (is_ip)
          X509_VERIFY_PARAM_set1_ip_asc(param, server_name);
        else
          SSL_set1_host(c->ssl, server_name);
      }
    }
  }
  tls_ctx_ref(ctx);
  c->ctx = ctx;
  return c;
}

void tls_conn_free(struct tls_conn *c)
{
  if (!c)
    return;
  SSL_free(c->ssl);
  tls_ctx_unref(c->ctx);
  free(c);
}

/* What SSL_get_error says of a call that returned rc, as a status; the
 * reason kept for tls_conn_error. */
static int status_of(struct tls_conn *c, int rc)
{
  int e = SSL_get_error(c->ssl, rc);
  char why[128];
  switch (e) {
  case SSL_ERROR_WANT_READ:
    return TLS_WANT_READ;
  case SSL_ERROR_WANT_WRITE:
    return TLS_WANT_WRITE;
  case SSL_ERROR_ZERO_RETURN:
    snprintf(c->error, sizeof c->error, "the peer closed the TLS session");
    return TLS_CLOSED;
  case SSL_ERROR_SYSCALL:
    if (ERR_peek_error() == 0) {
      snprintf(c->error, sizeof c->error, "%s", errno && rc < 0 ? strerror(errno) : "the peer closed the connection");
      ERR_clear_error();
      return TLS_CLOSED;
    }
    __attribute__((fallthrough));   /* OpenSSL queued the reason */
  default:
    openssl_reason(why, sizeof why, "TLS error");
    long verify = SSL_get_verify_result(c->ssl);
    if (verify != X509_V_OK)
      snprintf(c->error, sizeof c->error, "%s: %s", why, X509_verify_cert_error_string(verify));
    else if (strcmp(why, "wrong version number") == 0 || strcmp(why, "http request") == 0 ||
             strcmp(why, "packet length too long") == 0 || strcmp(why, "record layer failure") == 0)
      snprintf(c->error, sizeof c->error, "%s: not TLS (plain text sent to a TLS port?)", why);
    else
      snprintf(c->error, sizeof c->error, "%s", why);
    return TLS_ERROR;
  }
}

enum tls_status tls_handshake(struct tls_conn *c)
{
  if (c->done)
    return TLS_OK;
  ERR_clear_error();
  int rc = SSL_do_handshake(c->ssl);
  if (rc != 1)
    return (enum tls_status)status_of(c, rc);
  c->done = true;
  X509 *peer = SSL_get0_peer_certificate(c->ssl);
  if (peer)
    name_text(X509_get_subject_name(peer), c->subject, sizeof c->subject);
  return TLS_OK;
}

bool tls_handshake_done(const struct tls_conn *c)
{
  return c->done;
}

ssize_t tls_read(struct tls_conn *c, void *buf, size_t len)
{
  ERR_clear_error();
  size_t got = 0;
  int rc = SSL_read_ex(c->ssl, buf, len, &got);
  return rc == 1 ? (ssize_t)got : status_of(c, rc);
}

ssize_t tls_write(struct tls_conn *c, const void *buf, size_t len)
{
  ERR_clear_error();
  size_t put = 0;
  int rc = SSL_write_ex(c->ssl, buf, len, &put);
  return rc == 1 ? (ssize_t)put : status_of(c, rc);
}

bool tls_pending(const struct tls_conn *c)
{
  /* Decrypted bytes, or records read ahead and not yet decrypted. */
  return SSL_has_pending(c->ssl) == 1;
}

void tls_close(struct tls_conn *c)
{
  if (c->done) {
    ERR_clear_error();
    SSL_shutdown(c->ssl);
    ERR_clear_error();
  }
}

const char *tls_conn_error(const struct tls_conn *c)
{
  return c->error[0] ? c->error : "no error";
}

const char *tls_peer_subject(const struct tls_conn *c)
{
  return c->subject;
}

void tls_conn_describe(const struct tls_conn *c, char *out, size_t len)
{
  snprintf(out, len, "%s %s", SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl));
}

ssize_t tls_read_into(struct tls_conn *c, struct iobuf *in, size_t max, char *err, size_t err_len)
{
  err[0] = 0;
  uint8_t *room = iobuf_reserve(in, max);
  if (!room) {
    snprintf(err, err_len, "read: out of memory");
    errno = ENOMEM;
    return -1;
  }
  ssize_t n = tls_read(c, room, max);
  if (n > 0) {
    iobuf_commit(in, (size_t)n);
    return n;
  }
  if (n == TLS_WANT_READ || n == TLS_WANT_WRITE) {
    errno = EAGAIN;   /* a write the read needs goes with the next flush */
    return -1;
  }
  if (n == TLS_CLOSED)
    return 0;
  snprintf(err, err_len, "read: TLS: %s", tls_conn_error(c));
  errno = EPROTO;
  return -1;
}

ssize_t tls_write_from(struct tls_conn *c, struct iobuf *out, bool *wants_read, char *err, size_t err_len)
{
  ssize_t total = 0;
  while (iobuf_len(out)) {
    ssize_t n = tls_write(c, iobuf_head(out), iobuf_len(out));
    if (n > 0) {
      iobuf_consume(out, (size_t)n);
      total += n;
    } else if (n == TLS_WANT_WRITE) {
      break;
    } else if (n == TLS_WANT_READ) {
      *wants_read = true;
      break;
    } else {
      snprintf(err, err_len, "write: TLS: %s", tls_conn_error(c));
      return -1;
    }
  }
  return total;
}
