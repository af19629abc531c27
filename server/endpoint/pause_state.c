/* pause_state.c - the file of paused connectors (pause_state.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pause_state.h"

/* As the configuration allows in a connector's name. */
#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."

static const char header[] =
  "# Connectors paused by the operator (emgctl pause NAME), kept across restarts.\n"
  "# Written by emgd on each pause and resume: edit it only while emgd is stopped.\n"
  "# One connector name a line; emgctl resume NAME takes it out.\n";

int pause_state_path(const char *dir, char *path, size_t len)
{
  int n = snprintf(path, len, "%s/" PAUSE_STATE_FILE, dir);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void add_bad(struct pause_state *st, unsigned line, const char *why)
{
  if (st->n_bad < PAUSE_STATE_BAD_SHOWN) {
    st->bad[st->n_bad].line = line;
    snprintf(st->bad[st->n_bad].why, sizeof st->bad[st->n_bad].why, "%s", why);
  }
  st->n_bad++;
}

/* One line (without its newline), blanks around it ignored. */
static int take_line(struct pause_state *st, const char *text, size_t len, unsigned line, size_t *cap)
{
  while (len && (text[0] == ' ' || text[0] == '\t')) {
    text++;
    len--;
  }
  while (len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r'))
    len--;
  if (!len || text[0] == '#')
    return 0;
  if (memchr(text, '\0', len)) {
    add_bad(st, line, "a NUL byte: not a connector name");
    return 0;
  }
  if (len >= CONFIG_NAME_LEN) {
    add_bad(st, line, "longer than a connector name can be");
    return 0;
  }
  for (size_t i = 0; i < len; i++)
    if (!strchr(NAME_CHARS, text[i])) {
      add_bad(st, line, "not a connector name (letters, digits, '-', '_' and '.')");
      return 0;
    }
  for (unsigned i = 0; i < st->count; i++)
    if (strlen(st->names[i].name) == len && memcmp(st->names[i].name, text, len) == 0)
      return 0;
  if (st->count == *cap) {
    size_t more = *cap ? *cap * 2 : 8;
    struct pause_state_name *grown = realloc(st->names, more * sizeof *grown);
    if (!grown)
      return -1;
    st->names = grown;
    *cap = more;
  }
  memcpy(st->names[st->count].name, text, len);
  st->names[st->count].name[len] = '\0';
  st->names[st->count].line = line;
  st->count++;
  return 0;
}

int pause_state_read(const char *path, struct pause_state *st, char *err, size_t err_len)
{
  memset(st, 0, sizeof *st);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return 0;
    snprintf(err, err_len, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (fstat(fd, &sb) < 0) {
    snprintf(err, err_len, "%s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(sb.st_mode) || sb.st_size > PAUSE_STATE_MAX_BYTES) {
    snprintf(err, err_len, "%s: %s", path,
             S_ISREG(sb.st_mode) ? "larger than 1 MiB: not a file emgd wrote" : "not a regular file");
    close(fd);
    return -1;
  }
  size_t size = (size_t)sb.st_size, got = 0;
  char *text = malloc(size + 1);
  if (!text) {
    snprintf(err, err_len, "%s: out of memory", path);
    close(fd);
    return -1;
  }
  while (got < size) {
    ssize_t n = read(fd, text + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      snprintf(err, err_len, "%s: %s", path, strerror(errno));
      free(text);
      close(fd);
      return -1;
    }
    if (n == 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  size_t cap = 0;
  unsigned line = 1;
  int rc = 0;
  for (size_t start = 0; start < got && rc == 0; line++) {
    const char *nl = memchr(text + start, '\n', got - start);
    size_t end = nl ? (size_t)(nl - text) : got;
    rc = take_line(st, text + start, end - start, line, &cap);
    start = end + 1;
  }
  free(text);
  if (rc < 0) {
    snprintf(err, err_len, "%s: out of memory", path);
    pause_state_free(st);
    return -1;
  }
  return 0;
}

void pause_state_free(struct pause_state *st)
{
  free(st->names);
  st->names = NULL;
  st->count = 0;
}

/* The folder of path, made when it is missing, and opened for its fsync. */
static int open_folder(const char *path, char *err, size_t err_len)
{
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
    snprintf(err, err_len, "%s: %s", dir, strerror(errno));
    return -1;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    snprintf(err, err_len, "%s: %s", dir, strerror(errno));
  return fd;
}

static int write_all(int fd, const char *p, size_t len)
{
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int pause_state_write(const char *path, const char *const *names, unsigned count, char *err, size_t err_len)
{
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    snprintf(err, err_len, "%s: path too long", path);
    return -1;
  }
  int dir = open_folder(path, err, err_len);
  if (dir < 0)
    return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    snprintf(err, err_len, "%s: %s", tmp, strerror(errno));
    close(dir);
    return -1;
  }
  int rc = write_all(fd, header, sizeof header - 1);
  for (unsigned i = 0; rc == 0 && i < count; i++)
    if (write_all(fd, names[i], strlen(names[i])) < 0 || write_all(fd, "\n", 1) < 0)
      rc = -1;
  if (rc == 0 && fsync(fd) < 0)
    rc = -1;
  int saved = errno;
  if (close(fd) < 0 && rc == 0) {
    rc = -1;
    saved = errno;
  }
  if (rc < 0) {
    snprintf(err, err_len, "%s: %s", tmp, strerror(saved));
    unlink(tmp);
    close(dir);
    return -1;
  }
  if (rename(tmp, path) < 0) {
    snprintf(err, err_len, "%s: %s", path, strerror(errno));
    unlink(tmp);
    close(dir);
    return -1;
  }
  /* The rename itself durable: without it a crash could bring back the
   * old set. */
  if (fsync(dir) < 0) {
    snprintf(err, err_len, "%s: fsync of its folder: %s", path, strerror(errno));
    close(dir);
    return -1;
  }
  close(dir);
  return 0;
}
