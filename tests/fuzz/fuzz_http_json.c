/* fuzz_http_json.c - libFuzzer target for the JSON submit parser. Whatever
 * a body parses to must be usable: payloads and URLs inside the batch's
 * storage, codings and addresses valid, every message within the limits;
 * a refused body must say why; and the answers built from either must be
 * JSON again. Each submit is then expanded into a message template. A body
 * jansson reads as JSON must not be refused as not JSON.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_codec.h"
#include "sms_text.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const struct http_codec_batch *b, const void *p, size_t len)
{
  const uint8_t *q = p;
  return len == 0 || (q >= b->arena && q + len <= b->arena + b->arena_len);
}

static void check_submit(const struct http_codec_batch *b, const struct http_codec_submit *s)
{
  static char out[65536];
  const struct msg *m = &s->msg;
  struct sms_text_payload p = { (enum sms_text_coding)m->coding, m->data, m->data_len, m->udh, m->udh_len };
  int parts = sms_text_segment_count(&p, SMS_TEXT_REF8);
  CHECK(m->coding == SMS_TEXT_GSM7 || m->coding == SMS_TEXT_8BIT || m->coding == SMS_TEXT_UCS2);
  CHECK(inside(b, m->data, m->data_len) && inside(b, m->udh, m->udh_len));
  CHECK(parts >= 1 && parts <= 10);
  if (m->coding == SMS_TEXT_GSM7)
    for (uint32_t i = 0; i < m->data_len; i++)
      CHECK(m->data[i] <= 0x7F);
  CHECK(m->dst.addr[0] && strspn(m->dst.addr, "0123456789") == strlen(m->dst.addr));
  CHECK(m->src.addr[0] && m->dlr_mask <= 31 && m->validity <= 0 && m->deferred <= 0);
  CHECK((s->dlr_url == NULL) == (s->dlr_method == HTTP_CODEC_DLR_NONE));
  if (s->dlr_url) {
    CHECK(inside(b, s->dlr_url, strlen(s->dlr_url) + 1));
    CHECK(strncasecmp(s->dlr_url, "http", 4) == 0);
  }
  int n = http_codec_out_expand(out, sizeof out, "to=%p&from=%P&text=%b&udh=%u&m=%m&c=%c", m, NULL,
                                HTTP_CODEC_ESC_URL);
  CHECK(n >= 0 || n == HTTP_CODEC_E_INVALID || n == HTTP_CODEC_E_SPACE);
  if (n >= 0)
    CHECK((size_t)n == strlen(out));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct http_codec_limits lim = { .max_messages = 50, .max_recipients = 100, .max_parts = 10 };
  struct http_codec_batch *b = NULL;
  char *body = malloc(size ? size : 1), *text;
  json_t *j;
  memcpy(body, data, size); /* exact size: over-reads are caught */
  int rc = http_codec_json_parse(&b, body, size, &lim);
  if (rc == HTTP_CODEC_E_NOMEM) {
    CHECK(b == NULL);
    free(body);
    return 0;
  }
  CHECK(b != NULL);
  /* What jansson reads as JSON, the stream reader does too (but for a raw
   * NUL octet, which jansson takes as the end of the text). */
  j = memchr(body, 0, size) ? NULL : json_loadb(body, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  if (j)
    CHECK(rc == 0 || strncmp(b->faults[0].reason, "not JSON", 8) != 0);
  json_decref(j);
  if (rc == 0) {
    struct http_codec_result *r = calloc(b->count, sizeof *r);
    unsigned status;
    CHECK(b->count >= 1 && b->count <= 100 && b->fault_count == 0);
    for (size_t i = 0; i < b->count; i++) {
      check_submit(b, &b->items[i]);
      r[i] = (struct http_codec_result){ (enum http_codec_outcome)(i % 6), i };
    }
    text = http_codec_json_answer(b, r, &status);
    CHECK(status == 202 || status == 207 || status == 429 || status == 503 || status == 400);
    free(r);
  } else {
    CHECK(rc == HTTP_CODEC_E_INVALID || rc == HTTP_CODEC_E_TOO_LARGE);
    CHECK(b->fault_count >= 1 && b->count == 0);
    text = http_codec_json_faults(b);
  }
  CHECK(text != NULL);
  j = json_loads(text, 0, NULL);
  CHECK(j != NULL);
  json_decref(j);
  free(text);
  http_codec_batch_free(b);
  free(body);
  return 0;
}
