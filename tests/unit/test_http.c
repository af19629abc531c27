/* test_http.c - the HTTP connector: the codec (JSON and Kannel submits, their
 * answers, dlr-url and message templates, provider answers), the server with
 * a fake gateway that completes from another thread, the receipt callback
 * sender against a local listener, and the outgoing client.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "charset.h"
#include "clock.h"
#include "evloop.h"
#include "http_callback.h"
#include "http_client.h"
#include "http_codec.h"
#include "http_server.h"
#include "netutil.h"
#include "sms_text.h"
#include "testutil.h"

static void sleep_ms(unsigned ms)
{
  nanosleep(&(struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L }, NULL);
}

/* ---- codec: JSON ---- */

static struct http_codec_batch *json_ok(const char *body)
{
  struct http_codec_batch *b = NULL;
  int rc = http_codec_json_parse(&b, body, strlen(body), NULL);
  CU_ASSERT_EQUAL(rc, 0);
  if (rc != 0 && b && b->fault_count)
    fprintf(stderr, "unexpected fault: %s: %s\n", b->faults[0].field, b->faults[0].reason);
  return b;
}

/* Parses a bad body: returns the batch with rc and the first fault checked. */
static void json_bad(const char *body, const struct http_codec_limits *lim, int want_rc,
                     const char *field, const char *reason_part)
{
  struct http_codec_batch *b = NULL;
  int rc = http_codec_json_parse(&b, body, strlen(body), lim);
  CU_ASSERT_EQUAL(rc, want_rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(b->count, 0);
  CU_ASSERT_TRUE_FATAL(b->fault_count >= 1);
  CU_ASSERT_STRING_EQUAL(b->faults[0].field, field);
  if (!strstr(b->faults[0].reason, reason_part))
    fprintf(stderr, "fault %s: '%s' lacks '%s'\n", field, b->faults[0].reason, reason_part);
  CU_ASSERT_PTR_NOT_NULL(strstr(b->faults[0].reason, reason_part));
  http_codec_batch_free(b);
}

static void test_json_single_gsm(void)
{
  struct http_codec_batch *b = json_ok("{\"from\":\"Shop\",\"to\":\"+491701234567\",\"text\":\"Hello \\u20ac\"}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 1);
  const struct msg *m = &b->items[0].msg;
  CU_ASSERT_STRING_EQUAL(m->src.addr, "Shop");
  CU_ASSERT_EQUAL(m->src.ton, MSG_TON_ALPHANUMERIC);
  CU_ASSERT_STRING_EQUAL(m->dst.addr, "491701234567");
  CU_ASSERT_EQUAL(m->dst.ton, MSG_TON_INTERNATIONAL);
  /* the euro sign is in the extension table: GSM, as an escape pair */
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(m->dcs, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL_FATAL(m->data_len, 8);
  CU_ASSERT_EQUAL(memcmp(m->data, "Hello ", 6), 0);
  CU_ASSERT_EQUAL(m->data[6], 0x1B);
  CU_ASSERT_EQUAL(m->data[7], 0x65);
  CU_ASSERT_EQUAL(m->dlr_mask, 0);
  CU_ASSERT_EQUAL(b->items[0].dlr_method, HTTP_CODEC_DLR_NONE);
  CU_ASSERT_PTR_NULL(b->items[0].dlr_url);
  http_codec_batch_free(b);
}

static void test_json_ucs2_and_options(void)
{
  struct http_codec_batch *b = json_ok(
    "{\"from\":\"4930123\",\"to\":4917012345,\"text\":\"Привет\",\"validity\":3600,"
    "\"mclass\":1,\"priority\":2,\"dlr_url\":\"http://app/dlr?t=%d\",\"dlr_mask\":1}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 1);
  const struct msg *m = &b->items[0].msg;
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(m->dcs, 0x19); /* UCS2 with class 1 */
  CU_ASSERT_EQUAL_FATAL(m->data_len, 12);
  CU_ASSERT_EQUAL(m->data[0], 0x04);
  CU_ASSERT_EQUAL(m->data[1], 0x1F);
  CU_ASSERT_STRING_EQUAL(m->src.addr, "4930123");
  CU_ASSERT_EQUAL(m->src.ton, MSG_TON_UNKNOWN);
  CU_ASSERT_STRING_EQUAL(m->dst.addr, "4917012345"); /* an integer recipient */
  CU_ASSERT_EQUAL(m->validity, -3600);               /* relative until accepted */
  CU_ASSERT_EQUAL(m->priority, 2);
  CU_ASSERT_EQUAL(m->dlr_mask, 1);
  CU_ASSERT_EQUAL(b->items[0].dlr_method, HTTP_CODEC_DLR_GET);
  CU_ASSERT_STRING_EQUAL(b->items[0].dlr_url, "http://app/dlr?t=%d");
  http_codec_batch_free(b);
}

static void test_json_batch_and_binary(void)
{
  struct http_codec_batch *b = json_ok(
    "[{\"from\":\"Shop\",\"to\":[\"4917\",\"+4918\"],\"text\":\"hi\"},"
    " {\"from\":\"Shop\",\"to\":\"4919\",\"hex\":\"48656c6c6f\",\"udh\":\"0605040B8423F0\","
    "  \"callback\":\"https://app/cb\"}]");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 3);
  CU_ASSERT_EQUAL(b->items[0].message, 0);
  CU_ASSERT_EQUAL(b->items[1].message, 0);
  CU_ASSERT_EQUAL(b->items[2].message, 1);
  CU_ASSERT_STRING_EQUAL(b->items[0].msg.dst.addr, "4917");
  CU_ASSERT_EQUAL(b->items[1].msg.dst.ton, MSG_TON_INTERNATIONAL);
  /* both recipients share the one payload */
  CU_ASSERT_PTR_EQUAL(b->items[0].msg.data, b->items[1].msg.data);
  const struct msg *m = &b->items[2].msg;
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL(m->dcs, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL_FATAL(m->data_len, 5);
  CU_ASSERT_EQUAL(memcmp(m->data, "Hello", 5), 0);
  CU_ASSERT_EQUAL_FATAL(m->udh_len, 7);
  CU_ASSERT_EQUAL(m->udh[0], 6);
  CU_ASSERT_EQUAL(m->udh[6], 0xF0);
  CU_ASSERT_EQUAL(b->items[2].dlr_method, HTTP_CODEC_DLR_POST);
  CU_ASSERT_STRING_EQUAL(b->items[2].dlr_url, "https://app/cb");
  /* a callback without dlr_mask asks for the final receipts */
  CU_ASSERT_EQUAL(m->dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);
  http_codec_batch_free(b);

  b = json_ok("{\"messages\":[{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"},{\"from\":\"1\",\"to\":\"3\",\"text\":\"b\",\"coding\":\"ucs2\"}]}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 2);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(b->items[1].msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(b->items[1].msg.data_len, 2);
  http_codec_batch_free(b);
}

static void test_json_errors(void)
{
  struct http_codec_limits two = { .max_messages = 2 };
  struct http_codec_limits one_part = { .max_parts = 1 };
  char long_text[400];
  json_bad("{\"from\":\"Shop\",\"text\":\"x\"}", NULL, HTTP_CODEC_E_INVALID, "to", "missing");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"txt\":\"x\"}", NULL, HTTP_CODEC_E_INVALID, "txt", "unknown field");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"text\":\"Привет\",\"coding\":\"gsm\"}", NULL,
           HTTP_CODEC_E_INVALID, "text", "GSM 03.38");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"text\":\"x\",\"coding\":\"latin9\"}", NULL,
           HTTP_CODEC_E_INVALID, "coding", "auto, gsm");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"text\":\"x\",\"hex\":\"00\"}", NULL, HTTP_CODEC_E_INVALID,
           "hex", "not both");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"hex\":\"abc\"}", NULL, HTTP_CODEC_E_INVALID, "hex", "hex digits");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"hex\":\"0102\",\"coding\":\"ucs2\",\"udh\":\"0700\"}", NULL,
           HTTP_CODEC_E_INVALID, "udh", "UDH");
  json_bad("{\"from\":\"Shop\",\"to\":[\"1\",\"x2\"],\"text\":\"x\"}", NULL, HTTP_CODEC_E_INVALID, "to",
           "recipient 1: not a number");
  json_bad("{\"from\":\"Shop\",\"to\":[],\"text\":\"x\"}", NULL, HTTP_CODEC_E_INVALID, "to", "no recipients");
  json_bad("{\"from\":\"TwelveLetter\",\"to\":\"1\",\"text\":\"x\"}", NULL, HTTP_CODEC_E_INVALID, "from",
           "at most 11");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"text\":\"x\",\"dlr_url\":\"ftp://x/\"}", NULL,
           HTTP_CODEC_E_INVALID, "dlr_url", "http://");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\",\"text\":\"x\",\"dlr_mask\":32}", NULL, HTTP_CODEC_E_INVALID,
           "dlr_mask", "from 0 to 31");
  json_bad("{\"from\":\"Shop\",\"to\":\"1\"", NULL, HTTP_CODEC_E_INVALID, "", "not JSON");
  json_bad("[]", NULL, HTTP_CODEC_E_INVALID, "messages", "no messages");
  json_bad("\"text\"", NULL, HTTP_CODEC_E_INVALID, "", "expected a message");
  json_bad("[{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"},{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"},"
           "{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"}]",
           &two, HTTP_CODEC_E_TOO_LARGE, "messages", "at most 2 messages");
  memset(long_text, 'a', 200);
  snprintf(long_text + 200, sizeof long_text - 200, "\"}");
  char body[600];
  snprintf(body, sizeof body, "{\"from\":\"1\",\"to\":\"2\",\"text\":\"%s", long_text);
  json_bad(body, &one_part, HTTP_CODEC_E_INVALID, "text", "at most 1 SMS");

  /* every bad message is reported, and the good one is not submitted */
  struct http_codec_batch *b = NULL;
  const char *two_bad = "[{\"from\":\"1\",\"text\":\"a\"},{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"},"
                        "{\"to\":\"2\",\"text\":\"a\"}]";
  CU_ASSERT_EQUAL(http_codec_json_parse(&b, two_bad, strlen(two_bad), NULL), HTTP_CODEC_E_INVALID);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(b->count, 0);
  CU_ASSERT_EQUAL_FATAL(b->fault_count, 2);
  CU_ASSERT_EQUAL(b->faults[0].message, 0);
  CU_ASSERT_EQUAL(b->faults[1].message, 2);
  CU_ASSERT_STRING_EQUAL(b->faults[1].field, "from");
  char *text = http_codec_json_faults(b);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  json_t *j = json_loads(text, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(json_object_get(j, "faults"), 1), "field")), "from");
  json_decref(j);
  free(text);
  http_codec_batch_free(b);
}

/* A lone UTF-16 surrogate escape is no text: refused as invalid UTF-8 is
 * (yajl would put '?' in its place), wherever it stands; a pair, an escaped
 * backslash before "u", and the other escapes pass. */
