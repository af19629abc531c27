/* access_log.c - the per-message access log. See access_log.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "access_log.h"
#include "strutil.h"

struct access_log {
  pthread_mutex_t lock;
  FILE *f;
  char *path;
};

static FILE *open_append(const char *path)
{
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0)
    return NULL;
  FILE *f = fdopen(fd, "a");
  if (!f) {
    int e = errno;
    close(fd);
    errno = e;
    return NULL;
  }
  setvbuf(f, NULL, _IOFBF, 1 << 16);
  return f;
}

struct access_log *access_log_open(const char *path, char *err, size_t err_len)
{
  struct access_log *a = calloc(1, sizeof *a);
  if (!a || !(a->path = strdup(path))) {
    free(a);
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  if (!(a->f = open_append(path))) {
    snprintf(err, err_len, "%s: %s", path, strerror(errno));
    free(a->path);
    free(a);
    return NULL;
  }
  pthread_mutex_init(&a->lock, NULL);
  return a;
}

void access_log_close(struct access_log *a)
{
  if (!a)
    return;
  fclose(a->f);
  pthread_mutex_destroy(&a->lock);
  free(a->path);
  free(a);
}

int access_log_reopen(struct access_log *a)
{
  FILE *f = open_append(a->path);
  if (!f)
    return -1;
  pthread_mutex_lock(&a->lock);
  FILE *old = a->f;
  a->f = f;
  pthread_mutex_unlock(&a->lock);
  fclose(old);
  return 0;
}

void access_log_flush(struct access_log *a)
{
  pthread_mutex_lock(&a->lock);
  fflush(a->f);
  pthread_mutex_unlock(&a->lock);
}

/* key=value, the value quoted when it holds what would split the line. */
static void field(FILE *f, const char *key, const char *value)
{
  if (!value || !*value)
    value = "-";
  bool plain = true;
  for (const char *p = value; *p && plain; p++)
    plain = (unsigned char)*p > ' ' && *p != '"' && *p != '\\' && *p != 0x7f;
  fprintf(f, " %s=", key);
  if (plain) {
    fputs(value, f);
    return;
  }
  fputc('"', f);
  for (const char *p = value; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if ((unsigned char)*p < ' ' || *p == 0x7f)
      fprintf(f, "\\x%02x", (unsigned char)*p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

void access_log_write(struct access_log *a, const struct access_line *l)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char stamp[32], part[24];
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  if (l->parts)
    snprintf(part, sizeof part, "%u/%u", l->part, l->parts);
  else
    snprintf(part, sizeof part, "1/1");
  pthread_mutex_lock(&a->lock);
  fprintf(a->f, "%s.%03ldZ id=%" PRIu64, stamp, (long)(tv.tv_usec / 1000), l->id);
  field(a->f, "account", l->account);
  field(a->f, "in", l->in);
  field(a->f, "out", l->out);
  field(a->f, "from", l->from);
  field(a->f, "to", l->to);
  field(a->f, "part", part);
  field(a->f, "state", l->state);
  field(a->f, "smsc_id", l->smsc_id);
  fprintf(a->f, " error=%u\n", l->error);
  pthread_mutex_unlock(&a->lock);
}
