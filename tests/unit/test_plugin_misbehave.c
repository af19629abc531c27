/* test_plugin_misbehave - a plugin that misbehaves on demand, for the
 * plugins suite: every hook it has can fail, be slow, rewrite what it may
 * or break the rules, as its settings say.
 *
 * Settings: error ("true": every hook returns EMG_PLUGIN_ERROR, after
 * doing its writes); sleep_ms (every hook sleeps that long first); rewrite
 * (before_* hooks write it into dst, with TON abbreviated); answer (what
 * before_* hooks return, default EMG_PLUGIN_CONTINUE); unterminated
 * ("true": before_* hooks fill dst without a NUL); target (route chooses
 * this connector).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "plugin.h"

struct misbehave {
  bool error;
  bool unterminated;
  unsigned sleep_ms;
  int answer;
  char rewrite[64];
  char target[64];
};

static int misbehave_init(const struct emg_plugin_setting *settings, size_t n, void **state,
                          char *err, size_t errlen)
{
  struct misbehave *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const char *key = settings[i].key, *value = settings[i].value;
    if (strcmp(key, "error") == 0) {
      m->error = strcmp(value, "true") == 0;
    } else if (strcmp(key, "unterminated") == 0) {
      m->unterminated = strcmp(value, "true") == 0;
    } else if (strcmp(key, "sleep_ms") == 0) {
      m->sleep_ms = (unsigned)strtoul(value, NULL, 10);
    } else if (strcmp(key, "answer") == 0) {
      m->answer = atoi(value);
    } else if (strcmp(key, "rewrite") == 0) {
      snprintf(m->rewrite, sizeof m->rewrite, "%s", value);
    } else if (strcmp(key, "target") == 0) {
      snprintf(m->target, sizeof m->target, "%s", value);
    } else {
      snprintf(err, errlen, "unknown setting '%s'", key);
      free(m);
      return -1;
    }
  }
  *state = m;
  return 0;
}

static void misbehave_destroy(void *state)
{
  free(state);
}

static void pause_ms(unsigned ms)
{
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
  while (ms && nanosleep(&ts, &ts) != 0)
    ;
}

static int misbehave_before(void *state, struct emg_plugin_msg *msg, char *reason, size_t reason_len)
{
  const struct misbehave *m = state;
  pause_ms(m->sleep_ms);
  if (m->rewrite[0]) {
    snprintf(msg->dst.addr, msg->dst.cap, "%s", m->rewrite);
    msg->dst.ton = EMG_PLUGIN_TON_ABBREVIATED;
  }
  if (m->unterminated)
    memset(msg->dst.addr, '7', msg->dst.cap);
  snprintf(reason, reason_len, "misbehaving on purpose");
  return m->error ? EMG_PLUGIN_ERROR : m->answer;
}

static int misbehave_route(void *state, const struct emg_plugin_msg *msg, char *target,
                           size_t target_len)
{
  const struct misbehave *m = state;
  pause_ms(m->sleep_ms);
  if (m->error)
    return EMG_PLUGIN_ERROR;
  if (!m->target[0])
    return EMG_PLUGIN_CONTINUE;
  snprintf(target, target_len, "%s", m->target);
  return EMG_PLUGIN_ROUTE;
}

static int misbehave_after_send(void *state, const struct emg_plugin_msg *msg, int status)
{
  const struct misbehave *m = state;
  pause_ms(m->sleep_ms);
  return m->error ? EMG_PLUGIN_ERROR : EMG_PLUGIN_CONTINUE;
}

static int misbehave_after_dlr(void *state, uint64_t msg_id, const struct emg_plugin_receipt *r)
{
  const struct misbehave *m = state;
  pause_ms(m->sleep_ms);
  return m->error ? EMG_PLUGIN_ERROR : EMG_PLUGIN_CONTINUE;
}

EMG_PLUGIN_EXPORT const struct emg_plugin emg_plugin = {
  .abi_version = EMG_PLUGIN_ABI_VERSION,
  .init = misbehave_init,
  .destroy = misbehave_destroy,
  .before_receive = misbehave_before,
  .route = misbehave_route,
  .before_send = misbehave_before,
  .after_send = misbehave_after_send,
  .after_dlr = misbehave_after_dlr,
};