static void test_json_lone_surrogates(void)
{
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\ud800\"}", NULL, HTTP_CODEC_E_INVALID, "",
           "lone UTF-16 surrogate \\ud800");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\\uDBFFb\"}", NULL, HTTP_CODEC_E_INVALID, "",
           "not valid Unicode: a lone UTF-16 surrogate \\udbff (line 1, column 31)");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\udc00\"}", NULL, HTTP_CODEC_E_INVALID, "",
           "surrogate \\udc00");
  /* a high one followed by another escape, by a second high one, by the
   * string's end; a low one after a whole pair */
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\ud800\\u0041\"}", NULL, HTTP_CODEC_E_INVALID, "",
           "surrogate \\ud800");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\ud83d\\ud83d\\ude00\"}", NULL, HTTP_CODEC_E_INVALID,
           "", "surrogate \\ud83d");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"x\\ud83d\",\"pid\":0}", NULL, HTTP_CODEC_E_INVALID, "",
           "surrogate \\ud83d");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\ud83d\\ude00\\ude00\"}", NULL, HTTP_CODEC_E_INVALID,
           "", "surrogate \\ude00");
  /* in any string: a batch's second message, a key */
  json_bad("[{\"from\":\"1\",\"to\":\"2\",\"text\":\"ok\"},\n{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\udfff\"}]",
           NULL, HTTP_CODEC_E_INVALID, "", "(line 2, column 30)");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"x\",\"\\ud800\":1}", NULL, HTTP_CODEC_E_INVALID, "",
           "surrogate \\ud800");
  /* as invalid UTF-8 is: raw surrogate octets (ED A0 80) and an overlong form */
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\xed\xa0\x80\"}", NULL, HTTP_CODEC_E_INVALID, "text",
           "not valid UTF-8");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\xc0\xaf\"}", NULL, HTTP_CODEC_E_INVALID, "text",
           "not valid UTF-8");

  /* a pair is one character: U+1F600 as UCS2 D83D DE00 */
  struct http_codec_batch *b = json_ok("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\ud83d\\uDE00\"}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 1);
  const struct msg *m = &b->items[0].msg;
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL_FATAL(m->data_len, 4);
  CU_ASSERT_EQUAL(m->data[0], 0xD8);
  CU_ASSERT_EQUAL(m->data[1], 0x3D);
  CU_ASSERT_EQUAL(m->data[2], 0xDE);
  CU_ASSERT_EQUAL(m->data[3], 0x00);
  http_codec_batch_free(b);
  /* "\\ud800" is a backslash and "ud800"; other escapes are text */
  b = json_ok("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\\\\ud800 \\u00e9 \\n \\\" \\\\\"}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(b->count, 1);
  http_codec_batch_free(b);
}

/* The stream reader's corners: each shape a client may send by mistake
 * gets a fault naming the message and the field, and nothing is submitted. */
static void test_json_stream_shapes(void)
{
  struct http_codec_limits three = { .max_recipients = 3 };
  /* escapes are decoded; numbers as recipients are their digits */
  struct http_codec_batch *b = json_ok("{\"from\":\"Sh\\u006fp\",\"to\":[4917,\"+4918\"],"
                                       "\"text\":\"a\\\"b\\\\c\\n\\u00e9\",\"priority\":2}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 2);
  CU_ASSERT_STRING_EQUAL(b->items[0].msg.src.addr, "Shop");
  CU_ASSERT_STRING_EQUAL(b->items[0].msg.dst.addr, "4917");
  CU_ASSERT_STRING_EQUAL(b->items[1].msg.dst.addr, "4918");
  CU_ASSERT_EQUAL(b->items[0].msg.priority, 2);
  /* a"b\c LF é in GSM: é is 0x05, LF 0x0A, backslash an escape pair */
  static const uint8_t gsm[] = { 'a', '"', 'b', 0x1B, 0x2F, 'c', 0x0A, 0x05 };
  CU_ASSERT_EQUAL_FATAL(b->items[0].msg.data_len, sizeof gsm);
  CU_ASSERT_EQUAL(memcmp(b->items[0].msg.data, gsm, sizeof gsm), 0);
  http_codec_batch_free(b);

  /* the wrapper's messages; a message that is not an object */
  json_bad("{\"messages\":[1,{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"}]}", NULL, HTTP_CODEC_E_INVALID, "",
           "a message is a JSON object");
  json_bad("[[{\"from\":\"1\"}]]", NULL, HTTP_CODEC_E_INVALID, "", "a message is a JSON object");
  json_bad("{\"messages\":{\"from\":\"1\"}}", NULL, HTTP_CODEC_E_INVALID, "", "expected a message object");
  json_bad("{\"messages\":[{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"}],\"user\":\"x\"}", NULL,
           HTTP_CODEC_E_INVALID, "user", "unknown field next to messages");
  json_bad("{\"messages\":[]}", NULL, HTTP_CODEC_E_INVALID, "messages", "no messages");
  json_bad("{}", NULL, HTTP_CODEC_E_INVALID, "from", "missing");
  json_bad("42", NULL, HTTP_CODEC_E_INVALID, "", "expected a message object");
  /* fields given twice, of the wrong kind, or holding containers */
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"to\":\"3\"}", NULL, HTTP_CODEC_E_INVALID, "to",
           "given twice");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":{\"a\":[1,2,{}]}}", NULL, HTTP_CODEC_E_INVALID, "text",
           "a string");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\\u0000b\"}", NULL, HTTP_CODEC_E_INVALID, "text",
           "without \\u0000");
  json_bad("{\"from\":\"1\",\"to\":[\"2\",{\"n\":\"3\"}],\"text\":\"a\"}", NULL, HTTP_CODEC_E_INVALID, "to",
           "recipient 1: a string of digits");
  json_bad("{\"from\":\"1\",\"to\":[-5],\"text\":\"a\"}", NULL, HTTP_CODEC_E_INVALID, "to",
           "recipient 0: a string of digits");
  json_bad("{\"from\":\"1\",\"to\":{\"n\":\"3\"},\"text\":\"a\"}", NULL, HTTP_CODEC_E_INVALID, "to",
           "recipient 0: a string of digits");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"pid\":1.5}", NULL, HTTP_CODEC_E_INVALID, "pid",
           "an integer from 0 to 255");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"coding\":null}", NULL, HTTP_CODEC_E_INVALID,
           "coding", "auto, gsm");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"x\":[[[[]]]],\"y\":1}", NULL, HTTP_CODEC_E_INVALID,
           "x", "unknown field");
  /* limits count as the body is read */
  json_bad("[{\"from\":\"1\",\"to\":[\"2\",\"3\"],\"text\":\"a\"},{\"from\":\"1\",\"to\":[\"2\",\"3\"],"
           "\"text\":\"a\"}]",
           &three, HTTP_CODEC_E_TOO_LARGE, "messages", "at most");
  /* not JSON: where, and nothing else said */
  json_bad("[{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"x\":1},\n {\"from\": }]", NULL,
           HTTP_CODEC_E_INVALID, "", "(line 2, column");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"\xff\"}", NULL, HTTP_CODEC_E_INVALID, "", "not JSON");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"} {}", NULL, HTTP_CODEC_E_INVALID, "", "not JSON");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"pid\":99999999999999999999}", NULL,
           HTTP_CODEC_E_INVALID, "", "not JSON");
  char deep[300];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = 0;
  json_bad(deep, NULL, HTTP_CODEC_E_INVALID, "", "nested deeper");

  /* send_at: absolute, as Unix seconds or UTC text; a time passed is now */
  char at[160];
  long long later = (long long)time(NULL) + 3600;
  snprintf(at, sizeof at, "{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"send_at\":%lld}", later);
  b = json_ok(at);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(b->items[0].msg.deferred, later);
  http_codec_batch_free(b);
  b = json_ok("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"send_at\":\"2020-01-02T03:04:05Z\"}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(b->items[0].msg.deferred, 0);
  http_codec_batch_free(b);
  struct tm tm;
  time_t t = (time_t)later;
  char iso[32];
  strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
  snprintf(at, sizeof at, "{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"send_at\":\"%s\"}", iso);
  b = json_ok(at);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(b->items[0].msg.deferred, later);
  http_codec_batch_free(b);
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"send_at\":\"tomorrow\"}", NULL, HTTP_CODEC_E_INVALID,
           "send_at", "Unix seconds or UTC");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"send_at\":99999999999}", NULL, HTTP_CODEC_E_INVALID,
           "send_at", "within a year");
  json_bad("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\",\"deferred\":60,\"send_at\":1}", NULL, HTTP_CODEC_E_INVALID,
           "send_at", "not both");

  /* many recipients in one message grow the batch past its first room */
  char many[8192];
  size_t n = (size_t)snprintf(many, sizeof many, "{\"from\":\"1\",\"text\":\"a\",\"to\":[");
  for (int i = 0; i < 500; i++)
    n += (size_t)snprintf(many + n, sizeof many - n, "%s%d", i ? "," : "", 1000 + i);
  snprintf(many + n, sizeof many - n, "]}");
  b = json_ok(many);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 500);
  CU_ASSERT_STRING_EQUAL(b->items[499].msg.dst.addr, "1499");
  CU_ASSERT_PTR_EQUAL(b->items[0].msg.data, b->items[499].msg.data);
  http_codec_batch_free(b);
}

static json_t *answer_of(const struct http_codec_batch *b, const struct http_codec_result *r, unsigned *status)
{
  char *text = http_codec_json_answer(b, r, status);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  json_t *j = json_loads(text, 0, NULL);
  free(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  return j;
}

static void test_json_answer(void)
{
  struct http_codec_batch *b = json_ok("{\"from\":\"1\",\"to\":[\"+4917\",\"4918\",\"4919\"],\"text\":\"a\"}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL_FATAL(b->count, 3);
  struct http_codec_result r[3] = { { HTTP_CODEC_ACCEPTED, 72057594037927937ull },
                                    { HTTP_CODEC_QUEUED, 12 },
                                    { HTTP_CODEC_TEMPORARY, 0 } };
  unsigned status = 0;
  json_t *j = answer_of(b, r, &status);
  CU_ASSERT_EQUAL(status, 207);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "accepted")), 2);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "refused")), 1);
  json_t *list = json_object_get(j, "messages");
  /* ids as strings: no digit lost to a double */
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(list, 0), "id")), "72057594037927937");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(list, 0), "to")), "+4917");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(list, 1), "status")), "queued");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(list, 2), "status")), "refused");
  CU_ASSERT_TRUE(json_is_true(json_object_get(json_array_get(list, 2), "retry")));
  CU_ASSERT_PTR_NULL(json_object_get(json_array_get(list, 2), "id"));
  json_decref(j);

  static const struct {
    enum http_codec_outcome o;
    unsigned status;
  } all[] = { { HTTP_CODEC_ACCEPTED, 202 }, { HTTP_CODEC_THROTTLED, 429 }, { HTTP_CODEC_TEMPORARY, 503 },
              { HTTP_CODEC_NO_ROUTE, 400 }, { HTTP_CODEC_REJECTED, 400 }, { HTTP_CODEC_NO_CREDIT, 402 } };
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
    for (int i = 0; i < 3; i++)
      r[i].outcome = all[k].o;
    j = answer_of(b, r, &status);
    CU_ASSERT_EQUAL(status, all[k].status);
    json_decref(j);
  }
  http_codec_batch_free(b);
}

/* ---- codec: Kannel ---- */

/* Form-decodes query into params (query is copied into buf). */
static int form(const char *query, char *buf, size_t cap, struct http_codec_param *p, size_t n)
{
  size_t len = strlen(query);
  CU_ASSERT_FATAL(len < cap);
  memcpy(buf, query, len + 1);
  return http_codec_form_parse(buf, len, p, n);
}

