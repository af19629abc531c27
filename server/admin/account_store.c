/* account_store.c - general.accounts_file: the accounts changed while
 * emgd runs, written whole on every change, in the configuration's own
 * syntax so that an operator can read it and emgd reads it back with the
 * same checks. A write goes to a temporary file beside it, is flushed to
 * disk, and takes the file's place by rename: a crash leaves the old file
 * or the new one, never a part.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "account_store.h"

/* s as a libconfig string: quotes, backslashes and control characters
 * escaped. */
static void put_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20 || ch == 0x7f)
      fprintf(f, "\\x%02x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void put_list(FILE *f, const char *key, const char *items, size_t item_size, unsigned n)
{
  if (!n)
    return;
  fprintf(f, "    %s = [ ", key);
  for (unsigned i = 0; i < n; i++) {
    if (i)
      fputs(", ", f);
    put_string(f, items + i * item_size);
  }
  fputs(" ];\n", f);
}

static void put_account(FILE *f, const struct config_account *a, bool last)
{
  fputs("  {\n    name = ", f);
  put_string(f, a->name);
  fputs(";\n", f);
  /* Never a cleartext password: the caller hashed it. None when a
   * client certificate stands for it. */
  if (a->password_hash[0]) {
    fputs("    password_hash = ", f);
    put_string(f, a->password_hash);
    fputs(";\n", f);
  }
  if (a->tls_subject[0]) {
    fputs("    tls_subject = ", f);
    put_string(f, a->tls_subject);
    fputs(";\n", f);
  }
  put_list(f, "connectors", a->connectors[0], sizeof a->connectors[0], a->n_connectors);
  put_list(f, "allow_ip", a->allow_ip[0], sizeof a->allow_ip[0], a->n_allow_ip);
  if (a->max_binds)
    fprintf(f, "    max_binds = %u;\n", a->max_binds);
  if (a->max_rate > 0)
    fprintf(f, "    max_rate = %.17g;\n", a->max_rate);
  if (a->credit != CONFIG_CREDIT_UNLIMITED)
    fprintf(f, "    credit = %zuL;\n", a->credit);
  put_list(f, "senders", a->senders[0], sizeof a->senders[0], a->n_senders);
  if (a->default_sender[0]) {
    fputs("    default_sender = ", f);
    put_string(f, a->default_sender);
    fputs(";\n", f);
  }
  fprintf(f, "    enabled = %s;\n", a->enabled ? "true" : "false");
  if (a->expires[0]) {
    fputs("    expires = ", f);
    put_string(f, a->expires);
    fputs(";\n", f);
  }
  fprintf(f, "  }%s\n", last ? "" : ",");
}

/* Flushes the folder that holds path, so that the rename is on disk too. */
static int sync_folder(const char *path)
{
  char dir[CONFIG_PATH_LEN];
  snprintf(dir, sizeof dir, "%s", path);
  int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int account_store_write(const char *path, const struct config_account *list, size_t n, char *err,
                        size_t err_len)
{
  char tmp[CONFIG_PATH_LEN + 16];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    snprintf(err, err_len, "cannot write %s: %s", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  fputs("# The accounts changed while emgd runs (emgctl account, /api/accounts).\n"
        "# emgd rewrites this file whole on every change; edit it only while emgd\n"
        "# is stopped, or edit and reload (emgctl reload), as emgd.conf.\n"
        "accounts = (\n", f);
  for (size_t i = 0; i < n; i++)
    put_account(f, &list[i], i + 1 == n);
  fputs(");\n", f);
  bool ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
  int saved = errno;
  ok = fclose(f) == 0 && ok;
  if (!ok) {
    snprintf(err, err_len, "cannot write %s: %s", tmp, strerror(saved ? saved : errno));
    unlink(tmp);
    return -1;
  }
  if (rename(tmp, path) != 0) {
    snprintf(err, err_len, "cannot put %s in place of %s: %s", tmp, path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  if (sync_folder(path) != 0) {
    snprintf(err, err_len, "cannot flush the folder of %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}
