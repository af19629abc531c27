/* http_json.c - the JSON the gateway writes (answers to submits of POST
 * /api/v1/messages, receipt callback bodies) with yajl's generator, and the
 * message id in a provider's answer (jansson: looked up by a path). The
 * submits themselves are read in http_json_submit.c. See http_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include "http_codec_internal.h"
#include "smpp_receipt.h"

/* ---- writing ---- */

static void gen_text(yajl_gen g, const char *s)
{
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

/* "key": "value", skipped when value is NULL. A value that is not UTF-8
 * (when the generator checks) goes out with '?' for its other octets. */
static void gen_string(yajl_gen g, const char *key, const char *value)
{
  char ascii[256];
  size_t n;
  if (!value)
    return;
  gen_text(g, key);
  n = strlen(value);
  if (yajl_gen_string(g, (const unsigned char *)value, n) != yajl_gen_invalid_string)
    return;
  n = n < sizeof ascii ? n : sizeof ascii - 1;
  for (size_t i = 0; i < n; i++)
    ascii[i] = (unsigned char)value[i] < 0x80 ? value[i] : '?';
  yajl_gen_string(g, (const unsigned char *)ascii, n);
}

static void gen_integer(yajl_gen g, const char *key, long long value)
{
  gen_text(g, key);
  yajl_gen_integer(g, value);
}

/* The text written, copied into dst (cap octets with its NUL): its length,
 * or HTTP_CODEC_E_SPACE; dst NULL: a malloc'ed copy in *copy. Frees g. */
static long gen_finish(yajl_gen g, char *dst, size_t cap, char **copy)
{
  const unsigned char *text;
  size_t len;
  long rc = HTTP_CODEC_E_NOMEM;
  if (yajl_gen_get_buf(g, &text, &len) == yajl_gen_status_ok) {
    if (!dst && (*copy = malloc(len + 1)))
      dst = *copy, cap = len + 1;
    if (dst && len < cap) {
      memcpy(dst, text, len);
      dst[len] = 0;
      rc = (long)len;
    } else if (dst) {
      rc = HTTP_CODEC_E_SPACE;
    }
  }
  yajl_gen_free(g);
  return rc;
}

static char *gen_string_copy(yajl_gen g)
{
  char *copy = NULL;
  return gen_finish(g, NULL, 0, &copy) >= 0 ? copy : NULL;
}

/* ---- answers ---- */

char *http_codec_json_answer(const struct http_codec_batch *b, const struct http_codec_result *results,
                             unsigned *status)
{
  yajl_gen g = yajl_gen_alloc(NULL);
  char to[MSG_ADDR_LEN + 2], id[24];
  size_t first_refused, taken;
  bool queued;

  if (!g)
    return NULL;
  taken = http_codec_results_taken(b, results, &first_refused, &queued);
  yajl_gen_map_open(g);
  gen_integer(g, "accepted", (long long)taken);
  gen_integer(g, "refused", (long long)(b->count - taken));
  gen_text(g, "messages");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < b->count; i++) {
    const struct http_codec_result *r = &results[i];
    bool ok = http_codec_outcome_taken(r->outcome);
    http_codec_addr_text(to, sizeof to, &b->items[i].msg.dst);
    yajl_gen_map_open(g);
    gen_integer(g, "message", (long long)b->items[i].message);
    gen_string(g, "to", to);
    gen_string(g, "status", ok ? (r->outcome == HTTP_CODEC_QUEUED ? "queued" : "accepted") : "refused");
    if (ok) {
      snprintf(id, sizeof id, "%" PRIu64, r->id);
      gen_string(g, "id", id);
    } else {
      gen_string(g, "error", http_codec_outcome_text(r->outcome));
      gen_text(g, "retry");
      yajl_gen_bool(g, http_codec_outcome_retry(r->outcome));
    }
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  if (taken == b->count)
    *status = 202;
  else if (taken)
    *status = 207;
  else if (results[first_refused].outcome == HTTP_CODEC_THROTTLED)
    *status = 429;
  else if (results[first_refused].outcome == HTTP_CODEC_TEMPORARY)
    *status = 503;
  else if (results[first_refused].outcome == HTTP_CODEC_NO_CREDIT)
    *status = 402;
  else
    *status = 400;
  return gen_string_copy(g);
}

char *http_codec_json_faults(const struct http_codec_batch *b)
{
  yajl_gen g = yajl_gen_alloc(NULL);
  size_t kept = b->fault_count < HTTP_CODEC_FAULTS_MAX ? b->fault_count : HTTP_CODEC_FAULTS_MAX;
  if (!g)
    return NULL;
  yajl_gen_map_open(g);
  gen_string(g, "error", "invalid request");
  gen_integer(g, "fault_count", (long long)b->fault_count);
  gen_text(g, "faults");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < kept; i++) {
    const struct http_codec_fault *f = &b->faults[i];
    yajl_gen_map_open(g);
    gen_integer(g, "message", f->message);
    gen_string(g, "field", f->field);
    gen_string(g, "reason", f->reason);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  return gen_string_copy(g);
}

char *http_codec_json_error(const char *error)
{
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g)
    return NULL;
  yajl_gen_map_open(g);
  gen_string(g, "error", error);
  yajl_gen_map_close(g);
  return gen_string_copy(g);
}