static void test_form_parse(void)
{
  char buf[256];
  struct http_codec_param p[8];
  int n = form("username=a&password=b%20c&text=Hi+there%21&to=4917+4918&&text=second&flag&bad=%zz%4", buf,
               sizeof buf, p, 8);
  CU_ASSERT_EQUAL_FATAL(n, 7);
  CU_ASSERT_STRING_EQUAL(p[0].name, "username");
  CU_ASSERT_STRING_EQUAL(p[0].value, "a");
  CU_ASSERT_STRING_EQUAL(p[1].value, "b c");
  CU_ASSERT_STRING_EQUAL(p[2].value, "Hi there!");
  CU_ASSERT_EQUAL(p[2].len, 9);
  CU_ASSERT_STRING_EQUAL(p[3].value, "4917 4918");
  CU_ASSERT_STRING_EQUAL(p[5].name, "flag");
  CU_ASSERT_EQUAL(p[5].len, 0);
  CU_ASSERT_STRING_EQUAL(p[6].value, "%zz%4"); /* a broken escape stays as it is */
  /* octets, NUL included */
  n = form("text=a%00b&udh=%06%05%04%0B%84%23%F0", buf, sizeof buf, p, 8);
  CU_ASSERT_EQUAL_FATAL(n, 2);
  CU_ASSERT_EQUAL(p[0].len, 3);
  CU_ASSERT_EQUAL(memcmp(p[0].value, "a\0b", 3), 0);
  CU_ASSERT_EQUAL(p[1].len, 7);
  CU_ASSERT_EQUAL((uint8_t)p[1].value[6], 0xF0);
  CU_ASSERT_EQUAL(form("a=1&b=2&c=3", buf, sizeof buf, p, 2), HTTP_CODEC_E_SPACE);
}

static struct http_codec_batch *kannel(const char *query, int want_rc)
{
  static char buf[2048];
  struct http_codec_param p[32];
  struct http_codec_batch *b = NULL;
  int n = form(query, buf, sizeof buf, p, 32);
  CU_ASSERT_FATAL(n >= 0);
  int rc = http_codec_kannel_parse(&b, p, (size_t)n, NULL);
  CU_ASSERT_EQUAL(rc, want_rc);
  if (rc != want_rc && b && b->fault_count)
    fprintf(stderr, "kannel: %s\n", b->faults[0].reason);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  return b;
}

static void kannel_refused(const char *query, const char *answer)
{
  struct http_codec_batch *b = kannel(query, HTTP_CODEC_E_INVALID);
  CU_ASSERT_EQUAL(b->kannel_status, 400);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b->kannel_answer);
  CU_ASSERT_STRING_EQUAL(b->kannel_answer, answer);
  if (strcmp(b->kannel_answer, answer) != 0)
    fprintf(stderr, "%s: '%s', want '%s'\n", query, b->kannel_answer, answer);
  CU_ASSERT_EQUAL(b->count, 0);
  http_codec_batch_free(b);
}

static void test_kannel_params(void)
{
  struct http_codec_batch *b = kannel(
    "username=load&password=secret&from=%2B4930123&to=4917+%2B4918&text=Hello+%E2%82%AC&dlr-mask=3"
    "&dlr-url=http%3A%2F%2Fapp%2Fdlr%3Fid%3D7%26type%3D%25d&validity=60&mclass=1&pid=64&priority=1"
    "&smsc=route-a&account=acct&binfo=b1",
    0);
  CU_ASSERT_EQUAL_FATAL(b->count, 2);
  const struct msg *m = &b->items[0].msg;
  CU_ASSERT_STRING_EQUAL(m->src.addr, "4930123");
  CU_ASSERT_EQUAL(m->src.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_STRING_EQUAL(m->dst.addr, "4917");
  CU_ASSERT_STRING_EQUAL(b->items[1].msg.dst.addr, "4918");
  CU_ASSERT_EQUAL(b->items[1].msg.dst.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(m->dcs, 0xF1); /* GSM, class 1 */
  CU_ASSERT_EQUAL(m->data_len, 8);
  CU_ASSERT_EQUAL(m->dlr_mask, 3);
  CU_ASSERT_EQUAL(m->validity, -3600); /* Kannel's minutes */
  CU_ASSERT_EQUAL(m->pid, 64);
  CU_ASSERT_EQUAL(m->priority, 1);
  CU_ASSERT_EQUAL(b->items[0].dlr_method, HTTP_CODEC_DLR_GET);
  CU_ASSERT_STRING_EQUAL(b->items[0].dlr_url, "http://app/dlr?id=7&type=%d");
  CU_ASSERT_STRING_EQUAL(b->smsc, "route-a");
  CU_ASSERT_STRING_EQUAL(b->account, "acct");
  CU_ASSERT_STRING_EQUAL(b->binfo, "b1");
  http_codec_batch_free(b);

  /* coding 2 with a charset converts; without one the text is UTF-16BE as it is */
  b = kannel("from=1&to=2&coding=2&charset=utf-8&text=%D0%9F", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL_FATAL(b->items[0].msg.data_len, 2);
  CU_ASSERT_EQUAL(b->items[0].msg.data[0], 0x04);
  CU_ASSERT_EQUAL(b->items[0].msg.data[1], 0x1F);
  http_codec_batch_free(b);
  b = kannel("from=1&to=2&coding=2&text=%04%1F%00A", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL_FATAL(b->items[0].msg.data_len, 4);
  CU_ASSERT_EQUAL(b->items[0].msg.data[3], 'A');
  http_codec_batch_free(b);
  /* no coding: UCS2 when the text needs it */
  b = kannel("from=1&to=2&text=%D0%9F", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_UCS2);
  http_codec_batch_free(b);
  /* coding 0 forces GSM, with '?' for what GSM lacks */
  b = kannel("from=1&to=2&coding=0&text=%D0%9F%D0%9F", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL_FATAL(b->items[0].msg.data_len, 2);
  CU_ASSERT_EQUAL(memcmp(b->items[0].msg.data, "??", 2), 0);
  http_codec_batch_free(b);
  /* Latin-1 text */
  b = kannel("from=1&to=2&charset=ISO-8859-1&text=Gr%FC%DFe", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_GSM7);
  uint8_t gsm[16];
  int n = charset_utf8_to_gsm(gsm, sizeof gsm, "Grüße", strlen("Grüße"), 0);
  CU_ASSERT_EQUAL_FATAL((int)b->items[0].msg.data_len, n);
  CU_ASSERT_EQUAL(memcmp(b->items[0].msg.data, gsm, (size_t)n), 0);
  http_codec_batch_free(b);
  /* a UDH as octets makes it 8-bit; as hex too (X-Kannel-UDH) */
  b = kannel("from=1&to=2&udh=%06%05%04%0B%84%23%F0&text=%00%01%02", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.coding, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL(b->items[0].msg.udh_len, 7);
  CU_ASSERT_EQUAL(b->items[0].msg.data_len, 3);
  CU_ASSERT_EQUAL(b->items[0].msg.data[2], 2);
  http_codec_batch_free(b);
  b = kannel("from=1&to=2&udh=0605040B8423F0&coding=1&text=ab", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.udh_len, 7);
  CU_ASSERT_EQUAL(b->items[0].msg.udh[6], 0xF0);
  http_codec_batch_free(b);
  /* mwi into a message waiting group (4-7 clear the indication), alt-dcs
   * 0 the 0x1X form of a class; compress and rpi 0 are taken */
  b = kannel("from=1&to=2&text=a&mwi=1&compress=0&rpi=0", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.dcs, 0xD9);
  http_codec_batch_free(b);
  b = kannel("from=1&to=2&text=%D0%9F&mwi=6", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.dcs, 0xE2);
  http_codec_batch_free(b);
  b = kannel("from=1&to=2&text=a&mclass=2&alt-dcs=0", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.dcs, 0x12);
  http_codec_batch_free(b);
  b = kannel("from=1&to=2&text=a&mclass=2&alt-dcs=1", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.dcs, 0xF2);
  http_codec_batch_free(b);
  /* what only the request knows goes into its dlr-url when it is taken */
  b = kannel("username=ann&from=1&to=2&text=a&account=acc+1&binfo=b%2F1&meta-data=%3Fsmpp%3Fk1%3Dv%25201"
             "&dlr-url=http%3A%2F%2Fa%2F%3Fo%3D%25o%26b%3D%25B%26m%3D%25%23smpp%23k1%23%26n%3D%25n%26t%3D%25d",
             0);
  CU_ASSERT_STRING_EQUAL(b->items[0].dlr_url, "http://a/?o=acc%%201&b=b%%2F1&m=v%%201&n=ann&t=%d");
  http_codec_batch_free(b);
  /* deprecated names, and a dlr-mask without a URL stays for the account's default */
  b = kannel("from=1&to=2&text=a&dlrmask=1", 0);
  CU_ASSERT_EQUAL(b->items[0].msg.dlr_mask, 1);
  CU_ASSERT_EQUAL(b->items[0].dlr_method, HTTP_CODEC_DLR_NONE);
  http_codec_batch_free(b);
}

static void test_kannel_errors(void)
{
  kannel_refused("from=1&text=a", "Missing receiver number, rejected");
  kannel_refused("from=1&to=4917+%2B&text=a", "Receiver number misformed, rejected");
  kannel_refused("from=1&to=+&text=a", "Empty receiver number not allowed, rejected");
  kannel_refused("from=1&to=%20%20&text=a", "Empty receiver number not allowed, rejected");
  kannel_refused("to=2&text=a", "Sender missing and no global set, rejected");
  kannel_refused("from=1&to=2&text=a&dlr-mask=40", "DLR-Mask field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&dlr-mask=x", "DLR-Mask field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&coding=3", "Coding field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&mclass=4", "MClass field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&pid=256", "PID field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&validity=-5", "Validity field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&priority=9", "Priority field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&udh=%05%00", "UDH field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&dlr-url=ftp%3A%2F%2Fx", "DLR-URL field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&charset=KOI8-R", "Charset or body misformed, rejected");
  kannel_refused("from=1&to=2&text=%FF%FE", "Charset or body misformed, rejected");
  kannel_refused("from=1&to=2&text=a&account=a%5Bb%5D", "Account field misformed or too long, rejected");
  kannel_refused("from=1&to=2&text=a&mwi=8", "MWI field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&coding=1&mwi=1", "MWI field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&alt-dcs=2", "Alt-DCS field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&compress=2", "Compress field misformed, rejected");
  kannel_refused("from=1&to=2&text=a&compress=1", "Compression not supported, rejected");
  kannel_refused("from=1&to=2&text=a&rpi=1", "Reply path not supported, rejected");
  kannel_refused("from=1&to=2&text=a&meta-data=smpp", "Meta-Data field misformed, rejected");

  char buf[128];
  struct http_codec_param p[8];
  char user[MSG_USER_LEN], password[MSG_USER_LEN];
  int n = form("user=load&pass=secret", buf, sizeof buf, p, 8);
  CU_ASSERT_EQUAL(http_codec_kannel_credentials(p, (size_t)n, user, password), 0);
  CU_ASSERT_STRING_EQUAL(user, "load");
  CU_ASSERT_STRING_EQUAL(password, "secret");
  n = form("username=load", buf, sizeof buf, p, 8);
  CU_ASSERT_EQUAL(http_codec_kannel_credentials(p, (size_t)n, user, password), -1);
  n = form("username=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&password=x", buf, sizeof buf, p, 8);
  CU_ASSERT_EQUAL(http_codec_kannel_credentials(p, (size_t)n, user, password), -1);

  CU_ASSERT_STRING_EQUAL(http_codec_kannel_header_param("X-Kannel-DLR-Url"), "dlr-url");
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_header_param("x-kannel-from"), "from");
  CU_ASSERT_PTR_NULL(http_codec_kannel_header_param("Content-Type"));
  CU_ASSERT_PTR_NULL(http_codec_kannel_header_param("X-Kannel-Nonsense"));
}

static void test_kannel_answer(void)
{
  struct http_codec_batch *b = kannel("from=1&to=4917+4918+4919&text=a", 0);
  CU_ASSERT_EQUAL_FATAL(b->count, 3);
  struct http_codec_result r[3] = { { HTTP_CODEC_ACCEPTED, 1 }, { HTTP_CODEC_ACCEPTED, 2 }, { HTTP_CODEC_ACCEPTED, 3 } };
  char buf[256];
  unsigned status;
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_answer(b, r, &status, buf, sizeof buf), "0: Accepted for delivery");
  CU_ASSERT_EQUAL(status, 202);
  r[1].outcome = HTTP_CODEC_QUEUED;
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_answer(b, r, &status, buf, sizeof buf), "3: Queued for later delivery");
  CU_ASSERT_EQUAL(status, 202);
  r[0].outcome = r[1].outcome = r[2].outcome = HTTP_CODEC_TEMPORARY;
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_answer(b, r, &status, buf, sizeof buf), "Temporal failure, try again later.");
  CU_ASSERT_EQUAL(status, 503);
  r[0].outcome = r[1].outcome = r[2].outcome = HTTP_CODEC_NO_ROUTE;
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_answer(b, r, &status, buf, sizeof buf), "Not routable. Do not try again.");
  CU_ASSERT_EQUAL(status, 403);
  r[0].outcome = r[1].outcome = r[2].outcome = HTTP_CODEC_NO_CREDIT;
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_answer(b, r, &status, buf, sizeof buf),
                         "Credit used up. Do not try again before it is topped up.");
  CU_ASSERT_EQUAL(status, 402);
  r[0].outcome = HTTP_CODEC_ACCEPTED;
  r[1].outcome = HTTP_CODEC_THROTTLED;
  CU_ASSERT_STRING_EQUAL(http_codec_kannel_answer(b, r, &status, buf, sizeof buf),
                         "Sending failed. Failed receivers are: 4918 4919");
  CU_ASSERT_EQUAL(status, 500);
  http_codec_batch_free(b);
}

