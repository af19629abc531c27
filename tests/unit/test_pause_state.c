/* test_pause_state.c - the file of paused connectors: written and read
 * back, no file at all, comments and blanks, lines that are no connector
 * name reported by line while the rest is read, a file that cannot be read,
 * the folder made on the first write, the temporary file gone after it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pause_state.h"
#include "testutil.h"

static char dir[64];
static char path[128];

static void dir_make(void)
{
  snprintf(dir, sizeof dir, "/tmp/emg-pause-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  CU_ASSERT_EQUAL_FATAL(pause_state_path(dir, path, sizeof path), 0);
}

static void dir_remove(void)
{
  char tmp[160];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  unlink(path);
  rmdir(dir);
}

static void file_put(const char *text, size_t len)
{
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(text, 1, len, f), len);
  fclose(f);
}

static void test_roundtrip(void)
{
  dir_make();
  const char *names[] = { "smpp-out", "ucp_b.2" };
  char err[256] = "";
  CU_ASSERT_EQUAL(pause_state_write(path, names, 2, err, sizeof err), 0);
  struct pause_state st;
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(st.count, 2);
  CU_ASSERT_STRING_EQUAL(st.names[0].name, "smpp-out");
  CU_ASSERT_STRING_EQUAL(st.names[1].name, "ucp_b.2");
  CU_ASSERT(st.names[0].line < st.names[1].line);
  CU_ASSERT_EQUAL(st.n_bad, 0);
  pause_state_free(&st);
  /* Written again with fewer: the file is replaced, not appended to. */
  CU_ASSERT_EQUAL(pause_state_write(path, names + 1, 1, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(st.count, 1);
  CU_ASSERT_STRING_EQUAL(st.names[0].name, "ucp_b.2");
  pause_state_free(&st);
  /* None paused: a file that names none. */
  CU_ASSERT_EQUAL(pause_state_write(path, NULL, 0, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL(st.count, 0);
  CU_ASSERT_EQUAL(st.n_bad, 0);
  pause_state_free(&st);
  /* No temporary file left beside it. */
  char tmp[160];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CU_ASSERT_EQUAL(access(tmp, F_OK), -1);
  dir_remove();
}

static void test_missing(void)
{
  dir_make();
  struct pause_state st;
  char err[256] = "";
  CU_ASSERT_EQUAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL(st.count, 0);
  CU_ASSERT_EQUAL(st.n_bad, 0);
  pause_state_free(&st);
  /* Nor is a missing folder an error (persist off, nothing paused yet). */
  char other[200];
  snprintf(other, sizeof other, "%s/no-such-folder/" PAUSE_STATE_FILE, dir);
  CU_ASSERT_EQUAL(pause_state_read(other, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL(st.count, 0);
  pause_state_free(&st);
  dir_remove();
}

static void test_comments_and_blanks(void)
{
  dir_make();
  static const char text[] = "# a comment\n\n  out-a  \r\n\t\n# out-b\nout-c"; /* no newline at the end */
  file_put(text, sizeof text - 1);
  struct pause_state st;
  char err[256] = "";
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(st.count, 2);
  CU_ASSERT_STRING_EQUAL(st.names[0].name, "out-a");
  CU_ASSERT_EQUAL(st.names[0].line, 3);
  CU_ASSERT_STRING_EQUAL(st.names[1].name, "out-c");
  CU_ASSERT_EQUAL(st.names[1].line, 6);
  CU_ASSERT_EQUAL(st.n_bad, 0);
  pause_state_free(&st);
  dir_remove();
}

/* A garbled file: each bad line reported with its number, the names on the
 * other lines still read (none of them resumed on a guess). */
static void test_bad_lines(void)
{
  dir_make();
  char text[512];
  char longname[CONFIG_NAME_LEN + 2];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  int n = snprintf(text, sizeof text, "good-1\nout put\n%s\ngood-2\nx\xc3\xa9y\ngood-1\n", longname);
  /* A NUL byte inside line 7. */
  memcpy(text + n, "ab\0cd\ngood-3\n", 13);
  file_put(text, (size_t)n + 13);
  struct pause_state st;
  char err[256] = "";
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(st.count, 3);   /* good-1 once, good-2, good-3 */
  CU_ASSERT_STRING_EQUAL(st.names[0].name, "good-1");
  CU_ASSERT_STRING_EQUAL(st.names[1].name, "good-2");
  CU_ASSERT_EQUAL(st.names[1].line, 4);
  CU_ASSERT_STRING_EQUAL(st.names[2].name, "good-3");
  CU_ASSERT_EQUAL(st.names[2].line, 8);
  CU_ASSERT_EQUAL_FATAL(st.n_bad, 4);
  CU_ASSERT_EQUAL(st.bad[0].line, 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(st.bad[0].why, "not a connector name"));
  CU_ASSERT_EQUAL(st.bad[1].line, 3);
  CU_ASSERT_PTR_NOT_NULL(strstr(st.bad[1].why, "longer"));
  CU_ASSERT_EQUAL(st.bad[2].line, 5);
  CU_ASSERT_EQUAL(st.bad[3].line, 7);
  CU_ASSERT_PTR_NOT_NULL(strstr(st.bad[3].why, "NUL"));
  pause_state_free(&st);
  /* The longest name a connector may have is read. */
  longname[CONFIG_NAME_LEN - 1] = '\0';
  n = snprintf(text, sizeof text, "%s\n", longname);
  file_put(text, (size_t)n);
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL(st.count, 1);
  CU_ASSERT_EQUAL(st.n_bad, 0);
  pause_state_free(&st);
  dir_remove();
}

/* Many bad lines: the first few shown, all counted. */
static void test_many_bad_lines(void)
{
  dir_make();
  char text[1024] = "";
  size_t len = 0;
  for (int i = 0; i < PAUSE_STATE_BAD_SHOWN + 5; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, "bad name %d\n", i);
  len += (size_t)snprintf(text + len, sizeof text - len, "still-read\n");
  file_put(text, len);
  struct pause_state st;
  char err[256] = "";
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL(st.n_bad, PAUSE_STATE_BAD_SHOWN + 5);
  CU_ASSERT_EQUAL(st.bad[PAUSE_STATE_BAD_SHOWN - 1].line, PAUSE_STATE_BAD_SHOWN);
  CU_ASSERT_EQUAL_FATAL(st.count, 1);
  CU_ASSERT_STRING_EQUAL(st.names[0].name, "still-read");
  pause_state_free(&st);
  dir_remove();
}

/* There but unreadable: an error naming the file, not "nothing paused". */
static void test_unreadable(void)
{
  dir_make();
  struct pause_state st;
  char err[256] = "";
  /* A folder where the file should be. */
  CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
  CU_ASSERT_EQUAL(pause_state_read(path, &st, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
  rmdir(path);
  /* Too big to be one emgd wrote. */
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fseek(f, PAUSE_STATE_MAX_BYTES + 1, SEEK_SET), 0);
  fputc('\n', f);
  fclose(f);
  err[0] = '\0';
  CU_ASSERT_EQUAL(pause_state_read(path, &st, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger than"));
  unlink(path);
  /* No permission (root reads anything: that part only as another user). */
  if (geteuid() != 0) {
    file_put("out\n", 4);
    CU_ASSERT_EQUAL(chmod(path, 0), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(pause_state_read(path, &st, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, strerror(EACCES)));
  }
  dir_remove();
}

/* The first write makes the folder (persist off: spool_dir may not exist);
 * a folder that cannot be made is an error naming it. */
static void test_folder_made(void)
{
  dir_make();
  char sub[128], file[200];
  snprintf(sub, sizeof sub, "%s/spool", dir);
  CU_ASSERT_EQUAL_FATAL(pause_state_path(sub, file, sizeof file), 0);
  const char *names[] = { "out" };
  char err[256] = "";
  CU_ASSERT_EQUAL(pause_state_write(file, names, 1, err, sizeof err), 0);
  struct stat sb;
  CU_ASSERT_EQUAL(stat(sub, &sb), 0);
  CU_ASSERT(S_ISDIR(sb.st_mode));
  struct pause_state st;
  CU_ASSERT_EQUAL_FATAL(pause_state_read(file, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL(st.count, 1);
  pause_state_free(&st);
  unlink(file);
  rmdir(sub);
  /* Its parent missing too: not made (a typo in spool_dir is not a tree to build). */
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  CU_ASSERT_EQUAL_FATAL(pause_state_path(sub, file, sizeof file), 0);
  err[0] = '\0';
  CU_ASSERT_EQUAL(pause_state_write(file, names, 1, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, sub));
  dir_remove();
}

/* A failed write leaves the old file as it was (the temporary file's name
 * taken by a folder: refused even to root). */
static void test_failed_write_keeps_old(void)
{
  dir_make();
  const char *names[] = { "old" };
  char err[256] = "", tmp[160];
  CU_ASSERT_EQUAL_FATAL(pause_state_write(path, names, 1, err, sizeof err), 0);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CU_ASSERT_EQUAL_FATAL(mkdir(tmp, 0700), 0);
  const char *other[] = { "new" };
  CU_ASSERT_EQUAL(pause_state_write(path, other, 1, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, ".tmp"));
  rmdir(tmp);
  struct pause_state st;
  CU_ASSERT_EQUAL_FATAL(pause_state_read(path, &st, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(st.count, 1);
  CU_ASSERT_STRING_EQUAL(st.names[0].name, "old");
  pause_state_free(&st);
  dir_remove();
}

void suite_pause_state(void);
void suite_pause_state(void)
{
  static const struct test_case cases[] = {
    { "written and read back, replaced whole", test_roundtrip },
    { "no file: nothing paused", test_missing },
    { "comments, blanks, CRLF, no final newline", test_comments_and_blanks },
    { "bad lines reported by line, the rest read", test_bad_lines },
    { "many bad lines: the first shown, all counted", test_many_bad_lines },
    { "there but unreadable: an error naming it", test_unreadable },
    { "the folder made on the first write", test_folder_made },
    { "a failed write keeps the old file", test_failed_write_keeps_old },
    { NULL, NULL },
  };
  test_add_suite("pause_state", cases);
}
