/* vectors.c - loads captured frames (tests/data/vectors) and hex test data.
 * SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static int hexval(int c)
{
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

int test_unhex(const char *hex, uint8_t **out)
{
  size_t cap = strlen(hex) / 2 + 1, n = 0;
  uint8_t *buf = malloc(cap);
  int hi = -1;
  if (!buf)
    return -1;
  for (const char *p = hex; *p; p++) {
    if (isspace((unsigned char)*p))
      continue;
    int v = hexval((unsigned char)*p);
    if (v < 0) { free(buf); return -1; }
    if (hi < 0) hi = v;
    else { buf[n++] = (uint8_t)(hi << 4 | v); hi = -1; }
  }
  if (hi >= 0) { free(buf); return -1; }
  *out = buf;
  return (int)n;
}

int test_vectors_load(const char *file, struct test_vector **out)
{
  char path[1024], line[16384], comment[512] = "";
  struct test_vector *v = NULL;
  int n = 0, cap = 0;
  snprintf(path, sizeof path, "%s/vectors/%s", EMG_TEST_DATA, file);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (line[0] == '#') {
      snprintf(comment, sizeof comment, "%.511s", line + 1);
      continue;
    }
    char *tab = strchr(line, '\t');
    if (!tab)
      continue;
    *tab = 0;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      v = realloc(v, (size_t)cap * sizeof *v);
    }
    memset(&v[n], 0, sizeof v[n]);
    snprintf(v[n].label, sizeof v[n].label, "%.63s", line);
    snprintf(v[n].comment, sizeof v[n].comment, "%s", comment);
    int len = test_unhex(tab + 1, &v[n].bytes);
    if (len < 0) { fclose(f); test_vectors_free(v, n); return -1; }
    v[n].len = (size_t)len;
    n++;
    comment[0] = 0;
  }
  fclose(f);
  *out = v;
  return n;
}

void test_vectors_free(struct test_vector *v, int n)
{
  for (int i = 0; i < n; i++)
    free(v[i].bytes);
  free(v);
}

void test_add_suite(const char *suite_name, const struct test_case *cases)
{
  CU_pSuite s = CU_add_suite(suite_name, NULL, NULL);
  for (; s && cases->name; cases++)
    CU_add_test(s, cases->name, cases->fn);
}