/* ---- codec: receipts and templates ---- */

static struct msg_receipt receipt_of(uint8_t state)
{
  struct msg_receipt r;
  memset(&r, 0, sizeof r);
  snprintf(r.id, sizeof r.id, "42");
  r.state = state;
  r.submit_time = 1704164400;
  r.done_time = 1704164645;
  snprintf(r.src.addr, sizeof r.src.addr, "Shop");
  r.src.ton = MSG_TON_ALPHANUMERIC;
  snprintf(r.dst.addr, sizeof r.dst.addr, "491701234567");
  r.dst.ton = MSG_TON_INTERNATIONAL;
  return r;
}

static void test_dlr_url(void)
{
  struct msg_receipt rc = receipt_of(MSG_STATE_DELIVERED);
  struct http_codec_dlr d = { .receipt = &rc, .id = 42, .smsc = "smpp out", .smsc_msgid = "abc def",
                              .user = "load", .time = 1704164645 };
  char out[1024];
  int n = http_codec_dlr_url(out, sizeof out,
                             "http://app/dlr?type=%d&id=%I&to=%p&from=%P&smsc=%i&time=%t&ts=%T"
                             "&fid=%F&n=%n&pct=%%&unk=%Z&ans=%A",
                             &d);
  CU_ASSERT_TRUE_FATAL(n > 0);
  CU_ASSERT_EQUAL((size_t)n, strlen(out));
  const char *want = "http://app/dlr?type=1&id=42&to=%2B491701234567&from=Shop&smsc=smpp%20out"
                     "&time=2024-01-02+03:04:05&ts=1704164645&fid=abc%20def&n=load&pct=%&unk=%25Z&ans=";
  CU_ASSERT_EQUAL(strncmp(out, want, strlen(want)), 0);
  if (strncmp(out, want, strlen(want)) != 0)
    fprintf(stderr, "\n got %s\nwant %s\n", out, want);
  /* the answer is the receipt text SMSCs send, URL-encoded */
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "id%3Aabc%20def%20sub%3A001%20dlvrd%3A001"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "stat%3ADELIVRD"));

  /* failures are type 2, intermediate ones 4, the SMSC's answers 8 and 16 */
  rc.state = MSG_STATE_UNDELIVERABLE;
  CU_ASSERT_EQUAL(http_codec_dlr_url(out, sizeof out, "%d", &d), 1);
  CU_ASSERT_STRING_EQUAL(out, "2");
  rc.state = MSG_STATE_ENROUTE;
  http_codec_dlr_url(out, sizeof out, "%d", &d);
  CU_ASSERT_STRING_EQUAL(out, "4");
  rc.state = MSG_STATE_SMSC_ACCEPTED;
  http_codec_dlr_url(out, sizeof out, "%d %A", &d);
  CU_ASSERT_STRING_EQUAL(out, "8 ACK%2F0%2F");
  rc.state = MSG_STATE_SMSC_REJECTED;
  rc.err = 88;
  http_codec_dlr_url(out, sizeof out, "%d %A", &d);
  CU_ASSERT_STRING_EQUAL(out, "16 NACK%2F88%2F");
  rc.state = MSG_STATE_ENROUTE;
  rc.err = 0;
  /* the answer's words: %k the first, %s/%S the next from the second, %r the rest, %a all */
  d.answer = "id:7 sub:001 st*t:DELIVRD";
  http_codec_dlr_url(out, sizeof out, "%k|%s|%S|%r|%a|%e", &d);
  CU_ASSERT_STRING_EQUAL(out, "id%3A7|sub%3A001|st~t%3ADELIVRD||id%3A7+sub%3A001+st%2At%3ADELIVRD|"
                              "69643A37207375623A3030312073742A743A44454C49565244");
  /* unknown escapes are text, their '%' encoded unless it starts a %XX the
   * template wrote; a '%' at the end too; escapes for what a receipt lacks are empty */
  http_codec_dlr_url(out, sizeof out, "a%2Fb%zc%3gd%G%#x#y#%o%B%D%R%f%x%", &d);
  CU_ASSERT_STRING_EQUAL(out, "a%2Fb%25zc%253gd%25G%25#x#y#%25");
  d.answer = "given text";
  http_codec_dlr_url(out, sizeof out, "%A|%b", &d);
  CU_ASSERT_STRING_EQUAL(out, "given%20text|given%20text");
  /* %q and %Q write a leading 00 as + */
  snprintf(rc.dst.addr, sizeof rc.dst.addr, "0049170");
  rc.dst.ton = MSG_TON_UNKNOWN;
  http_codec_dlr_url(out, sizeof out, "%q|%p", &d);
  CU_ASSERT_STRING_EQUAL(out, "%2B49170|0049170");
  /* too small: an error, never a cut URL */
  CU_ASSERT_EQUAL(http_codec_dlr_url(out, 10, "http://app/dlr?id=%I", &d), HTTP_CODEC_E_SPACE);
  CU_ASSERT_EQUAL(http_codec_dlr_url(out, sizeof out, "x", NULL), HTTP_CODEC_E_INVALID);
  CU_ASSERT_EQUAL(http_codec_dlr_type(MSG_STATE_EXPIRED), 2);
  CU_ASSERT_EQUAL(http_codec_dlr_type(MSG_STATE_ACCEPTED), 4);
  CU_ASSERT_EQUAL(http_codec_dlr_type(0), 0);
}

/* Escapes only the request knows, filled in before the receipt's. */
static void test_dlr_url_prepare(void)
{
  struct http_codec_submit_info info = { "ann", "acc 1", "b/1", "?smpp?k1=v%201&k2=x" };
  char prepared[512], out[1024];
  int n = http_codec_dlr_url_prepare(prepared, sizeof prepared,
                                     "http://a/?u=%n&o=%o&b=%B&d=%D&m=%#smpp#k1#&z=%#smpp#no#&t=%d&p=%%&x=%#bad",
                                     &info);
  CU_ASSERT_EQUAL_FATAL((size_t)n, strlen(prepared));
  struct msg_receipt rc = receipt_of(MSG_STATE_DELIVERED);
  struct http_codec_dlr d = { .receipt = &rc, .id = 42, .user = "other" };
  CU_ASSERT(http_codec_dlr_url(out, sizeof out, prepared, &d) > 0);
  CU_ASSERT_STRING_EQUAL(out, "http://a/?u=ann&o=acc%201&b=b%2F1&d=%3Fsmpp%3Fk1%3Dv%25201%26k2%3Dx&m=v%201&z="
                              "&t=1&p=%&x=%25#bad");
  /* %R: the template itself */
  CU_ASSERT(http_codec_dlr_url_prepare(prepared, sizeof prepared, "http://h/%R", &info) > 0);
  CU_ASSERT(http_codec_dlr_url(out, sizeof out, prepared, &d) > 0);
  CU_ASSERT_STRING_EQUAL(out, "http://h/http%3A%2F%2Fh%2F%25R");
  /* what does not fit is an error, never a cut URL */
  CU_ASSERT_EQUAL(http_codec_dlr_url_prepare(prepared, 12, "http://h/%o%o%o", &info), HTTP_CODEC_E_SPACE);
}

static void test_dlr_json(void)
{
  struct msg_receipt rc = receipt_of(MSG_STATE_DELIVERED);
  struct http_codec_dlr d = { .receipt = &rc, .id = 72057594037927937ull, .smsc = "smpp-out",
                              .smsc_msgid = "f00", .time = 1704164645 };
  char out[1024];
  int n = http_codec_dlr_json(out, sizeof out, &d);
  CU_ASSERT_TRUE_FATAL(n > 0);
  json_t *j = json_loads(out, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "id")), "72057594037927937");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "dlr")), 1);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "status")), "DELIVRD");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "to")), "+491701234567");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "from")), "Shop");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "smsc_id")), "f00");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "done_time")), 1704164645);
  CU_ASSERT_PTR_NULL(json_object_get(j, "user"));
  json_decref(j);
  CU_ASSERT_EQUAL(http_codec_dlr_json(out, 20, &d), HTTP_CODEC_E_SPACE);
  /* an SMSC's id that is not UTF-8 still gives JSON, its odd octets as '?' */
  d.smsc_msgid = "a\xff\"b";
  CU_ASSERT_TRUE_FATAL(http_codec_dlr_json(out, sizeof out, &d) > 0);
  j = json_loads(out, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "smsc_id")), "a?\"b");
  json_decref(j);
}

static struct msg text_msg(const char *utf8, enum sms_text_coding coding, uint8_t *buf, size_t cap)
{
  struct msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.src.addr, sizeof m.src.addr, "Shop");
  m.src.ton = MSG_TON_ALPHANUMERIC;
  snprintf(m.dst.addr, sizeof m.dst.addr, "4917");
  m.dst.ton = MSG_TON_INTERNATIONAL;
  m.coding = (uint8_t)coding;
  m.dcs = (uint8_t)coding;
  m.id = 7;
  int n = coding == SMS_TEXT_UCS2 ? charset_utf8_to_ucs2(buf, cap, utf8, strlen(utf8))
          : coding == SMS_TEXT_GSM7 ? charset_utf8_to_gsm(buf, cap, utf8, strlen(utf8), 0)
                                    : (int)strlen(utf8);
  if (coding == SMS_TEXT_8BIT)
    memcpy(buf, utf8, strlen(utf8));
  CU_ASSERT_TRUE(n >= 0);
  m.data = buf;
  m.data_len = (uint32_t)n;
  return m;
}

