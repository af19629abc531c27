/* keyword - routes a message by the first word of its text: "INFO today"
 * goes to the connector the keyword INFO is mapped to.
 *
 * Settings: map (required): "KEYWORD=connector,KEYWORD=connector,...", e.g.
 * map = "INFO=smpp-b,STOP=smpp-c". Keywords match the first word of the
 * text (up to the first blank) whole and without regard to ASCII case; a
 * text whose first word is no keyword, and binary data, are left to the
 * next plugin and the routes. A connector name the configuration lacks
 * counts as a failure of the hook at each message it would route.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "plugin.h"

#define BLANKS " \t\r\n"
#define KEYWORDS_MAX 256

struct entry {
  char word[32];
  size_t len;
  char target[64];
};

struct keyword {
  struct entry entries[KEYWORDS_MAX];
  size_t count;
};

/* s (len bytes) without the blanks around it. */
static const char *trim(const char *s, size_t *len)
{
  while (*len && strchr(BLANKS, s[0])) {
    s++;
    (*len)--;
  }
  while (*len && strchr(BLANKS, s[*len - 1]))
    (*len)--;
  return s;
}

/* Adds the pair "WORD=connector" (len bytes at pair). Returns 0, or -1 with err. */
static int add_pair(struct keyword *k, const char *pair, size_t len, char *err, size_t errlen)
{
  const char *eq = memchr(pair, '=', len);
  if (!eq) {
    snprintf(err, errlen, "map: '%.*s' is not KEYWORD=connector", (int)(len > 64 ? 64 : len), pair);
    return -1;
  }
  size_t word_len = (size_t)(eq - pair), target_len = len - word_len - 1;
  const char *word = trim(pair, &word_len), *target = trim(eq + 1, &target_len);
  struct entry *e = &k->entries[k->count];
  if (!word_len || word_len >= sizeof e->word || strcspn(word, BLANKS) < word_len) {
    snprintf(err, errlen, "map: keyword '%.*s' must be one word of 1..%zu characters",
             (int)(word_len > 64 ? 64 : word_len), word, sizeof e->word - 1);
    return -1;
  }
  if (!target_len || target_len >= sizeof e->target) {
    snprintf(err, errlen, "map: the connector of '%.*s' must be 1..%zu characters", (int)word_len,
             word, sizeof e->target - 1);
    return -1;
  }
  for (size_t i = 0; i < k->count; i++)
    if (k->entries[i].len == word_len && strncasecmp(k->entries[i].word, word, word_len) == 0) {
      snprintf(err, errlen, "map: keyword '%.*s' is given twice", (int)word_len, word);
      return -1;
    }
  if (k->count == KEYWORDS_MAX) {
    snprintf(err, errlen, "map: more than %d keywords", KEYWORDS_MAX);
    return -1;
  }
  snprintf(e->word, sizeof e->word, "%.*s", (int)word_len, word);
  e->len = word_len;
  snprintf(e->target, sizeof e->target, "%.*s", (int)target_len, target);
  k->count++;
  return 0;
}

static int keyword_init(const struct emg_plugin_setting *settings, size_t n, void **state,
                        char *err, size_t errlen)
{
  const char *map = NULL;
  struct keyword *k = calloc(1, sizeof *k);
  if (!k) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    if (strcmp(settings[i].key, "map") != 0) {
      snprintf(err, errlen, "unknown setting '%.64s' (keyword takes map)", settings[i].key);
      goto fail;
    }
    map = settings[i].value;
  }
  if (!map) {
    snprintf(err, errlen, "map: missing");
    goto fail;
  }
  for (const char *pair = map;;) {
    size_t len = strcspn(pair, ","), content = len;
    trim(pair, &content);
    /* Blank pairs are allowed: a trailing comma is no mistake worth a refused start. */
    if (content && add_pair(k, pair, len, err, errlen) != 0)
      goto fail;
    if (!pair[len])
      break;
    pair += len + 1;
  }
  if (!k->count) {
    snprintf(err, errlen, "map: no keyword given");
    goto fail;
  }
  *state = k;
  return 0;
fail:
  free(k);
  return -1;
}

static void keyword_destroy(void *state)
{
  free(state);
}

static int keyword_route(void *state, const struct emg_plugin_msg *msg, char *target,
                         size_t target_len)
{
  const struct keyword *k = state;
  if (!msg->text)
    return EMG_PLUGIN_CONTINUE;
  const char *word = msg->text + strspn(msg->text, BLANKS);
  size_t len = strcspn(word, BLANKS);
  for (size_t i = 0; i < k->count; i++) {
    const struct entry *e = &k->entries[i];
    if (e->len != len || strncasecmp(e->word, word, len) != 0)
      continue;
    if ((size_t)snprintf(target, target_len, "%s", e->target) >= target_len)
      return EMG_PLUGIN_ERROR;
    return EMG_PLUGIN_ROUTE;
  }
  return EMG_PLUGIN_CONTINUE;
}

EMG_PLUGIN_EXPORT const struct emg_plugin emg_plugin = {
  .abi_version = EMG_PLUGIN_ABI_VERSION,
  .init = keyword_init,
  .destroy = keyword_destroy,
  .route = keyword_route,
};
