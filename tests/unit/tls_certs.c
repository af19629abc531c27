/* tls_certs.c - certificates for the TLS tests, made with OpenSSL's API in
 * a temporary folder: a CA, a server certificate for localhost and
 * 127.0.0.1, a client certificate, an expired one, one not yet valid, and
 * another CA.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include "testutil.h"
#include "tls_certs.h"

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
const char *file(const char *name)
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
void make_certs(void)
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

void remove_certs(void)
{
  const char *names[] = { "ca.pem", "other-ca.pem", "server.pem", "server.key", "client.pem",
                          "client.key", "expired.pem", "future.pem", "ca.key" };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    unlink(file(names[i]));
  rmdir(dir);
}