static void test_out_expand(void)
{
  uint8_t buf[2048];
  char out[4096];
  struct http_codec_out o = { .smsc = "prov", .time = 1704164645 };
  struct msg m = text_msg("Hello €", SMS_TEXT_GSM7, buf, sizeof buf);
  int n = http_codec_out_expand(out, sizeof out, "http://p/send?from=%P&to=%p&text=%b&coding=%c&id=%I&cs=%C",
                                &m, &o, HTTP_CODEC_ESC_URL);
  CU_ASSERT_TRUE(n > 0);
  CU_ASSERT_STRING_EQUAL(out, "http://p/send?from=Shop&to=%2B4917&text=Hello%20%E2%82%AC&coding=0&id=7&cs=UTF-8");
  /* an MO as Kannel's get-url has it: %p the handset (its sender), the
   * text's words, the DCS, priority, validity in minutes */
  struct http_codec_out mo = { .smsc = "smsc", .time = 1704164645, .mo = true };
  m = text_msg("weather  berlin*now tomorrow", SMS_TEXT_GSM7, buf, sizeof buf);
  m.priority = 2;
  m.validity = 1704164645 + 600;
  http_codec_out_expand(out, sizeof out, "/mo?phone=%p&to=%P&kw=%k&s=%s&S=%S&r=%r&a=%a&O=%O&y=%y&v=%v&V=%V&M=%M&t=%t",
                        &m, &mo, HTTP_CODEC_ESC_URL);
  CU_ASSERT_STRING_EQUAL(out, "/mo?phone=Shop&to=%2B4917&kw=weather&s=berlin%2Anow&S=tomorrow&r=&a=weather+berlin%2Anow+"
                              "tomorrow&O=00&y=2&v=10&V=&M=-1&t=2024-01-02+03:04:05");

  /* JSON bodies: values escaped for a JSON string; 8-bit data and UDH as hex */
  m = text_msg("say \"hi\"\n\\", SMS_TEXT_GSM7, buf, sizeof buf);
  http_codec_out_expand(out, sizeof out, "{\"to\":\"%p\",\"text\":\"%b\"}", &m, &o, HTTP_CODEC_ESC_JSON);
  CU_ASSERT_STRING_EQUAL(out, "{\"to\":\"+4917\",\"text\":\"say \\\"hi\\\"\\u000A\\\\\"}");
  json_t *j = json_loads(out, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "text")), "say \"hi\"\n\\");
  json_decref(j);
  static const uint8_t udh[] = { 0x06, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0 };
  m = text_msg("AB", SMS_TEXT_8BIT, buf, sizeof buf);
  m.udh = udh;
  m.udh_len = sizeof udh;
  http_codec_out_expand(out, sizeof out, "%b|%u|%h|%c|%C", &m, &o, HTTP_CODEC_ESC_JSON);
  CU_ASSERT_STRING_EQUAL(out, "4142|0605040B8423F0|4142|1|8-BIT");
  http_codec_out_expand(out, sizeof out, "%b|%u", &m, &o, HTTP_CODEC_ESC_URL);
  CU_ASSERT_STRING_EQUAL(out, "AB|%06%05%04%0B%84%23%F0");

  /* long texts convert piece by piece without splitting a pair: a
   * surrogate pair across the first piece's end, escape pairs throughout */
  char text[1024] = "";
  for (int i = 0; i < 149; i++)
    strcat(text, "a");
  strcat(text, "😀bbbbbbbbbb");
  m = text_msg(text, SMS_TEXT_UCS2, buf, sizeof buf);
  http_codec_out_expand(out, sizeof out, "%b", &m, &o, HTTP_CODEC_ESC_JSON);
  CU_ASSERT_STRING_EQUAL(out, text);
  text[0] = 0;
  for (int i = 0; i < 200; i++)
    strcat(text, "€");
  m = text_msg(text, SMS_TEXT_GSM7, buf, sizeof buf);
  CU_ASSERT_EQUAL(m.data_len, 400);
  http_codec_out_expand(out, sizeof out, "%b", &m, &o, HTTP_CODEC_ESC_JSON);
  CU_ASSERT_STRING_EQUAL(out, text);
  /* a lone surrogate does not convert */
  static const uint8_t lone[] = { 0xD8, 0x3D, 0x00, 0x41 };
  m.coding = SMS_TEXT_UCS2;
  m.data = lone;
  m.data_len = sizeof lone;
  CU_ASSERT_EQUAL(http_codec_out_expand(out, sizeof out, "%b", &m, &o, HTTP_CODEC_ESC_URL), HTTP_CODEC_E_INVALID);
  CU_ASSERT_EQUAL(http_codec_out_expand(out, 8, "%P%P%P", &m, &o, HTTP_CODEC_ESC_URL), HTTP_CODEC_E_SPACE);
}

static void test_out_classify(void)
{
  char id[MSG_ID_LEN];
  const char *json = "{\"messages\":[{\"id\":\"abc-1\"}],\"n\":{\"id\":12345}}";
  CU_ASSERT_EQUAL(http_codec_out_classify(200, json, strlen(json), "messages.0.id", id, sizeof id), PROTO_OK);
  CU_ASSERT_STRING_EQUAL(id, "abc-1");
  CU_ASSERT_EQUAL(http_codec_out_classify(201, json, strlen(json), "n.id", id, sizeof id), PROTO_OK);
  CU_ASSERT_STRING_EQUAL(id, "12345");
  CU_ASSERT_EQUAL(http_codec_out_classify(200, json, strlen(json), "messages.1.id", id, sizeof id), PROTO_OK);
  CU_ASSERT_STRING_EQUAL(id, "");
  CU_ASSERT_EQUAL(http_codec_out_classify(202, "  XYZ-1\r\n", 9, NULL, id, sizeof id), PROTO_OK);
  CU_ASSERT_STRING_EQUAL(id, "XYZ-1");
  CU_ASSERT_EQUAL(http_codec_out_classify(429, "", 0, NULL, id, sizeof id), PROTO_E_THROTTLED);
  CU_ASSERT_EQUAL(http_codec_out_classify(503, "", 0, NULL, id, sizeof id), PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL(http_codec_out_classify(500, "", 0, NULL, id, sizeof id), PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL(http_codec_out_classify(408, "", 0, NULL, id, sizeof id), PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL(http_codec_out_classify(0, NULL, 0, NULL, id, sizeof id), PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL(http_codec_out_classify(400, "bad", 3, NULL, id, sizeof id), PROTO_E_PERMANENT);
  CU_ASSERT_EQUAL(http_codec_out_classify(404, "", 0, NULL, id, sizeof id), PROTO_E_PERMANENT);
  CU_ASSERT_EQUAL(http_codec_out_classify(301, "", 0, NULL, id, sizeof id), PROTO_E_PERMANENT);
}

/* ---- a local HTTP listener for the callback sender and the client ---- */

struct listener {
  struct MHD_Daemon *daemon;
  int port;
  atomic_int hits;
  int fail_first;              /* /cb answers 503 to this many */
  pthread_mutex_t lock;
  char method[8];
  char path[128];
  char to[64];
  char text[256];
  char type[64];
  char body[1024];
  size_t body_len;
};

struct upload {
  char data[4096];
  size_t len;
};

static enum MHD_Result listener_request(void *cls, struct MHD_Connection *conn, const char *url,
                                        const char *method, const char *version, const char *upload_data,
                                        size_t *upload_size, void **con_cls)
{
  struct listener *l = cls;
  struct upload *u = *con_cls;
  if (!u) {
    *con_cls = calloc(1, sizeof *u);
    return *con_cls ? MHD_YES : MHD_NO;
  }
  if (*upload_size) {
    size_t n = *upload_size < sizeof u->data - u->len ? *upload_size : sizeof u->data - u->len;
    memcpy(u->data + u->len, upload_data, n);
    u->len += n;
    *upload_size = 0;
    return MHD_YES;
  }
  int hit = atomic_fetch_add(&l->hits, 1) + 1;
  const char *to = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "to");
  const char *text = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "text");
  const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
  pthread_mutex_lock(&l->lock);
  snprintf(l->method, sizeof l->method, "%s", method);
  snprintf(l->path, sizeof l->path, "%s", url);
  snprintf(l->to, sizeof l->to, "%s", to ? to : "");
  snprintf(l->text, sizeof l->text, "%s", text ? text : "");
  snprintf(l->type, sizeof l->type, "%s", type ? type : "");
  memcpy(l->body, u->data, u->len < sizeof l->body ? u->len : sizeof l->body - 1);
  l->body_len = u->len < sizeof l->body ? u->len : sizeof l->body - 1;
  l->body[l->body_len] = 0;
  pthread_mutex_unlock(&l->lock);
  unsigned status = 200;
  char answer[128] = "ok";
  if (strcmp(url, "/ok") == 0)
    snprintf(answer, sizeof answer, "{\"messages\":[{\"id\":\"p-%d\"}]}", hit);
  else if (strcmp(url, "/busy") == 0)
    status = 429;
  else if (strcmp(url, "/bad") == 0)
    status = 400, snprintf(answer, sizeof answer, "bad number");
  else if (strcmp(url, "/down") == 0)
    status = 503;
  else if (strcmp(url, "/gone") == 0)
    status = 404;
  else if (hit <= l->fail_first)
    status = 503;
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(answer), answer, MHD_RESPMEM_MUST_COPY);
  enum MHD_Result rc = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return rc;
}

static void listener_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                               enum MHD_RequestTerminationCode toe)
{
  free(*con_cls);
  *con_cls = NULL;
}

static struct listener *listener_start(int fail_first)
{
  struct listener *l = calloc(1, sizeof *l);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  l->fail_first = fail_first;
  pthread_mutex_init(&l->lock, NULL);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  l->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, listener_request, l,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_NOTIFY_COMPLETED,
                               listener_completed, l, MHD_OPTION_END);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l->daemon);
  l->port = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
  return l;
}

