/* test_tls.c - lib/tls.c: contexts refused for each bad file with its name
 * and reason (missing, expired, not yet valid, a key of another
 * certificate, a server without one, a bad version or cipher list), and
 * handshakes between our client and server over a socket pair: verified,
 * many writes read back whole, a wrong CA, a wrong host name, a client
 * certificate required and missing, and plain text sent to a TLS server.
 * The certificates are made here, with OpenSSL, in a temporary folder. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include "testutil.h"
#include "tls.h"

static char dir[64];

/* ---- certificates ---- */

static EVP_PKEY *new_key(void)
{
  return EVP_EC_gen("P-256");
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ext);
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
}

/* A certificate for cn (with san as subjectAltName, may be NULL), valid
 * from now + from_days to now + to_days, signed by issuer (NULL: itself). */
static X509 *new_cert(const char *cn, const char *san, EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key,
                      long from_days, long to_days, bool ca)
{
  static long serial = 1;
  X509 *x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(x), to_days * 86400);
  X509_set_pubkey(x, key);
  X509_NAME *name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"emg tests", -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
  X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
  add_ext(x, issuer ? issuer : x, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (san)
    add_ext(x, issuer ? issuer : x, NID_subject_alt_name, san);
  CU_ASSERT_FATAL(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
  return x;
}

static void write_pem(const char *name, X509 *x, EVP_PKEY *key)
{
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  if (x)
    PEM_write_X509(f, x);
  if (key)
    PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
  fclose(f);
}

/* The path of a file in dir: one string per name, so that settings may
 * keep it. */
static const char *file(const char *name)
{
  static struct {
    char name[32];
    char path[128];
  } paths[16];
  unsigned i = 0;
  while (i < 15 && paths[i].name[0] && strcmp(paths[i].name, name) != 0)
    i++;
  snprintf(paths[i].name, sizeof paths[i].name, "%s", name);
  snprintf(paths[i].path, sizeof paths[i].path, "%s/%s", dir, name);
  return paths[i].path;
}

/* ca.pem; server.pem (localhost, 127.0.0.1) with server.key; client.pem
 * with client.key; expired.pem, future.pem; other-ca.pem. */
static void make_certs(void)
{
  snprintf(dir, sizeof dir, "/tmp/emg-tls.XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  EVP_PKEY *ca_key = new_key(), *other_key = new_key(), *key = new_key(), *client_key = new_key();
  X509 *ca = new_cert("emg test CA", NULL, ca_key, NULL, NULL, -1, 365, true);
  X509 *other = new_cert("another CA", NULL, other_key, NULL, NULL, -1, 365, true);
  X509 *server = new_cert("localhost", "DNS:localhost,IP:127.0.0.1", key, ca, ca_key, -1, 365, false);
  X509 *client = new_cert("acme", NULL, client_key, ca, ca_key, -1, 365, false);
  X509 *expired = new_cert("localhost", "DNS:localhost", key, ca, ca_key, -30, -1, false);
  X509 *future = new_cert("localhost", "DNS:localhost", key, ca, ca_key, 10, 30, false);
  write_pem("ca.pem", ca, NULL);
  write_pem("other-ca.pem", other, NULL);
  write_pem("server.pem", server, NULL);
  write_pem("server.key", NULL, key);
  write_pem("client.pem", client, NULL);
  write_pem("client.key", NULL, client_key);
  write_pem("expired.pem", expired, NULL);
  write_pem("future.pem", future, NULL);
  write_pem("ca.key", NULL, ca_key);
  X509 *all[] = { ca, other, server, client, expired, future };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    X509_free(all[i]);
  EVP_PKEY *keys[] = { ca_key, other_key, key, client_key };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    EVP_PKEY_free(keys[i]);
}

static void remove_certs(void)
{
  const char *names[] = { "ca.pem", "other-ca.pem", "server.pem", "server.key", "client.pem",
                          "client.key", "expired.pem", "future.pem", "ca.key" };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    unlink(file(names[i]));
  rmdir(dir);
}

/* ---- contexts ---- */

static void refused(const struct tls_settings *s, bool server, const char *want)
{
  char err[TLS_ERR_LEN] = "";
  struct tls_ctx *ctx = tls_ctx_create(s, server, err);
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
  struct tls_ctx *ctx = tls_ctx_create(&ok, true, err);
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
  ctx = tls_ctx_create(&(struct tls_settings){ .ca = file("ca.pem"), .verify_peer = true }, false, err);
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
  p->ctx[0] = tls_ctx_create(client, false, err);
  p->ctx[1] = tls_ctx_create(server, true, err);
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