/* ---- receipts ---- */

int http_codec_dlr_json(char *dst, size_t cap, const struct http_codec_dlr *d)
{
  const struct msg_receipt *r = d ? d->receipt : NULL;
  char id[24], from[MSG_ADDR_LEN + 2], to[MSG_ADDR_LEN + 2], answer[256];
  yajl_gen g;

  if (!r)
    return HTTP_CODEC_E_INVALID;
  if (!(g = yajl_gen_alloc(NULL)))
    return HTTP_CODEC_E_NOMEM;
  unsigned type = http_codec_dlr_type(r->state);
  if (d->answer)
    snprintf(answer, sizeof answer, "%s", d->answer);
  else
    http_codec_receipt_answer(answer, sizeof answer, d, type);
  snprintf(id, sizeof id, "%" PRIu64, d->id);
  http_codec_addr_text(from, sizeof from, &r->src);
  http_codec_addr_text(to, sizeof to, &r->dst);
  const char *stat = type == HTTP_CODEC_DLR_SMSC_ACK    ? "ACK"
                     : type == HTTP_CODEC_DLR_SMSC_NACK ? "NACK"
                                                        : smpp_state_stat(r->state);
  /* Texts from a peer (an SMSC's id, its answer) may be any octets. */
  yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  yajl_gen_map_open(g);
  gen_string(g, "id", id);
  gen_integer(g, "dlr", type);
  gen_string(g, "status", stat ? stat : "");
  gen_integer(g, "err", r->err);
  gen_string(g, "from", from);
  gen_string(g, "to", to);
  gen_string(g, "answer", answer);
  gen_integer(g, "submit_time", (long long)r->submit_time);
  gen_integer(g, "done_time", (long long)r->done_time);
  gen_integer(g, "time", (long long)d->time);
  gen_string(g, "smsc", d->smsc);
  gen_string(g, "smsc_id", d->smsc_msgid);
  gen_string(g, "user", d->user);
  yajl_gen_map_close(g);
  return (int)gen_finish(g, dst, cap, NULL);
}

/* ---- provider answers ---- */

/* The value at a dotted path ("messages.0.id") in root, or NULL. */
static json_t *json_path(json_t *root, const char *path)
{
  json_t *v = root;
  while (v && *path) {
    size_t n = strcspn(path, ".");
    if (json_is_array(v)) {
      char *end;
      unsigned long i = strtoul(path, &end, 10);
      v = end == path + n ? json_array_get(v, i) : NULL;
    } else {
      v = json_object_getn(v, path, n);
    }
    path += n + (path[n] == '.');
  }
  return v;
}

static void provider_id(const char *body, size_t len, const char *id_field, char *msgid, size_t cap)
{
  if (!id_field || !*id_field) {
    while (len && (*body == ' ' || *body == '\t' || *body == '\r' || *body == '\n')) {
      body++;
      len--;
    }
    while (len && (body[len - 1] == ' ' || body[len - 1] == '\t' || body[len - 1] == '\r' ||
                   body[len - 1] == '\n'))
      len--;
    if (len < cap && !memchr(body, 0, len)) {
      memcpy(msgid, body, len);
      msgid[len] = 0;
    }
    return;
  }
  json_t *root = json_loadb(body, len, 0, NULL);
  json_t *v = root ? json_path(root, id_field) : NULL;
  if (json_is_string(v) && json_string_length(v) < cap && !memchr(json_string_value(v), 0, json_string_length(v)))
    memcpy(msgid, json_string_value(v), json_string_length(v) + 1);
  else if (json_is_integer(v))
    snprintf(msgid, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  json_decref(root);
}

enum proto_status http_codec_out_classify(long http_status, const char *body, size_t len,
                                          const char *id_field, char *msgid, size_t msgid_cap)
{
  if (msgid_cap)
    msgid[0] = 0;
  if (http_status >= 200 && http_status < 300) {
    if (msgid_cap && body)
      provider_id(body, len, id_field, msgid, msgid_cap);
    return PROTO_OK;
  }
  if (http_status == 429)
    return PROTO_E_THROTTLED;
  if (http_status == 0 || http_status == 408 || (http_status >= 500 && http_status < 600))
    return PROTO_E_TEMPORARY;
  return PROTO_E_PERMANENT;
}