static void listener_stop(struct listener *l)
{
  MHD_stop_daemon(l->daemon);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

/* A loopback port nothing listens on. */
static int dead_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  CU_ASSERT_FATAL(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

/* ---- the callback sender ---- */

struct cb_outcomes {
  atomic_int sent, failed, dropped;
  void *last_cookie;
};

static void cb_done(void *arg, void *cookie, enum http_callback_outcome outcome)
{
  struct cb_outcomes *o = arg;
  o->last_cookie = cookie;
  atomic_fetch_add(outcome == HTTP_CALLBACK_SENT ? &o->sent : outcome == HTTP_CALLBACK_FAILED ? &o->failed : &o->dropped, 1);
}

/* The callback sender's loop runs in the test's thread until *v reaches
 * want, or ms pass. */
struct cb_wait {
  atomic_int *v;
  int want;
  uint64_t deadline_ms;
};

static void cb_wait_tick(struct evloop *loop, void *arg)
{
  struct cb_wait *w = arg;
  if (atomic_load(w->v) >= w->want || clock_now_ms() >= w->deadline_ms)
    evloop_stop(loop);
}

/* Runs the loop until *v reaches want or ms pass (a hang guard where the
 * event is awaited: 30 s, which no slow machine reaches). */
static void wait_for(struct evloop *loop, atomic_int *v, int want, unsigned ms)
{
  struct cb_wait w = { v, want, clock_now_ms() + ms };
  evloop_tick(loop, cb_wait_tick, &w);
  if (atomic_load(v) < want)
    evloop_run(loop);
  evloop_untick(loop, cb_wait_tick, &w);
}

static struct http_callback *cb_create(struct evloop *loop, const struct http_callback_limits *lim,
                                       struct cb_outcomes *o)
{
  char err[TLS_ERR_LEN];
  struct http_callback *cb = http_callback_create(loop, lim, cb_done, o, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL(cb);
  return cb;
}

static void test_callback_retries(void)
{
  struct listener *l = listener_start(2);
  struct cb_outcomes o = { 0 };
  struct http_callback_limits lim = { .backoff_min_ms = 20, .attempts_max = 5, .timeout_ms = 2000 };
  struct evloop *loop = evloop_create(5);
  struct http_callback *cb = cb_create(loop, &lim, &o);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cb);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cb", l->port);
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_POST, "{\"id\":\"42\"}", (void *)7), 0);
  wait_for(loop, &o.sent, 1, 30000);
  wait_for(loop, &o.sent, 2, 50); /* a spurious second delivery would show by now */
  struct http_callback_stats st;
  http_callback_stats(cb, &st);
  CU_ASSERT_EQUAL(atomic_load(&o.sent), 1);
  CU_ASSERT_EQUAL(atomic_load(&o.failed), 0);
  CU_ASSERT_PTR_EQUAL(o.last_cookie, (void *)7);
  CU_ASSERT_EQUAL(st.sent, 1);
  CU_ASSERT_EQUAL(st.retried, 2);
  CU_ASSERT_EQUAL(st.failed, 0);
  CU_ASSERT_EQUAL(st.pending, 0);
  CU_ASSERT_EQUAL(atomic_load(&l->hits), 3);
  CU_ASSERT_STRING_EQUAL(l->method, "POST");
  CU_ASSERT_STRING_EQUAL(l->body, "{\"id\":\"42\"}");
  CU_ASSERT_STRING_EQUAL(l->type, "application/json");

  /* a GET goes to the URL as it is */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/dlr?to=%%2B4917&text=type%%3D1", l->port);
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_GET, NULL, NULL), 0);
  wait_for(loop, &o.sent, 2, 30000);
  CU_ASSERT_EQUAL(atomic_load(&o.sent), 2);
  CU_ASSERT_STRING_EQUAL(l->method, "GET");
  CU_ASSERT_STRING_EQUAL(l->path, "/dlr");
  CU_ASSERT_STRING_EQUAL(l->to, "+4917");
  CU_ASSERT_STRING_EQUAL(l->text, "type=1");

  /* another 4xx is final: no retry */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/gone", l->port);
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_GET, NULL, NULL), 0);
  wait_for(loop, &o.failed, 1, 30000);
  http_callback_stats(cb, &st);
  CU_ASSERT_EQUAL(st.failed, 1);
  CU_ASSERT_EQUAL(st.retried, 2);
  CU_ASSERT_EQUAL(http_callback_destroy(cb), 0);
  evloop_destroy(loop);
  listener_stop(l);
}

static void test_callback_dead_url(void)
{
  struct cb_outcomes o = { 0 };
  struct http_callback_limits lim = { .backoff_min_ms = 10, .attempts_max = 3, .connect_timeout_ms = 1000 };
  struct evloop *loop = evloop_create(5);
  struct http_callback *cb = cb_create(loop, &lim, &o);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cb);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/dlr", dead_port());
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_GET, NULL, NULL), 0);
  wait_for(loop, &o.failed, 1, 30000);
  struct http_callback_stats st;
  http_callback_stats(cb, &st);
  CU_ASSERT_EQUAL(atomic_load(&o.failed), 1);
  CU_ASSERT_EQUAL(atomic_load(&o.sent), 0);
  CU_ASSERT_EQUAL(st.retried, 2); /* three attempts in all */
  CU_ASSERT_EQUAL(st.failed, 1);
  CU_ASSERT_EQUAL(st.pending, 0);
  CU_ASSERT_EQUAL(http_callback_send(cb, "", HTTP_CALLBACK_GET, NULL, NULL), HTTP_CALLBACK_E_INVALID);
  CU_ASSERT_EQUAL(http_callback_destroy(cb), 0);

  /* the time bound ends retries before the attempts do */
  memset(&o, 0, sizeof o);
  lim = (struct http_callback_limits){ .backoff_min_ms = 200, .attempts_max = 50, .give_up_ms = 100 };
  cb = cb_create(loop, &lim, &o);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cb);
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_GET, NULL, NULL), 0);
  wait_for(loop, &o.failed, 1, 30000);
  http_callback_stats(cb, &st);
  CU_ASSERT_EQUAL(st.failed, 1);
  CU_ASSERT_EQUAL(st.retried, 0);
  http_callback_destroy(cb);
  evloop_destroy(loop);
}

static void test_callback_full_and_stop(void)
{
  struct cb_outcomes o = { 0 };
  struct http_callback_limits lim = { .queue_max = 2, .backoff_min_ms = 10000 };
  struct evloop *loop = evloop_create(5);
  struct http_callback *cb = cb_create(loop, &lim, &o);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cb);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/dlr", dead_port());
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_GET, NULL, NULL), 0);
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_POST, "{}", NULL), 0);
  CU_ASSERT_EQUAL(http_callback_send(cb, url, HTTP_CALLBACK_GET, NULL, NULL), HTTP_CALLBACK_E_FULL);
  struct http_callback_stats st;
  http_callback_stats(cb, &st);
  CU_ASSERT_EQUAL(st.refused, 1);
  CU_ASSERT_EQUAL(st.pending, 2);
  /* both fail their first try and wait 10 s for the next: destroying drops them */
  atomic_int tries = 0;
  for (int i = 0; i < 100 && (http_callback_stats(cb, &st), st.tries_failed < 2); i++)
    wait_for(loop, &tries, 1, 50);   /* a busy machine may take a while to try */
  http_callback_stats(cb, &st);
  CU_ASSERT_EQUAL(st.tries_failed, 2);
  CU_ASSERT_EQUAL(http_callback_destroy(cb), 2);
  CU_ASSERT_EQUAL(atomic_load(&o.dropped), 2);
  CU_ASSERT_EQUAL(atomic_load(&o.sent), 0);
  evloop_destroy(loop);
}

/* ---- the outgoing client ---- */

struct client_run {
  struct evloop *loop;
  int done, want;
  struct http_client_result results[8];
  void *cookies[8];
  uint64_t deadline_ms;
};

static void client_done(void *arg, void *cookie, const struct http_client_result *r)
{
  struct client_run *run = arg;
  if (run->done < 8) {
    run->results[run->done] = *r;
    run->results[run->done].detail = NULL;
    run->cookies[run->done] = cookie;
  }
  if (++run->done >= run->want)
    evloop_stop(run->loop);
}

static void client_deadline(struct evloop *loop, void *arg)
{
  struct client_run *run = arg;
  if (clock_now_ms() > run->deadline_ms)
    evloop_stop(loop);
}

static void client_run(struct client_run *run, int want)
{
  run->want = want;
  run->deadline_ms = clock_now_ms() + 30000;   /* a hang guard: answers take milliseconds */
  if (run->done < want)
    evloop_run(run->loop);
  CU_ASSERT_EQUAL(run->done, want);
}

