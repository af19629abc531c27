/* config_tls.c - the tls = { ... } groups of connectors and of the admin
 * API, and the files configuration keys name.
 *
 * A group's files are checked whole when the configuration is loaded
 * (readable, PEM, not expired, the key matching the certificate), so that
 * a bad certificate is refused with the file, the line and the reason at
 * start, by --check-config and by a reload, before anything changes. For
 * sessions the context built then is the one the connector takes.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>
#include "config_internal.h"
#include "tls.h"

#define TARGET struct config_tls
static const struct key tls_keys[] = {
  { FILE_KEY("cert", cert, 1) },
  { FILE_KEY("key", key, 1) },
  { FILE_KEY("ca", ca, 1) },
  { BOOL_KEY("verify_peer", verify_peer, false) },     /* the default depends on the role */
  { STRING_KEY("server_name", server_name, 1) },
  { STRING_KEY("min_version", min_version, 1), .def_str = "1.2" },
  { STRING_KEY("ciphers", ciphers, 1) },
};
#undef TARGET
const struct section tls_section = { SECTION(tls_keys) };

void config_ca_check(struct load *ld, const config_setting_t *where, const char *path, const char *file)
{
  char err[TLS_ERR_LEN];
  struct tls_settings s = { .ca = file, .verify_peer = true, .min_version = "1.2" };
  struct tls_ctx *ctx = tls_ctx_create(&s, false, err, sizeof err);
  if (!ctx)
    report(ld, where, path, "%s", err);
  tls_ctx_unref(ctx);
}

/* Keys a role has no use for: written, they would be silently ignored. */
static const char *unused_key(const config_setting_t *grp, enum config_tls_role role)
{
  static const char *const session_server[] = { "server_name", NULL };
  static const char *const http_server[] = { "server_name", "ca", "verify_peer", "ciphers", NULL };
  static const char *const http_client[] = { "server_name", "ciphers", NULL };
  const char *const *none = (const char *const[]){ NULL };
  const char *const *unused = role == CONFIG_TLS_SESSION_SERVER || role == CONFIG_TLS_HTTP_CONNECTOR_SERVER
                                ? session_server
                              : role == CONFIG_TLS_HTTP_SERVER  ? http_server
                              : role == CONFIG_TLS_HTTP_CLIENT  ? http_client
                                                                : none;
  for (unsigned i = 0; unused[i]; i++)
    if (config_setting_get_member(grp, unused[i]))
      return unused[i];
  return NULL;
}

static const char *role_text(enum config_tls_role role)
{
  switch (role) {
  case CONFIG_TLS_SESSION_SERVER: return "an smpp, ucp or cimd2 server connector";
  case CONFIG_TLS_SESSION_CLIENT: return "an smpp, ucp or cimd2 client connector";
  case CONFIG_TLS_HTTP_SERVER: return "the admin API (libmicrohttpd over GnuTLS: its own cipher choice, "
                                      "no client certificates)";
  case CONFIG_TLS_HTTP_CONNECTOR_SERVER: return "an http server connector";
  case CONFIG_TLS_HTTP_CLIENT: return "an http client connector";
  }
  return "?";
}

void config_tls_check(struct load *ld, const config_setting_t *parent, struct config_tls *t, const char *path,
                      enum config_tls_role role)
{
  const config_setting_t *grp = config_setting_get_member(parent, "tls");
  char p[KEY_PATH_LEN];
  join_path(p, path, "tls");
  t->enabled = grp != NULL;
  if (!grp)
    return;
  bool client = role == CONFIG_TLS_SESSION_CLIENT || role == CONFIG_TLS_HTTP_CLIENT;
  if (!config_setting_get_member(grp, "verify_peer"))
    t->verify_peer = client;
  const char *unused = unused_key(grp, role);
  if (unused) {
    char key_path[KEY_PATH_LEN];
    join_path(key_path, p, unused);
    report(ld, config_setting_get_member(grp, unused), key_path, "does not apply to %s", role_text(role));
    return;
  }
  struct tls_settings s = { .cert = t->cert, .key = t->key, .ca = t->ca, .verify_peer = t->verify_peer,
                            .min_version = t->min_version, .ciphers = t->ciphers };
  char err[TLS_ERR_LEN];
  bool server = !client;
  struct tls_ctx *ctx = tls_ctx_create(&s, server, err, sizeof err);
  if (!ctx) {
    report(ld, grp, p, "%s", err);
    return;
  }
  /* Sessions and the HTTP server connector take this context; the admin
   * API's libmicrohttpd reads the files itself, and an HTTP client connector
   * builds its own when its instances start: the check above is what they
   * get from here. */
  if (role == CONFIG_TLS_SESSION_SERVER || role == CONFIG_TLS_SESSION_CLIENT ||
      role == CONFIG_TLS_HTTP_CONNECTOR_SERVER)
    t->ctx = ctx;
  else
    tls_ctx_unref(ctx);
}

void config_tls_free(struct config_tls *t)
{
  tls_ctx_unref(t->ctx);
  t->ctx = NULL;
}

/* Sessions and HTTP server connectors take a new context whole. The admin
 * API's HTTPS is set up once, when its server starts: a reload puts in
 * place only its certificate and key (their paths or their content). An
 * HTTP client connector builds its context when its instances start:
 * changing its files needs a restart. */
bool config_tls_needs_restart(const struct config_tls *running, const struct config_tls *next,
                              enum config_tls_role role)
{
  bool same_switch = running->enabled == next->enabled;
  switch (role) {
  case CONFIG_TLS_SESSION_SERVER:
  case CONFIG_TLS_SESSION_CLIENT:
  case CONFIG_TLS_HTTP_CONNECTOR_SERVER:
    return false;
  case CONFIG_TLS_HTTP_SERVER:
    return !same_switch || strcmp(running->min_version, next->min_version) != 0;
  case CONFIG_TLS_HTTP_CLIENT:
    return !same_switch || strcmp(running->cert, next->cert) != 0 || strcmp(running->key, next->key) != 0 ||
           strcmp(running->ca, next->ca) != 0 || running->verify_peer != next->verify_peer;
  }
  return true;
}
