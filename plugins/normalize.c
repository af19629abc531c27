/* normalize - turns the numbers of incoming messages into international
 * E.164 digits without '+' (TON international, NPI E.164), so that routes,
 * blacklists and SMSCs see one form of each number.
 *
 * Settings: country_code (required, 1-3 digits, e.g. "49");
 * national_prefix (default "0"; "" for a country without one);
 * international_prefix (default "00"); min_length (default 7): numbers of
 * fewer digits are short codes and left alone; apply_to: "dst" (default),
 * "src" or "both".
 *
 *   +4915112345678, 004915112345678, 015112345678 -> 4915112345678
 *   15112345678 with TON national                 -> 4915112345678
 *
 * Alphanumeric addresses (TON alphanumeric, or anything but digits after an
 * optional '+') and short codes are left as they are, as is a number of
 * unknown TON without a prefix: it may be international already.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plugin.h"

#define DIGITS "0123456789"

struct normalize {
  char country_code[4];
  char national_prefix[8];
  char international_prefix[8];
  size_t min_length;
  bool dst, src;
};

/* Copies a setting of digits into out (out_len bytes) when it has
 * min_len..out_len-1 digits. Returns 0, or -1 with err. */
static int digits_setting(char *out, size_t out_len, const char *key, const char *value,
                          size_t min_len, char *err, size_t errlen)
{
  size_t len = strlen(value);
  if (len < min_len || len >= out_len || strspn(value, DIGITS) != len) {
    snprintf(err, errlen, "%s: '%.32s' must be %zu..%zu digits", key, value, min_len, out_len - 1);
    return -1;
  }
  memcpy(out, value, len + 1);
  return 0;
}

static int normalize_init(const struct emg_plugin_setting *settings, size_t n, void **state,
                          char *err, size_t errlen)
{
  struct normalize *nz = calloc(1, sizeof *nz);
  if (!nz) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  snprintf(nz->national_prefix, sizeof nz->national_prefix, "0");
  snprintf(nz->international_prefix, sizeof nz->international_prefix, "00");
  nz->min_length = 7;
  nz->dst = true;
  for (size_t i = 0; i < n; i++) {
    const char *key = settings[i].key, *value = settings[i].value;
    int rc = 0;
    if (strcmp(key, "country_code") == 0) {
      rc = digits_setting(nz->country_code, sizeof nz->country_code, key, value, 1, err, errlen);
    } else if (strcmp(key, "national_prefix") == 0) {
      rc = digits_setting(nz->national_prefix, sizeof nz->national_prefix, key, value, 0, err,
                          errlen);
    } else if (strcmp(key, "international_prefix") == 0) {
      rc = digits_setting(nz->international_prefix, sizeof nz->international_prefix, key, value, 1,
                          err, errlen);
    } else if (strcmp(key, "min_length") == 0) {
      char *end;
      long v = strtol(value, &end, 10);
      if (end == value || *end || v < 1 || v > 20) {
        snprintf(err, errlen, "min_length: '%.32s' must be 1..20", value);
        goto fail;
      }
      nz->min_length = (size_t)v;
    } else if (strcmp(key, "apply_to") == 0) {
      if (strcmp(value, "dst") != 0 && strcmp(value, "src") != 0 && strcmp(value, "both") != 0) {
        snprintf(err, errlen, "apply_to: '%.32s' is not one of dst|src|both", value);
        goto fail;
      }
      nz->dst = strcmp(value, "src") != 0;
      nz->src = strcmp(value, "dst") != 0;
    } else {
      snprintf(err, errlen,
               "unknown setting '%.64s' (normalize takes country_code, national_prefix, "
               "international_prefix, min_length and apply_to)", key);
      goto fail;
    }
    if (rc)
      goto fail;
  }
  if (!nz->country_code[0]) {
    snprintf(err, errlen, "country_code: missing");
    goto fail;
  }
  *state = nz;
  return 0;
fail:
  free(nz);
  return -1;
}

static void normalize_destroy(void *state)
{
  free(state);
}

static bool starts_with(const char *s, const char *prefix)
{
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Rewrites a in place when it is a number in one of the forms above. */
static void normalize_addr(const struct normalize *nz, struct emg_plugin_addr *a)
{
  if (a->ton == EMG_PLUGIN_TON_ALPHANUMERIC)
    return;
  bool plus = a->addr[0] == '+';
  const char *digits = a->addr + plus;
  size_t len = strlen(digits);
  if (len < nz->min_length || strspn(digits, DIGITS) != len)
    return;
  const char *country = "", *rest;
  if (plus || a->ton == EMG_PLUGIN_TON_INTERNATIONAL) {
    rest = digits;
  } else if (starts_with(digits, nz->international_prefix)) {
    rest = digits + strlen(nz->international_prefix);
  } else if (nz->national_prefix[0] && starts_with(digits, nz->national_prefix)) {
    country = nz->country_code;
    rest = digits + strlen(nz->national_prefix);
  } else if (a->ton == EMG_PLUGIN_TON_NATIONAL) {
    country = nz->country_code;
    rest = digits;
  } else {
    return;
  }
  char out[64];
  int n = snprintf(out, sizeof out, "%s%s", country, rest);
  if (n < 0 || (size_t)n >= a->cap || !*rest)
    return;                       /* would not fit, or nothing follows the prefix */
  memcpy(a->addr, out, (size_t)n + 1);
  a->ton = EMG_PLUGIN_TON_INTERNATIONAL;
  a->npi = EMG_PLUGIN_NPI_E164;
}

static int normalize_before_receive(void *state, struct emg_plugin_msg *msg, char *reason,
                                    size_t reason_len)
{
  const struct normalize *nz = state;
  if (nz->dst)
    normalize_addr(nz, &msg->dst);
  if (nz->src)
    normalize_addr(nz, &msg->src);
  return EMG_PLUGIN_CONTINUE;
}

EMG_PLUGIN_EXPORT const struct emg_plugin emg_plugin = {
  .abi_version = EMG_PLUGIN_ABI_VERSION,
  .init = normalize_init,
  .destroy = normalize_destroy,
  .before_receive = normalize_before_receive,
};