static void test_client_ok_and_window(void)
{
  char err[TLS_ERR_LEN];
  struct listener *l = listener_start(0);
  struct client_run run = { .loop = evloop_create(5) };
  CU_ASSERT_PTR_NOT_NULL_FATAL(run.loop);
  evloop_tick(run.loop, client_deadline, &run);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/ok?to=%%p&text=%%b", l->port);
  struct http_client_config cfg = { .url = url, .id_field = "messages.0.id", .connections = 1, .window = 2 };
  struct http_client *c = http_client_create(run.loop, &cfg, client_done, &run, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  uint8_t buf[64];
  struct msg m = text_msg("Hello world", SMS_TEXT_GSM7, buf, sizeof buf);
  CU_ASSERT_EQUAL(http_client_room(c), 2);
  CU_ASSERT_EQUAL(http_client_submit(c, &m, NULL, (void *)1), 0);
  CU_ASSERT_EQUAL(http_client_submit(c, &m, NULL, (void *)2), 0);
  CU_ASSERT_EQUAL(http_client_room(c), 0);
  CU_ASSERT_EQUAL(http_client_submit(c, &m, NULL, (void *)3), HTTP_CLIENT_E_FULL);
  client_run(&run, 2);
  CU_ASSERT_EQUAL(http_client_room(c), 2);
  CU_ASSERT_EQUAL(run.results[0].status, PROTO_OK);
  CU_ASSERT_EQUAL(run.results[0].http_status, 200);
  CU_ASSERT_STRING_EQUAL(run.results[0].msgid, "p-1");
  CU_ASSERT_STRING_EQUAL(run.results[1].msgid, "p-2");
  CU_ASSERT_PTR_EQUAL(run.cookies[0], (void *)1);
  CU_ASSERT_STRING_EQUAL(l->to, "+4917");
  CU_ASSERT_STRING_EQUAL(l->text, "Hello world");
  CU_ASSERT_STRING_EQUAL(l->method, "GET");

  /* destroying with a request out tells its owner, to requeue it */
  CU_ASSERT_EQUAL(http_client_submit(c, &m, NULL, (void *)9), 0);
  http_client_destroy(c);
  CU_ASSERT_EQUAL(run.done, 3);
  CU_ASSERT_EQUAL(run.results[2].status, PROTO_E_TEMPORARY);
  CU_ASSERT_PTR_EQUAL(run.cookies[2], (void *)9);
  evloop_destroy(run.loop);
  listener_stop(l);
}

static void test_client_classes_and_post(void)
{
  char err[TLS_ERR_LEN];
  struct listener *l = listener_start(0);
  struct client_run run = { .loop = evloop_create(5) };
  CU_ASSERT_PTR_NOT_NULL_FATAL(run.loop);
  evloop_tick(run.loop, client_deadline, &run);
  uint8_t buf[64];
  struct msg m = text_msg("say \"hi\"", SMS_TEXT_GSM7, buf, sizeof buf);
  static const struct {
    const char *path;
    enum proto_status status;
    long http_status;
  } cases[] = { { "/busy", PROTO_E_THROTTLED, 429 }, { "/bad", PROTO_E_PERMANENT, 400 },
                { "/down", PROTO_E_TEMPORARY, 503 }, { NULL, PROTO_E_TEMPORARY, 0 } };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char url[128];
    if (cases[i].path)
      snprintf(url, sizeof url, "http://127.0.0.1:%d%s", l->port, cases[i].path);
    else
      snprintf(url, sizeof url, "http://127.0.0.1:%d/x", dead_port());
    struct http_client_config cfg = { .url = url };
    struct http_client *c = http_client_create(run.loop, &cfg, client_done, &run, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    run.done = 0;
    CU_ASSERT_EQUAL(http_client_submit(c, &m, NULL, NULL), 0);
    client_run(&run, 1);
    CU_ASSERT_EQUAL(run.results[0].status, cases[i].status);
    CU_ASSERT_EQUAL(run.results[0].http_status, cases[i].http_status);
    http_client_destroy(c);
  }

  /* a JSON POST with the values escaped for JSON */
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/ok", l->port);
  struct http_client_config cfg = { .url = url, .method = HTTP_CLIENT_POST_JSON,
                                    .body = "{\"to\":\"%p\",\"text\":\"%b\",\"ref\":\"%I\"}",
                                    .id_field = "messages.0.id" };
  struct http_client *c = http_client_create(run.loop, &cfg, client_done, &run, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  run.done = 0;
  CU_ASSERT_EQUAL(http_client_submit(c, &m, NULL, NULL), 0);
  client_run(&run, 1);
  CU_ASSERT_EQUAL(run.results[0].status, PROTO_OK);
  CU_ASSERT_STRING_EQUAL(l->method, "POST");
  CU_ASSERT_STRING_EQUAL(l->type, "application/json");
  CU_ASSERT_STRING_EQUAL(l->body, "{\"to\":\"+4917\",\"text\":\"say \\\"hi\\\"\",\"ref\":\"7\"}");
  http_client_destroy(c);
  evloop_destroy(run.loop);
  listener_stop(l);
}

/* ---- the server, with a fake gateway ---- */

#define FAKE_MAX 64

struct fake_gw {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  bool quit;
  /* completions to make, in order */
  struct http_server_completion todo[FAKE_MAX];
  enum http_codec_outcome outcome[FAKE_MAX];
  size_t todo_len;
  /* what was submitted */
  struct msg *msgs[FAKE_MAX];
  char dlr_url[FAKE_MAX][256];
  enum http_codec_dlr_method dlr_method[FAKE_MAX];
  size_t count;
  uint64_t next_id;
  int flushes;
  struct http_server_completion held; /* to 4900000009: completed by the test */
  bool holding;
};

static int fake_check_user(void *ctx, const char *peer, const char *user, const char *password)
{
  CU_ASSERT(strncmp(peer, "127.0.0.1:", 10) == 0);   /* the client's address, for the guard */
  return strcmp(user, "load") == 0 && strcmp(password, "secret") == 0 ? 0 : -1;
}

/* The outcome a recipient asks for. */
static enum http_codec_outcome fake_outcome(const char *to)
{
  if (strcmp(to, "4900000001") == 0)
    return HTTP_CODEC_TEMPORARY;
  if (strcmp(to, "4900000002") == 0)
    return HTTP_CODEC_NO_ROUTE;
  if (strcmp(to, "4900000003") == 0)
    return HTTP_CODEC_THROTTLED;
  return HTTP_CODEC_ACCEPTED;
}

static void fake_submit(void *ctx, const struct http_server_message *m, struct http_server_completion c)
{
  struct fake_gw *g = ctx;
  pthread_mutex_lock(&g->lock);
  if (g->count < FAKE_MAX) {
    g->msgs[g->count] = msg_clone(m->msg);
    snprintf(g->dlr_url[g->count], sizeof g->dlr_url[0], "%s", m->dlr_url ? m->dlr_url : "");
    g->dlr_method[g->count] = m->dlr_method;
    g->count++;
  }
  if (strcmp(m->msg->dst.addr, "4900000009") == 0) {
    g->held = c;
    g->holding = true;
  } else if (g->todo_len < FAKE_MAX) {
    g->todo[g->todo_len] = c;
    g->outcome[g->todo_len++] = fake_outcome(m->msg->dst.addr);
    pthread_cond_signal(&g->cond);
  }
  pthread_mutex_unlock(&g->lock);
}

static void fake_flush(void *ctx)
{
  struct fake_gw *g = ctx;
  pthread_mutex_lock(&g->lock);
  g->flushes++;
  pthread_mutex_unlock(&g->lock);
}

/* Completes on the server's loop, a tick later, as the gateway would. */
static void fake_complete_tick(struct evloop *loop, void *arg)
{
  struct fake_gw *g = arg;
  pthread_mutex_lock(&g->lock);
  if (g->quit)
    evloop_stop(loop);
  while (g->todo_len) {
    struct http_server_completion c = g->todo[0];
    enum http_codec_outcome o = g->outcome[0];
    memmove(g->todo, g->todo + 1, --g->todo_len * sizeof g->todo[0]);
    memmove(g->outcome, g->outcome + 1, g->todo_len * sizeof g->outcome[0]);
    uint64_t id = ++g->next_id;
    pthread_mutex_unlock(&g->lock);
    http_server_complete(c, o, 1000 + id);
    pthread_mutex_lock(&g->lock);
  }
  pthread_mutex_unlock(&g->lock);
}

static void fake_reset(struct fake_gw *g)
{
  pthread_mutex_lock(&g->lock);
  for (size_t i = 0; i < g->count; i++)
    msg_free(g->msgs[i]);
  g->count = 0;
  g->flushes = 0;
  pthread_mutex_unlock(&g->lock);
}

struct server_env {
  struct fake_gw gw;
  struct http_server *srv;
  struct evloop *loop;
  CURL *curl;
  char base[64];
};

static struct server_env env;

/* The server's thread: its loop attached, run until the fake gateway quits. */
static void *server_thread(void *arg)
{
  struct http_server_loop *sl = http_server_attach(env.srv, env.loop, &env.gw);
  CU_ASSERT_PTR_NOT_NULL(sl);
  evloop_tick(env.loop, fake_complete_tick, &env.gw);
  evloop_run(env.loop);
  http_server_detach(sl);
  return NULL;
}

static void server_up(size_t max_body)
{
  char err[NETUTIL_ERR_LEN];
  memset(&env, 0, sizeof env);
  pthread_mutex_init(&env.gw.lock, NULL);
  pthread_cond_init(&env.gw.cond, NULL);
  struct http_server_config cfg = { .listen = "127.0.0.1:0", .limits = { .max_body = max_body } };
  struct http_server_handler h = { fake_check_user, fake_submit, fake_flush };
  env.srv = http_server_start(&cfg, &h, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(env.srv);
  env.loop = evloop_create(2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(env.loop);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&env.gw.thread, NULL, server_thread, NULL), 0);
  snprintf(env.base, sizeof env.base, "http://127.0.0.1:%d", http_server_port(env.srv));
  env.curl = curl_easy_init();
  CU_ASSERT_PTR_NOT_NULL_FATAL(env.curl);
}

/* Ends the server's loop (it detaches) and frees what the fake recorded. */
static void fake_stop(void)
{
  pthread_mutex_lock(&env.gw.lock);
  env.gw.quit = true;
  pthread_mutex_unlock(&env.gw.lock);
  pthread_join(env.gw.thread, NULL);
  fake_reset(&env.gw);
  pthread_cond_destroy(&env.gw.cond);
  pthread_mutex_destroy(&env.gw.lock);
}

static void server_down(void)
{
  curl_easy_cleanup(env.curl);
  http_server_drain(env.srv, 1000);
  fake_stop();
  http_server_free(env.srv);
  evloop_destroy(env.loop);
}

struct http_answer {
  long status;
  char body[4096];
  size_t len;
  char www_auth[128];
  long new_connections;
};

static size_t answer_write(char *data, size_t size, size_t n, void *arg)
{
  struct http_answer *a = arg;
  size_t len = size * n;
  size_t room = sizeof a->body - 1 - a->len;
  memcpy(a->body + a->len, data, len < room ? len : room);
  a->len += len < room ? len : room;
  a->body[a->len] = 0;
  return len;
}

static size_t answer_header(char *data, size_t size, size_t n, void *arg)
{
  struct http_answer *a = arg;
  size_t len = size * n;
  if (len > 18 && strncasecmp(data, "WWW-Authenticate: ", 18) == 0)
    snprintf(a->www_auth, sizeof a->www_auth, "%.*s", (int)(len - 20), data + 18);
  return len;
}

/* One request on the shared handle (so that keep-alive shows). */
static struct http_answer request(const char *method, const char *path, const char *auth,
                                  const char *type, const char *body, size_t body_len,
                                  const char *const *headers)
{
  struct http_answer a;
  struct curl_slist *list = NULL;
  char url[2048], line[256];
  memset(&a, 0, sizeof a);
  snprintf(url, sizeof url, "%s%s", env.base, path);
  curl_easy_reset(env.curl);
  curl_easy_setopt(env.curl, CURLOPT_URL, url);
  curl_easy_setopt(env.curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(env.curl, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(env.curl, CURLOPT_WRITEFUNCTION, answer_write);
  curl_easy_setopt(env.curl, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(env.curl, CURLOPT_HEADERFUNCTION, answer_header);
  curl_easy_setopt(env.curl, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(env.curl, CURLOPT_CUSTOMREQUEST, method);
  if (auth && strncmp(auth, "Bearer ", 7) == 0) {
    snprintf(line, sizeof line, "Authorization: %s", auth);
    list = curl_slist_append(list, line);
  } else if (auth) {
    curl_easy_setopt(env.curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(env.curl, CURLOPT_USERPWD, auth);
  }
  if (type) {
    snprintf(line, sizeof line, "Content-Type: %s", type);
    list = curl_slist_append(list, line);
  }
  for (size_t i = 0; headers && headers[i]; i++)
    list = curl_slist_append(list, headers[i]);
  curl_easy_setopt(env.curl, CURLOPT_HTTPHEADER, list);
  if (body) {
    curl_easy_setopt(env.curl, CURLOPT_POSTFIELDSIZE, (long)body_len);
    curl_easy_setopt(env.curl, CURLOPT_POSTFIELDS, body);
  }
  if (curl_easy_perform(env.curl) == CURLE_OK) {
    curl_easy_getinfo(env.curl, CURLINFO_RESPONSE_CODE, &a.status);
    curl_easy_getinfo(env.curl, CURLINFO_NUM_CONNECTS, &a.new_connections);
  }
  curl_slist_free_all(list);
  return a;
}

static struct http_answer post_json(const char *body, const char *auth)
{
  return request("POST", "/api/v1/messages", auth, "application/json", body, strlen(body), NULL);
}

static json_t *answer_json(const struct http_answer *a)
{
  json_t *j = json_loads(a->body, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  return j;
}

static void test_server_json(void)
{
  server_up(0);
  struct http_answer a = post_json("{\"from\":\"Shop\",\"to\":\"+491701234567\",\"text\":\"Hi\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 202);
  json_t *j = answer_json(&a);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "accepted")), 1);
  const char *id = json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 0), "id"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(id);
  CU_ASSERT_TRUE(strtoull(id, NULL, 10) > 1000);
  json_decref(j);
  CU_ASSERT_EQUAL_FATAL(env.gw.count, 1);
  CU_ASSERT_STRING_EQUAL(env.gw.msgs[0]->origin.user, "load");
  CU_ASSERT_STRING_EQUAL(env.gw.msgs[0]->dst.addr, "491701234567");
  CU_ASSERT_EQUAL(env.gw.msgs[0]->data_len, 2);
  CU_ASSERT_EQUAL(memcmp(env.gw.msgs[0]->data, "Hi", 2), 0);
  CU_ASSERT_EQUAL(env.gw.flushes, 1);
  fake_reset(&env.gw);

  /* a batch over the same connection, with a Bearer token */
  a = post_json("[{\"from\":\"Shop\",\"to\":[\"4917\",\"4918\"],\"text\":\"a\"},"
                "{\"from\":\"Shop\",\"to\":\"4919\",\"text\":\"b\",\"callback\":\"http://app/cb\"}]",
                "Bearer load:secret");
  CU_ASSERT_EQUAL(a.status, 202);
  CU_ASSERT_EQUAL(a.new_connections, 0); /* kept alive */
  j = answer_json(&a);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "accepted")), 3);
  CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "messages")), 3);
  json_decref(j);
  CU_ASSERT_EQUAL_FATAL(env.gw.count, 3);
  CU_ASSERT_EQUAL(env.gw.dlr_method[2], HTTP_CODEC_DLR_POST);
  CU_ASSERT_STRING_EQUAL(env.gw.dlr_url[2], "http://app/cb");
  fake_reset(&env.gw);

  /* completion errors: the gateway's verdict decides the status */
  a = post_json("{\"from\":\"Shop\",\"to\":\"4900000001\",\"text\":\"a\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 503);
  j = answer_json(&a);
  CU_ASSERT_TRUE(json_is_true(json_object_get(json_array_get(json_object_get(j, "messages"), 0), "retry")));
  json_decref(j);
  a = post_json("{\"from\":\"Shop\",\"to\":\"4900000003\",\"text\":\"a\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 429);
  a = post_json("{\"from\":\"Shop\",\"to\":[\"4917\",\"4900000002\"],\"text\":\"a\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 207);
  j = answer_json(&a);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "refused")), 1);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 1), "error")),
                         "no route");
  json_decref(j);
  a = post_json("{\"from\":\"Shop\",\"to\":\"4900000002\",\"text\":\"a\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 400);
  fake_reset(&env.gw);

  /* authentication */
  a = post_json("{\"from\":\"Shop\",\"to\":\"4917\",\"text\":\"a\"}", "load:wrong");
  CU_ASSERT_EQUAL(a.status, 401);
  CU_ASSERT_PTR_NOT_NULL(strstr(a.www_auth, "Basic"));
  a = post_json("{\"from\":\"Shop\",\"to\":\"4917\",\"text\":\"a\"}", NULL);
  CU_ASSERT_EQUAL(a.status, 401);
  a = post_json("{\"from\":\"Shop\",\"to\":\"4917\",\"text\":\"a\"}", "Bearer load");
  CU_ASSERT_EQUAL(a.status, 401);
  CU_ASSERT_EQUAL(env.gw.count, 0);

  /* bad bodies name the field */
  a = post_json("{\"from\":\"Shop\",\"text\":\"a\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 400);
  j = answer_json(&a);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(json_object_get(j, "faults"), 0), "field")), "to");
  json_decref(j);
  a = post_json("{\"from\":", "load:secret");
  CU_ASSERT_EQUAL(a.status, 400);
  CU_ASSERT_PTR_NOT_NULL(strstr(a.body, "not JSON"));
  CU_ASSERT_EQUAL(env.gw.count, 0);

  /* routes and methods */
  a = request("GET", "/api/v1/messages", "load:secret", NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 405);
  a = request("GET", "/nothing", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 404);
  a = request("DELETE", "/cgi-bin/sendsms", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 405);

  struct http_server_stats st;
  http_server_stats(env.srv, &st);
  CU_ASSERT_EQUAL(st.auth_failures, 3);
  CU_ASSERT_EQUAL(st.bad_requests, 2);
  CU_ASSERT_EQUAL(st.accepted, 5);
  CU_ASSERT_EQUAL(st.refused, 4);
  server_down();
}

