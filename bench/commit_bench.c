/* commit_bench.c - what one group commit (a write and an fdatasync) costs,
 * by how the blocks it writes came to be in the segment file:
 *
 *   append     the file grows with each commit (a new segment, as before
 *              zeros were written ahead)
 *   fallocate  the blocks reserved beforehand but not written (unwritten
 *              extents: each commit still changes the file's metadata)
 *   written    the blocks written beforehand, here zeros by O_DIRECT as the
 *              journal writes them ahead (or a reused segment's file)
 *
 * For each, N commits of SIZE bytes each, the modes alternated ROUNDS times;
 * prints the wall time of a commit and the busy CPU of the whole machine
 * per commit (from /proc/stat: the file system's journal thread, the block
 * layer and the interrupts count as well as this process). Run it on a quiet
 * machine, in a directory on the disk the spool uses.
 *
 * Usage: commit_bench [--dir DIR] [--commits N] [--size BYTES] [--rounds R]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"

enum mode { APPEND, FALLOCATE, WRITTEN, MODES };
static const char *const mode_names[MODES] = { "append", "fallocate", "written" };

/* Busy CPU seconds of the whole machine so far: all but idle and iowait. */
static double machine_busy_s(void)
{
  FILE *f = fopen("/proc/stat", "r");
  unsigned long long v[8] = { 0 };
  if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]) != 8) {
    if (f)
      fclose(f);
    return 0;
  }
  fclose(f);
  return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static int die(const char *what, const char *path)
{
  fprintf(stderr, "commit_bench: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

/* Makes the file as the mode wants it before the timed commits. */
static void prepare(enum mode mode, const char *path, size_t total, const uint8_t *zeros, size_t zeros_len)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (mode == WRITTEN ? O_DIRECT : 0), 0644);
  if (fd < 0)
    die("opening", path);
  if (mode == FALLOCATE && posix_fallocate(fd, 0, (off_t)total) != 0)
    die("reserving", path);
  for (size_t at = 0; mode == WRITTEN && at < total; at += zeros_len)
    if (pwrite(fd, zeros, zeros_len, (off_t)at) != (ssize_t)zeros_len)
      die("writing zeros to", path);
  if (fsync(fd) < 0)
    die("syncing", path);
  close(fd);
}

int main(int argc, char **argv)
{
  const char *dir = ".";
  long commits = 3000, size = 131072, rounds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
    else if (!strcmp(argv[i], "--commits"))
      commits = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--size"))
      size = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds"))
      rounds = atol(argv[i + 1]);
    else
      break;
  }
  if (commits < 1 || size < 1 || rounds < 1 || argc % 2 == 0) {
    fprintf(stderr, "usage: commit_bench [--dir DIR] [--commits N] [--size BYTES] [--rounds R]\n");
    return 2;
  }
  const size_t zeros_len = 1u << 20;
  size_t total = ((size_t)commits * (size_t)size + zeros_len - 1) / zeros_len * zeros_len;
  uint8_t *zeros = aligned_alloc(4096, zeros_len), *data = malloc((size_t)size);
  if (!zeros || !data)
    return 1;
  memset(zeros, 0, zeros_len);
  memset(data, 'r', (size_t)size);
  char path[4096];
  snprintf(path, sizeof path, "%s/commit_bench.%ld.seg", dir, (long)getpid());

  printf("%ld commits of %ld bytes each, %ld rounds, in %s\n", commits, size, rounds, dir);
  printf("| mode | round | wall µs per commit | machine busy µs per commit |\n| --- | ---: | ---: | ---: |\n");
  for (long round = 1; round <= rounds; round++)
    for (int mode = 0; mode < MODES; mode++) {
      prepare((enum mode)mode, path, total, zeros, zeros_len);
      int fd = open(path, O_WRONLY);
      if (fd < 0)
        die("opening", path);
      double busy0 = machine_busy_s();
      uint64_t t0 = clock_now_ns();
      for (long i = 0; i < commits; i++)
        if (pwrite(fd, data, (size_t)size, (off_t)(i * size)) != size || fdatasync(fd) < 0)
          die("committing to", path);
      uint64_t t1 = clock_now_ns();
      double busy = machine_busy_s() - busy0;
      close(fd);
      printf("| %s | %ld | %.0f | %.0f |\n", mode_names[mode], round, (double)(t1 - t0) / 1e3 / (double)commits,
             busy * 1e6 / (double)commits);
      fflush(stdout);
    }
  unlink(path);
  free(zeros);
  free(data);
  return 0;
}
