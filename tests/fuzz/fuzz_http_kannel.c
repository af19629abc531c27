/* fuzz_http_kannel.c - libFuzzer target for Kannel's sendsms parameters: the
 * form decoder, the credentials, the parser and its answers, and the dlr-url
 * expansion of what it accepted. The input is read as a query string; it is
 * also used as a template for a fixed message and receipt.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "http_codec.h"
#include "sms_text.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

#define PARAMS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char out[16384];

static void check_batch(const struct http_codec_batch *b)
{
  struct http_codec_result r[64];
  char buf[512], user[MSG_USER_LEN] = "u";
  unsigned status;
  struct msg_receipt rc = { .state = 2 };
  struct http_codec_dlr d = { .receipt = &rc, .id = 1, .user = user, .time = 1 };
  CHECK(b->count >= 1 && b->count <= 100);
  for (size_t i = 0; i < b->count; i++) {
    const struct msg *m = &b->items[i].msg;
    struct sms_text_payload p = { (enum sms_text_coding)m->coding, m->data, m->data_len, m->udh, m->udh_len };
    CHECK(sms_text_segment_count(&p, SMS_TEXT_REF8) >= 1);
    CHECK(m->dst.addr[0] && strspn(m->dst.addr, "0123456789") == strlen(m->dst.addr));
    CHECK(m->dlr_mask <= 31);
    CHECK((b->items[i].dlr_url == NULL) == (b->items[i].dlr_method == HTTP_CODEC_DLR_NONE));
    if (i < 64)
      r[i] = (struct http_codec_result){ (enum http_codec_outcome)(i % 6), i };
    if (b->items[i].dlr_url) {
      rc.src = m->src;
      rc.dst = m->dst;
      int n = http_codec_dlr_url(out, sizeof out, b->items[i].dlr_url, &d);
      CHECK(n == HTTP_CODEC_E_SPACE || (n >= 0 && (size_t)n == strlen(out)));
    }
  }
  if (b->count <= 64) {
    const char *text = http_codec_kannel_answer(b, r, &status, buf, sizeof buf);
    CHECK(text && (status == 202 || status == 500 || status == 503 || status == 403));
  }
}

/* The input as a template, for a message and for a receipt. */
static void templates(const char *tmpl)
{
  static const uint8_t ucs2[] = { 0x04, 0x1F, 0xD8, 0x3D, 0xDE, 0x00 };
  struct msg m = { .id = 9, .coding = 8, .dcs = 0x19, .data = ucs2, .data_len = sizeof ucs2 };
  struct msg_receipt rc = { .state = 5, .err = 1 };
  struct http_codec_dlr d = { .receipt = &rc, .id = 9, .smsc = "s", .time = 1 };
  strcpy(m.src.addr, "Shop");
  strcpy(m.dst.addr, "0049");
  rc.src = m.src;
  rc.dst = m.dst;
  for (int esc = 0; esc < 2; esc++) {
    int n = http_codec_out_expand(out, sizeof out, tmpl, &m, NULL, (enum http_codec_escape)esc);
    CHECK(n == HTTP_CODEC_E_SPACE || (n >= 0 && (size_t)n == strlen(out)));
  }
  int n = http_codec_dlr_url(out, sizeof out, tmpl, &d);
  CHECK(n == HTTP_CODEC_E_SPACE || (n >= 0 && (size_t)n == strlen(out)));
  n = http_codec_out_expand(out, 16, tmpl, &m, NULL, HTTP_CODEC_ESC_URL);
  CHECK(n == HTTP_CODEC_E_SPACE || (n >= 0 && n < 16));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct http_codec_param p[PARAMS_MAX];
  struct http_codec_limits lim = { .max_recipients = 100, .max_parts = 20 };
  struct http_codec_batch *b = NULL;
  char user[MSG_USER_LEN], password[MSG_USER_LEN];
  char *text = malloc(size + 1); /* the decoder's one spare octet, and no more */
  memcpy(text, data, size);
  text[size] = 0;
  templates(text);
  int n = http_codec_form_parse(text, size, p, PARAMS_MAX);
  if (n < 0) {
    CHECK(n == HTTP_CODEC_E_SPACE);
    free(text);
    return 0;
  }
  for (int i = 0; i < n; i++) {
    CHECK(p[i].value >= text && p[i].value + p[i].len <= text + size);
    CHECK(p[i].value[p[i].len] == 0);
  }
  if (http_codec_kannel_credentials(p, (size_t)n, user, password) == 0)
    CHECK(strlen(user) < MSG_USER_LEN && strlen(password) < MSG_USER_LEN);
  int rc = http_codec_kannel_parse(&b, p, (size_t)n, &lim);
  if (rc == HTTP_CODEC_E_NOMEM) {
    CHECK(b == NULL);
  } else if (rc == 0) {
    check_batch(b);
  } else {
    CHECK(rc == HTTP_CODEC_E_INVALID || rc == HTTP_CODEC_E_TOO_LARGE);
    CHECK(b && b->kannel_status == 400 && b->kannel_answer && b->count == 0 && b->fault_count == 1);
  }
  http_codec_batch_free(b);
  free(text);
  return 0;
}
