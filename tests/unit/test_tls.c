/* test_tls.c - lib/tls.c: contexts refused for each bad file with its name
 * and reason (missing, expired, not yet valid, a key of another
 * certificate, a server without one, a bad version or cipher list), and
 * handshakes between our client and server over a socket pair: verified,
 * many writes read back whole, a wrong CA, a wrong host name, a client
 * certificate required and missing, and plain text sent to a TLS server.
 * The certificates are made with OpenSSL in a temporary folder
 * (tls_certs.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "testutil.h"
#include "tls.h"
#include "tls_certs.h"

/* ---- contexts ---- */

static void refused(const struct tls_settings *s, bool server, const char *want)
{
  char err[TLS_ERR_LEN] = "";
  struct tls_ctx *ctx = tls_ctx_create(s, server, err, sizeof err);
  CU_ASSERT_PTR_NULL(ctx);
  tls_ctx_unref(ctx);
  if (!strstr(err, want)) {
    fprintf(stderr, "\n  wanted \"%s\" in \"%s\"\n", want, err);
    CU_FAIL("the reason");
  }
}

static void test_contexts(void)
{
  make_certs();
  char err[TLS_ERR_LEN], subject[256], expires[64];
  struct tls_settings ok = { .cert = file("server.pem"), .key = file("server.key"), .ca = file("ca.pem") };
  struct tls_ctx *ctx = tls_ctx_create(&ok, true, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
  tls_ctx_describe(ctx, subject, sizeof subject, expires, sizeof expires);
  CU_ASSERT_STRING_EQUAL(subject, "CN=localhost,O=emg tests");
  CU_ASSERT_PTR_NOT_NULL(strstr(expires, "UTC"));
  tls_ctx_unref(ctx);

  struct tls_settings s = ok;
  s.cert = "/nonexistent/server.pem";
  refused(&s, true, "cert /nonexistent/server.pem: No such file or directory");
  s = ok;
  s.cert = file("expired.pem");
  refused(&s, true, "expired on");
  s.cert = file("future.pem");
  refused(&s, true, "not valid before");
  s = ok;
  s.key = file("client.key");
  refused(&s, true, "does not match the certificate");
  s = ok;
  s.cert = s.key = file("ca.key");   /* a key where the certificate belongs */
  refused(&s, true, "cert ");
  refused(&(struct tls_settings){ .ca = file("ca.pem") }, true, "a TLS server needs a certificate");
  s = ok;
  s.min_version = "1.1";
  refused(&s, true, "min_version \"1.1\"");
  s = ok;
  s.ciphers = "NO-SUCH-CIPHER";
  refused(&s, true, "ciphers \"NO-SUCH-CIPHER\"");
  s = ok;
  s.ca = NULL;
  s.verify_peer = true;
  refused(&s, true, "needs ca");
  /* A client needs no certificate of its own. */
  ctx = tls_ctx_create(&(struct tls_settings){ .ca = file("ca.pem"), .verify_peer = true }, false, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL(ctx);
  tls_ctx_unref(ctx);
  remove_certs();
}

/* ---- handshakes over a socket pair ---- */

struct pair {
  int fd[2];
  struct tls_ctx *ctx[2];
  struct tls_conn *conn[2];
};

static bool pair_open(struct pair *p, const struct tls_settings *client, const struct tls_settings *server,
                      const char *server_name)
{
  char err[TLS_ERR_LEN];
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, p->fd), 0);
  for (int i = 0; i < 2; i++)
    fcntl(p->fd[i], F_SETFL, O_NONBLOCK);
  p->ctx[0] = tls_ctx_create(client, false, err, sizeof err);
  p->ctx[1] = tls_ctx_create(server, true, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p->ctx[0]);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p->ctx[1]);
  p->conn[0] = tls_conn_create(p->ctx[0], p->fd[0], false, server_name);
  p->conn[1] = tls_conn_create(p->ctx[1], p->fd[1], true, NULL);
  /* The contexts live on in their connections. */
  tls_ctx_unref(p->ctx[0]);
  tls_ctx_unref(p->ctx[1]);
  return p->conn[0] && p->conn[1];
}

/* Both sides' handshakes moved on in turn: 1 when both are done, or -1
 * with *failed the side that failed (0 client, 1 server). */
static int handshake(struct pair *p, int *failed)
{
  for (int round = 0; round < 100; round++) {
    bool done = true;
    for (int i = 0; i < 2; i++) {
      enum tls_status st = tls_handshake(p->conn[i]);
      if (st == TLS_ERROR || st == TLS_CLOSED) {
        *failed = i;
        return -1;
      }
      done = done && st == TLS_OK;
    }
    if (done)
      return 1;
  }
  *failed = -1;
  return -1;
}

static void pair_close(struct pair *p)
{
  for (int i = 0; i < 2; i++) {
    tls_conn_free(p->conn[i]);
    close(p->fd[i]);
  }
}

static const struct tls_settings *server_settings(void)
{
  static struct tls_settings s;
  s = (struct tls_settings){ .cert = file("server.pem"), .key = file("server.key"), .ca = file("ca.pem") };
  return &s;
}