static void test_server_kannel(void)
{
  server_up(0);
  struct http_answer a = request(
    "GET", "/cgi-bin/sendsms?username=load&password=secret&from=123&to=4917+4918&text=Hello%20world"
           "&dlr-mask=3&dlr-url=http%3A%2F%2Fapp%2Fdlr%3Ftype%3D%25d",
    NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 202);
  CU_ASSERT_STRING_EQUAL(a.body, "0: Accepted for delivery");
  CU_ASSERT_EQUAL_FATAL(env.gw.count, 2);
  CU_ASSERT_STRING_EQUAL(env.gw.msgs[1]->dst.addr, "4918");
  CU_ASSERT_EQUAL(env.gw.msgs[0]->dlr_mask, 3);
  CU_ASSERT_EQUAL(env.gw.dlr_method[0], HTTP_CODEC_DLR_GET);
  CU_ASSERT_STRING_EQUAL(env.gw.dlr_url[0], "http://app/dlr?type=%d");
  CU_ASSERT_EQUAL(env.gw.msgs[0]->data_len, 11);
  fake_reset(&env.gw);

  /* binary text through the query string: octets, NUL included */
  a = request("GET", "/cgi-bin/sendsms?user=load&pass=secret&from=1&to=2&coding=1&text=%00%01%02", NULL, NULL,
              NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 202);
  CU_ASSERT_EQUAL_FATAL(env.gw.count, 1);
  CU_ASSERT_EQUAL(env.gw.msgs[0]->coding, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL_FATAL(env.gw.msgs[0]->data_len, 3);
  CU_ASSERT_EQUAL(env.gw.msgs[0]->data[0], 0);
  CU_ASSERT_EQUAL(env.gw.msgs[0]->data[2], 2);
  fake_reset(&env.gw);

  /* POST as a form */
  const char *form_body = "username=load&password=secret&from=Shop&to=4917&text=Hi+there";
  a = request("POST", "/cgi-bin/sendsms", NULL, "application/x-www-form-urlencoded", form_body,
              strlen(form_body), NULL);
  CU_ASSERT_EQUAL(a.status, 202);
  CU_ASSERT_EQUAL_FATAL(env.gw.count, 1);
  CU_ASSERT_EQUAL(env.gw.msgs[0]->data_len, 8);
  CU_ASSERT_STRING_EQUAL(env.gw.msgs[0]->src.addr, "Shop");
  fake_reset(&env.gw);

  /* POST as Kannel's own: text/plain body, X-Kannel headers, charset */
  static const char *const headers[] = { "X-Kannel-Username: load", "X-Kannel-Password: secret",
                                         "X-Kannel-From: 123", "X-Kannel-To: 4917",
                                         "X-Kannel-DLR-Mask: 1", NULL };
  a = request("POST", "/cgi-bin/sendsms", NULL, "text/plain; charset=ISO-8859-1", "Gr\xfc\xdf" "e", 5, headers);
  CU_ASSERT_EQUAL(a.status, 202);
  CU_ASSERT_EQUAL_FATAL(env.gw.count, 1);
  uint8_t gsm[16];
  int n = charset_utf8_to_gsm(gsm, sizeof gsm, "Grüße", strlen("Grüße"), 0);
  CU_ASSERT_EQUAL_FATAL((int)env.gw.msgs[0]->data_len, n);
  CU_ASSERT_EQUAL(memcmp(env.gw.msgs[0]->data, gsm, (size_t)n), 0);
  CU_ASSERT_EQUAL(env.gw.msgs[0]->dlr_mask, 1);
  fake_reset(&env.gw);

  /* Kannel's refusals */
  a = request("GET", "/cgi-bin/sendsms?username=load&password=wrong&from=1&to=2&text=a", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 403);
  CU_ASSERT_STRING_EQUAL(a.body, "Authorization failed for sendsms");
  a = request("GET", "/cgi-bin/sendsms?from=1&to=2&text=a", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 403);
  a = request("GET", "/cgi-bin/sendsms?username=load&password=secret&from=1&text=a", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 400);
  CU_ASSERT_STRING_EQUAL(a.body, "Missing receiver number, rejected");
  a = request("POST", "/cgi-bin/sendsms", NULL, "application/xml", "<x/>", 4, NULL);
  CU_ASSERT_EQUAL(a.status, 400);
  CU_ASSERT_STRING_EQUAL(a.body, "Invalid content-type");
  CU_ASSERT_EQUAL(env.gw.count, 0);

  /* completion errors in Kannel's words */
  a = request("GET", "/cgi-bin/sendsms?username=load&password=secret&from=1&to=4900000001&text=a", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 503);
  CU_ASSERT_STRING_EQUAL(a.body, "Temporal failure, try again later.");
  a = request("GET", "/cgi-bin/sendsms?username=load&password=secret&from=1&to=4900000002&text=a", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 403);
  CU_ASSERT_STRING_EQUAL(a.body, "Not routable. Do not try again.");
  a = request("GET", "/cgi-bin/sendsms?username=load&password=secret&from=1&to=4917+4900000001&text=a", NULL, NULL, NULL, 0, NULL);
  CU_ASSERT_EQUAL(a.status, 500);
  CU_ASSERT_STRING_EQUAL(a.body, "Sending failed. Failed receivers are: 4900000001");
  server_down();
}

static void test_server_limits(void)
{
  server_up(256);
  char body[1024];
  memset(body, ' ', sizeof body);
  memcpy(body, "{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"}", 31);
  struct http_answer a = request("POST", "/api/v1/messages", "load:secret", "application/json", body, sizeof body, NULL);
  CU_ASSERT_EQUAL(a.status, 413);
  CU_ASSERT_EQUAL(env.gw.count, 0);
  /* the same connection (or a new one) still serves what fits */
  a = post_json("{\"from\":\"1\",\"to\":\"2\",\"text\":\"a\"}", "load:secret");
  CU_ASSERT_EQUAL(a.status, 202);
  server_down();
}

struct held_request {
  pthread_t thread;
  struct http_answer a;
};

static void *held_request_run(void *arg)
{
  struct held_request *h = arg;
  CURL *saved = env.curl;
  env.curl = curl_easy_init();
  h->a = post_json("{\"from\":\"1\",\"to\":\"4900000009\",\"text\":\"a\"}", "load:secret");
  curl_easy_cleanup(env.curl);
  env.curl = saved;
  return NULL;
}

/* Stopping with a request waiting: it is answered 503 (or closed), and its
 * completion coming after the server is gone is harmless. */
static void test_server_stop_waiting(void)
{
  server_up(0);
  CURL *own = env.curl;
  struct held_request h;
  memset(&h, 0, sizeof h);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&h.thread, NULL, held_request_run, &h), 0);
  for (int i = 0; i < 2000 && !env.gw.holding; i++)   /* 10 s: a hang guard */
    sleep_ms(5);
  CU_ASSERT_TRUE_FATAL(env.gw.holding);
  struct http_server_completion held = env.gw.held;
  http_server_drain(env.srv, 50);
  fake_stop();   /* the loop detaches: the waiting request gets its 503 */
  pthread_join(h.thread, NULL);
  CU_ASSERT_EQUAL(h.a.status, 503);
  http_server_complete(held, HTTP_CODEC_ACCEPTED, 1);   /* after the loop is gone: harmless */
  http_server_free(env.srv);
  evloop_destroy(env.loop);
  curl_easy_cleanup(own);
}

void suite_http(void);
void suite_http(void)
{
  static const struct test_case cases[] = {
    { "json single, GSM with an escape", test_json_single_gsm },
    { "json UCS2 and options", test_json_ucs2_and_options },
    { "json batch, binary, callbacks", test_json_batch_and_binary },
    { "json faults name the field", test_json_errors },
    { "json: a lone surrogate is refused as invalid UTF-8 is", test_json_lone_surrogates },
    { "json answers and statuses", test_json_answer },
    { "json read as a stream: shapes, kinds, limits, syntax", test_json_stream_shapes },
    { "form decoding", test_form_parse },
    { "kannel parameters", test_kannel_params },
    { "kannel refusals and credentials", test_kannel_errors },
    { "kannel answers", test_kannel_answer },
    { "dlr-url escapes", test_dlr_url },
    { "dlr-url: what the request knows", test_dlr_url_prepare },
    { "receipt JSON body", test_dlr_json },
    { "outgoing templates", test_out_expand },
    { "provider answers", test_out_classify },
    { "callback retried until delivered", test_callback_retries },
    { "callback to a dead URL fails after the bound", test_callback_dead_url },
    { "callback queue bound and stop", test_callback_full_and_stop },
    { "client: ids and window", test_client_ok_and_window },
    { "client: classes and JSON POST", test_client_classes_and_post },
    { "server: JSON API", test_server_json },
    { "server: Kannel sendsms", test_server_kannel },
    { "server: body limit", test_server_limits },
    { "server: stop with a request waiting", test_server_stop_waiting },
    { NULL, NULL },
  };
  test_add_suite("http", cases);
}
