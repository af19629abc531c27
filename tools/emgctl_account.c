/* emgctl_account.c - `emgctl account add|set|disable|enable|delete|credit
 * NAME [options]`: the request each makes of /api/accounts, built from the
 * command line's account options.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emgctl_account.h"

/* A list option given again appends; its first use in a command replaces
 * what the account had. */
static int append(json_t *body, const char *key, const char *value)
{
  json_t *list = json_object_get(body, key);
  if (!list) {
    list = json_array();
    if (!list || json_object_set_new(body, key, list) != 0)
      return -1;
  }
  return json_array_append_new(list, json_string(value));
}

static int number(json_t *body, const char *key, const char *text, double min, double max)
{
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (!*text || *end || errno || !(v >= min && v <= max)) {
    fprintf(stderr, "emgctl: --%s takes a number from %g to %g\n", key, min, max);
    return -1;
  }
  return json_object_set_new(body, key, json_real(v));
}

int emgctl_account_option(int option, const char *value, json_t *body)
{
  switch (option) {
  case ACCOUNT_OPT_PASSWORD: return json_object_set_new(body, "password", json_string(value));
  case ACCOUNT_OPT_CONNECTOR: return append(body, "connectors", value);
  case ACCOUNT_OPT_ALLOW_IP: return append(body, "allow_ip", value);
  case ACCOUNT_OPT_SENDER: return append(body, "senders", value);
  case ACCOUNT_OPT_DEFAULT_SENDER: return json_object_set_new(body, "default_sender", json_string(value));
  case ACCOUNT_OPT_TLS_SUBJECT:
    return json_object_set_new(body, "tls_subject", *value ? json_string(value) : json_null());
  case ACCOUNT_OPT_EXPIRES:
    return json_object_set_new(body, "expires", *value ? json_string(value) : json_null());
  case ACCOUNT_OPT_MAX_BINDS: return number(body, "max_binds", value, 0, 100000);
  case ACCOUNT_OPT_MAX_RATE: return number(body, "max_rate", value, 0, 1000000);
  case ACCOUNT_OPT_CREDIT:
    if (strcmp(value, "unlimited") == 0)
      return json_object_set_new(body, "credit", json_null());
    /* A sign adds to what is left (account credit only). */
    if ((value[0] == '+' || value[0] == '-') && json_object_set_new(body, "credit_add", json_true()) != 0)
      return -1;
    return number(body, "credit", value, -1e15, 1e15);
  }
  return -1;
}

/* Credit as the API takes it: a whole number (json_real from number()). */
static json_t *whole(json_t *v)
{
  double d = json_real_value(v);
  return d == (double)(json_int_t)d ? json_integer((json_int_t)d) : NULL;
}

int emgctl_account_request(const char *verb, const char *escaped_name, const char *raw_name, json_t *body,
                           char *path, size_t path_len, const char **method, char **text)
{
  *text = NULL;
  json_t *send = NULL;
  bool add = json_object_get(body, "credit_add") != NULL;
  if (add && strcmp(verb, "credit") != 0) {
    fprintf(stderr, "emgctl: --credit +N or -N adds credit: use it with account credit\n");
    return -1;
  }
  if (strcmp(verb, "add") == 0) {
    snprintf(path, path_len, "/api/accounts");
    *method = "POST";
    json_object_set_new(body, "name", json_string(raw_name));
    if (!json_object_get(body, "password")) {
      fprintf(stderr, "emgctl: account add: give --password\n");
      return -1;
    }
    send = json_incref(body);
  } else if (strcmp(verb, "set") == 0 || strcmp(verb, "enable") == 0 || strcmp(verb, "disable") == 0) {
    snprintf(path, path_len, "/api/accounts/%s", escaped_name);
    *method = "PATCH";
    if (strcmp(verb, "set") != 0)
      json_object_set_new(body, "enabled", json_boolean(strcmp(verb, "enable") == 0));
    if (!json_object_size(body)) {
      fprintf(stderr, "emgctl: account set: give at least one option to change\n");
      return -1;
    }
    send = json_incref(body);
  } else if (strcmp(verb, "delete") == 0) {
    snprintf(path, path_len, "/api/accounts/%s", escaped_name);
    *method = "DELETE";
    if (json_object_size(body)) {
      fprintf(stderr, "emgctl: account delete takes no options\n");
      return -1;
    }
  } else if (strcmp(verb, "credit") == 0) {
    /* credit NAME --credit N: set; --credit +N or -N: add. */
    json_t *n = json_object_get(body, "credit");
    json_t *value = n ? whole(n) : NULL;
    if (!value || json_object_size(body) != 1u + add) {
      fprintf(stderr, "emgctl: account credit NAME --credit N (set) or --credit +N / -N (add)\n");
      json_decref(value);
      return -1;
    }
    snprintf(path, path_len, "/api/accounts/%s/credit", escaped_name);
    *method = "POST";
    send = json_pack("{s:o}", add ? "add" : "set", value);
  } else if (strcmp(verb, "show") == 0) {
    snprintf(path, path_len, "/api/accounts/%s", escaped_name);
    *method = "GET";
  } else {
    fprintf(stderr, "emgctl: account: unknown action '%s' (add, set, enable, disable, delete, credit, show)\n",
            verb);
    return -1;
  }
  if (send) {
    *text = json_dumps(send, JSON_COMPACT);
    json_decref(send);
    if (!*text)
      return -1;
  }
  return 0;
}

void emgctl_account_print(json_t *j)
{
  if (json_object_get(j, "error")) {
    printf("refused: %s\n", json_string_value(json_object_get(j, "error")));
    return;
  }
  if (json_object_get(j, "deleted")) {
    printf("account %s deleted\n", json_string_value(json_object_get(j, "name")));
    return;
  }
  if (json_object_get(j, "credit_left") && !json_object_get(j, "enabled")) {
    printf("account %s: %lld credit left\n", json_string_value(json_object_get(j, "name")),
           (long long)json_integer_value(json_object_get(j, "credit_left")));
    return;
  }
  json_t *credit = json_object_get(j, "credit_left");
  char credit_text[32] = "unlimited";
  if (json_is_integer(credit))
    snprintf(credit_text, sizeof credit_text, "%lld left", (long long)json_integer_value(credit));
  printf("account %s: %s, %lld sessions, credit %s\n", json_string_value(json_object_get(j, "name")),
         json_is_true(json_object_get(j, "enabled")) ? "enabled" : "disabled",
         (long long)json_integer_value(json_object_get(j, "binds")), credit_text);
}