static void test_handshakes(void)
{
  make_certs();
  struct tls_settings client = { .ca = file("ca.pem"), .verify_peer = true };
  struct pair p;
  int failed;
  char text[128];

  /* Verified by name and by address; many writes, one read each side. */
  const char *names[] = { "localhost", "127.0.0.1" };
  for (size_t n = 0; n < 2; n++) {
    CU_ASSERT_TRUE_FATAL(pair_open(&p, &client, server_settings(), names[n]));
    CU_ASSERT_EQUAL(handshake(&p, &failed), 1);
    tls_conn_describe(p.conn[0], text, sizeof text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "TLSv1."));
    CU_ASSERT_STRING_EQUAL(tls_peer_subject(p.conn[0]), "CN=localhost,O=emg tests");
    CU_ASSERT_STRING_EQUAL(tls_peer_subject(p.conn[1]), "");   /* no client certificate */
    char out[20000], in[20000];
    for (size_t i = 0; i < sizeof out; i++)
      out[i] = (char)('a' + i % 26);
    ssize_t put = tls_write(p.conn[0], out, sizeof out);
    CU_ASSERT(put > 0);
    size_t got = 0;
    for (int round = 0; round < 100 && got < (size_t)put; round++) {
      ssize_t r = tls_read(p.conn[1], in + got, sizeof in - got);
      if (r > 0)
        got += (size_t)r;
      else
        CU_ASSERT_EQUAL(r, TLS_WANT_READ);
    }
    CU_ASSERT_EQUAL(got, (size_t)put);
    CU_ASSERT_EQUAL(memcmp(in, out, got), 0);
    tls_close(p.conn[0]);
    CU_ASSERT_EQUAL(tls_read(p.conn[1], in, sizeof in), TLS_CLOSED);
    pair_close(&p);
  }

  /* Another CA: the client refuses the server's certificate. */
  struct tls_settings other = { .ca = file("other-ca.pem"), .verify_peer = true };
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &other, server_settings(), "localhost"));
  CU_ASSERT_EQUAL(handshake(&p, &failed), -1);
  CU_ASSERT_EQUAL(failed, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(tls_conn_error(p.conn[0]), "certificate verify failed"));
  pair_close(&p);

  /* Another name. */
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &client, server_settings(), "smsc.example.net"));
  CU_ASSERT_EQUAL(handshake(&p, &failed), -1);
  CU_ASSERT_EQUAL(failed, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(tls_conn_error(p.conn[0]), "hostname mismatch"));
  pair_close(&p);

  /* A server that requires client certificates: none, then one. */
  struct tls_settings strict = *server_settings();
  strict.verify_peer = true;
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &client, &strict, "localhost"));
  CU_ASSERT_EQUAL(handshake(&p, &failed), -1);
  CU_ASSERT_EQUAL(failed, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(tls_conn_error(p.conn[1]), "certificate"));
  pair_close(&p);
  struct tls_settings with_cert = client;
  with_cert.cert = file("client.pem");
  with_cert.key = file("client.key");
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &with_cert, &strict, "localhost"));
  CU_ASSERT_EQUAL(handshake(&p, &failed), 1);
  CU_ASSERT_STRING_EQUAL(tls_peer_subject(p.conn[1]), "CN=acme,O=emg tests");
  pair_close(&p);

  /* A server with ca but without verify_peer: a client certificate is
   * optional, and taken (subject known) when it is sent. */
  struct tls_settings asks = *server_settings();
  asks.ca = file("ca.pem");
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &client, &asks, "localhost"));
  CU_ASSERT_EQUAL(handshake(&p, &failed), 1);
  CU_ASSERT_STRING_EQUAL(tls_peer_subject(p.conn[1]), "");
  pair_close(&p);
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &with_cert, &asks, "localhost"));
  CU_ASSERT_EQUAL(handshake(&p, &failed), 1);
  CU_ASSERT_STRING_EQUAL(tls_peer_subject(p.conn[1]), "CN=acme,O=emg tests");
  pair_close(&p);

  /* Plain SMPP (a bind_transceiver's header) sent to a TLS server. */
  CU_ASSERT_TRUE_FATAL(pair_open(&p, &client, server_settings(), "localhost"));
  static const unsigned char bind[] = { 0, 0, 0, 0x2f, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 'e', 'm', 'g', 0 };
  CU_ASSERT_EQUAL(write(p.fd[0], bind, sizeof bind), (ssize_t)sizeof bind);
  CU_ASSERT_EQUAL(tls_handshake(p.conn[1]), TLS_ERROR);
  CU_ASSERT_PTR_NOT_NULL(strstr(tls_conn_error(p.conn[1]), "not TLS"));
  pair_close(&p);
  remove_certs();
}

void suite_tls(void);
void suite_tls(void)
{
  static const struct test_case cases[] = {
    { "contexts: each bad file refused with its name and reason", test_contexts },
    { "handshakes: verified, wrong CA, wrong name, client certificates, plain text", test_handshakes },
    { NULL, NULL },
  };
  test_add_suite("tls", cases);
}
