/* spool_lock.c - one emgd per spool directory: a lock file held with flock
 * for the life of the process, naming the PID that holds it. Two processes
 * replaying and writing one journal would tear each other's segments.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "spool.h"

#define LOCK_NAME "emgd.lock"

static int open_lock_file(const char *dir, bool create, char *err, size_t err_len)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
  if (create && mkdir(dir, 0755) < 0 && errno != EEXIST) {
    snprintf(err, err_len, "%.200s: %s", dir, strerror(errno));
    return -1;
  }
  int fd = open(path, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
  if (fd < 0)
    snprintf(err, err_len, "%.200s: %s", path, strerror(errno));
  return fd;
}

/* The PID the holder wrote into the lock file, 0 when unreadable. */
static long holder_pid(int fd)
{
  char text[32];
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0)
    return 0;
  text[n] = '\0';
  long pid = strtol(text, NULL, 10);
  return pid > 0 ? pid : 0;
}

/* Why the lock is not ours: "in use by emgd (PID N)". */
static void held_by(int fd, const char *dir, char *err, size_t err_len)
{
  long pid = holder_pid(fd);
  if (pid)
    snprintf(err, err_len, "%.200s is in use by another emgd (PID %ld)", dir, pid);
  else
    snprintf(err, err_len, "%.200s is in use by another emgd", dir);
}

/* A spool made by another user (root before a package's service user, or
 * the other way round) fails later, file by file: said once, here. */
static bool owned_by_us(const char *dir, char *err, size_t err_len)
{
  struct stat st;
  if (stat(dir, &st) < 0 || st.st_uid == geteuid())
    return true;
  /* getpwuid's answer lives until its next call: each copied at once. */
  char owner_name[64], our_name[64];
  struct passwd *pw = getpwuid(st.st_uid);
  snprintf(owner_name, sizeof owner_name, "%s", pw ? pw->pw_name : "?");
  pw = getpwuid(geteuid());
  snprintf(our_name, sizeof our_name, "%s", pw ? pw->pw_name : "?");
  snprintf(err, err_len, "%.80s belongs to user %.16s (uid %u), emgd runs as %.16s (uid %u): "
           "chown -R it to %.16s, or run emgd as its owner", dir, owner_name, (unsigned)st.st_uid, our_name,
           (unsigned)geteuid(), our_name);
  return false;
}

int spool_lock(const char *dir, char *err, size_t err_len)
{
  if (!owned_by_us(dir, err, err_len))
    return -1;
  int fd = open_lock_file(dir, true, err, err_len);
  if (fd < 0)
    return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno == EWOULDBLOCK)
      held_by(fd, dir, err, err_len);
    else
      snprintf(err, err_len, "%.200s/" LOCK_NAME ": %s", dir, strerror(errno));
    close(fd);
    return -1;
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
    snprintf(err, err_len, "%.200s/" LOCK_NAME ": %s", dir, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

int spool_lock_check(const char *dir, char *err, size_t err_len)
{
  int fd = open_lock_file(dir, false, err, err_len);
  if (fd < 0)
    return 0;   /* no lock file: nobody has used the directory yet */
  int rc = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
    held_by(fd, dir, err, err_len);
    rc = 1;
  }
  close(fd);
  return rc;
}
