/* http_codec.h - the HTTP connector's codec: JSON and Kannel sendsms submits
 * into struct msg and the answers to them, Kannel dlr-url templates and JSON
 * receipt bodies, the outgoing connector's URL and body templates, and the
 * classification of an HTTP provider's answer.
 *
 * Pure: no I/O, no threads, no clock, no logging. A parser allocates one
 * batch per request (jansson allocates while it parses anyway), which holds
 * every message of the request and their payloads; everything else writes
 * into the caller's storage.
 *
 * Template escapes (dlr-url, outgoing URL and body) are Kannel's, with
 * Kannel's meaning of p and P: %p is the message's recipient and %P its
 * sender (a receipt keeps the addresses of the message it reports on).
 *   %p %P  recipient, sender       %q %Q  the same, a leading "00" as "+"
 *   %b     text (UTF-8; 8-bit data as octets, hex in JSON bodies); a
 *          receipt's: its answer, as %A
 *   %e     %b's octets as hex      %u %U  UDH: octets (hex in JSON bodies); hex
 *   %k     the text's first word   %s %S  the next word from the second on
 *          (%S with '*' as '~')    %r  the words %s has not taken, %a  all
 *          of them, joined by '+'
 *   %c     coding: 0 GSM, 1 8-bit, 2 UCS2      %C  charset of %b ("UTF-8", "8-BIT")
 *   %m     message class, %M  message waiting indication (-1 for none)
 *   %O     the DCS, two digits     %y  priority
 *   %v %V  validity, deferred: minutes from now (empty for none)
 *   %d     DLR type of a receipt (1, 2, 4, 8, 16); dlr-mask of a message
 *   %A     receipt answer text     %F  the SMSC's message id (receipts)
 *   %I     gateway message id      %i  SMSC: the connector name
 *   %n     account (user) name     %t  time "YYYY-MM-DD+HH:MM:SS" (UTC; with
 *          a space in JSON bodies) %T  Unix time
 *   %o %B %D %R %#group#key#  sendsms' account, binfo, meta-data, the
 *          dlr-url itself and one meta-data value: filled in when the request
 *          is taken (http_codec_dlr_url_prepare), empty elsewhere
 *   %f %x  the SMSC's number, the smsbox: always empty here
 *   %%     a '%'
 * and, beyond Kannel, %h: the payload as hex. An unknown escape is text, as
 * Kannel has it; in a URL its '%' is written %25 unless it starts a %XX
 * encoding the template wrote, so that no broken encoding goes out.
 * Substituted values are URL-encoded in URL templates and JSON-string-
 * escaped in JSON body templates; the template's own text is copied
 * unchanged.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_CODEC_H
#define EMG_HTTP_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "msg.h"
#include "proto.h"

#define HTTP_CODEC_NAME_LEN 64     /* Kannel's smsc, account and binfo hints, NUL included */
#define HTTP_CODEC_FAULTS_MAX 16   /* faults kept per request (more are counted) */
#define HTTP_CODEC_FIELD_LEN 24
#define HTTP_CODEC_REASON_LEN 112

enum http_codec_error {
  HTTP_CODEC_E_SPACE = -1,     /* the caller's storage is too small */
  HTTP_CODEC_E_INVALID = -2,   /* a bad request: the batch's faults say where */
  HTTP_CODEC_E_TOO_LARGE = -3, /* more messages or recipients than the limits allow */
  HTTP_CODEC_E_NOMEM = -4
};

/* Bounds on one request; zero means the default. */
struct http_codec_limits {
  size_t max_body;             /* octets of a body; default 1 MiB (enforced by the server) */
  unsigned max_messages;       /* messages in one JSON request; default 1000 */
  unsigned max_recipients;     /* submits (messages x recipients) in one request; default 1000 */
  unsigned max_parts;          /* SMS one message may need once split; default 255 */
};

/* Kannel's DLR types: the dlr-mask bits and the %d of a dlr-url. msg.dlr_mask
 * carries the whole mask; its low three bits are the MSG_DLR_* receipts. */
enum http_codec_dlr_type {
  HTTP_CODEC_DLR_DELIVERED = 1,
  HTTP_CODEC_DLR_FAILED = 2,
  HTTP_CODEC_DLR_BUFFERED = 4,
  HTTP_CODEC_DLR_SMSC_ACK = 8,   /* the SMSC took the submit */
  HTTP_CODEC_DLR_SMSC_NACK = 16  /* the SMSC refused it */
};

/* How a receipt goes back to an HTTP client. */
enum http_codec_dlr_method {
  HTTP_CODEC_DLR_NONE = 0,
  HTTP_CODEC_DLR_GET,          /* GET of the dlr-url template, escapes expanded (Kannel, "dlr_url") */
  HTTP_CODEC_DLR_POST          /* POST of http_codec_dlr_json to the URL as it is ("callback") */
};

/* One message to one recipient. */
struct http_codec_submit {
  struct msg msg;              /* udh and data view the batch's storage */
  unsigned message;            /* which message of the request (0-based) */
  enum http_codec_dlr_method dlr_method;
  const char *dlr_url;         /* NULL when none; lives in the batch */
};

/* What was wrong with a request: message -1 is the request as a whole. */
struct http_codec_fault {
  int message;
  char field[HTTP_CODEC_FIELD_LEN];
  char reason[HTTP_CODEC_REASON_LEN];
};

/* The messages of one request, or why it was refused. Free with
 * http_codec_batch_free. */
struct http_codec_batch {
  size_t count;                /* submits in items */
  struct http_codec_submit *items;
  size_t fault_count;          /* faults found; the first HTTP_CODEC_FAULTS_MAX are in faults */
  struct http_codec_fault faults[HTTP_CODEC_FAULTS_MAX];
  /* Kannel: the routing and billing hints, "" when not given. */
  char smsc[HTTP_CODEC_NAME_LEN];
  char account[HTTP_CODEC_NAME_LEN];
  char binfo[HTTP_CODEC_NAME_LEN];
  /* Kannel: a refused request's HTTP status and answer text. */
  unsigned kannel_status;
  const char *kannel_answer;
  /* The storage the items and their payloads live in. */
  size_t items_cap;
  uint8_t *arena;
  size_t arena_len, arena_cap;
};

void http_codec_batch_free(struct http_codec_batch *b);

/* ---- JSON API: POST /api/v1/messages ----
 *
 * The body is one message object, an array of them, or {"messages": [...]}.
 * A message: "from" (digits, "+digits" or up to 11 GSM characters), "to"
 * (one recipient or an array: digits or "+digits", as strings or integers),
 * "text" (UTF-8) or "hex" (octets), optional "udh" (hex), "coding" ("auto",
 * "gsm", "ucs2", "binary", or Kannel's 0, 1, 2: without it text is GSM 7-bit
 * when every character is in GSM 03.38, else UCS2, and hex is 8-bit),
 * "dlr_url" (a Kannel-style template, fetched with GET) or "callback" (a URL
 * the receipt is POSTed to as JSON), "dlr_mask" (Kannel's bits; default 3,
 * delivered and failed, when a URL is given), "send_at" (Unix seconds or
 * "YYYY-MM-DDTHH:MM:SSZ"; not with "deferred"), "validity" and "deferred"
 * (seconds from acceptance), "mclass" (0-3), "pid" (0-255), "priority" (0-3).
 * Unknown fields are faults, so that typing mistakes do not pass silently.
 *
 * Returns 0 with *out holding at least one submit; HTTP_CODEC_E_INVALID or
 * HTTP_CODEC_E_TOO_LARGE with *out holding the faults (answer 400 or 413 with
 * http_codec_json_faults); HTTP_CODEC_E_NOMEM with *out NULL. A request with
 * any fault submits nothing. */
int http_codec_json_parse(struct http_codec_batch **out, const char *body, size_t len,
                          const struct http_codec_limits *lim);

/* The gateway's verdict on one submit. */
enum http_codec_outcome {
  HTTP_CODEC_ACCEPTED = 0,     /* taken (Kannel "0: Accepted for delivery") */
  HTTP_CODEC_QUEUED,           /* taken, but no route is up now (Kannel "3: Queued for later delivery") */
  HTTP_CODEC_THROTTLED,        /* refused: too fast, retry later */
  HTTP_CODEC_TEMPORARY,        /* refused: queue full, journal error; retry later */
  HTTP_CODEC_NO_ROUTE,         /* refused for good: no route */
  HTTP_CODEC_NO_CREDIT,        /* refused: the account's credit is used up (402) */
  HTTP_CODEC_REJECTED          /* refused for good: the message itself */
};

struct http_codec_result {
  enum http_codec_outcome outcome;
  uint64_t id;                 /* the gateway id when taken */
};

/* Name of an outcome ("accepted", "queue full, retry later", ...). */
const char *http_codec_outcome_text(enum http_codec_outcome o);

/* The JSON answer to a batch whose submits got results[i] (indexed like
 * b->items): {"accepted":N,"refused":M,"messages":[{"message":i,"to":...,
 * "id":"..."} or {..., "error":"...","retry":bool}]}. Ids are strings, as
 * 64-bit integers lose digits in JavaScript. *status: 202 when all were
 * taken, 207 when some were, else 429 (throttled), 503 (temporary) or 400.
 * Returns a malloc'ed string (the caller frees), NULL when out of memory. */
char *http_codec_json_answer(const struct http_codec_batch *b, const struct http_codec_result *results,
                             unsigned *status);

/* {"error":"invalid request","faults":[{"message":i,"field":...,"reason":...}]}
 * for a refused batch. Malloc'ed, NULL when out of memory. */
char *http_codec_json_faults(const struct http_codec_batch *b);

/* {"error":text}. Malloc'ed, NULL when out of memory. */
char *http_codec_json_error(const char *text);

/* ---- Kannel: GET/POST /cgi-bin/sendsms ---- */

/* A request parameter. value is len octets (it may hold NULs) followed by a NUL. */
struct http_codec_param {
  const char *name;
  const char *value;
  size_t len;
};

#define HTTP_CODEC_KANNEL_AUTH_FAILED "Authorization failed for sendsms"
#define HTTP_CODEC_KANNEL_AUTH_STATUS 403

/* Splits an application/x-www-form-urlencoded text (a query string or a
 * POST body) in place into params: '+' is a space, %XX an octet ('%' not
 * followed by two hex digits stays as it is). text must have room for one
 * more octet at text[len], for the last NUL. Returns the count, or
 * HTTP_CODEC_E_SPACE when there are more than cap parameters. */
int http_codec_form_parse(char *text, size_t len, struct http_codec_param *params, size_t cap);

/* The sendsms parameter a Kannel POST header carries ("X-Kannel-From" ->
 * "from"), compared without case; NULL for any other header. */
const char *http_codec_kannel_header_param(const char *header);

/* username (or user) and password (or pass). Returns 0, or -1 when either
 * is missing or longer than MSG_USER_LEN - 1. */
int http_codec_kannel_credentials(const struct http_codec_param *params, size_t n,
                                  char user[MSG_USER_LEN], char password[MSG_USER_LEN]);

/* Kannel's sendsms parameters: from, to (recipients separated by spaces),
 * text, coding (0 GSM 7-bit, with '?' for what GSM lacks; 1 8-bit; 2 UCS2;
 * absent: 8-bit with a udh, else GSM when the text allows it, else UCS2),
 * charset (of text: UTF-8 by default, ISO-8859-1, or for coding 2 also
 * UTF-16BE, the default there), udh (octets, or hex as in X-Kannel-UDH),
 * dlr-mask, dlr-url, validity and deferred (minutes), mclass, pid, priority,
 * mwi and alt-dcs (into the DCS as Kannel sets it), compress and rpi (0 or
 * absent; what would ask for them is refused), meta-data ("?group?k=v&...")
 * and the hints smsc, account, binfo; the dlr-url gets what only the
 * request knows filled in (http_codec_dlr_url_prepare) and must then fit
 * MSG_CALLBACK_LEN. The first of a repeated name counts.
 * Returns 0 with *out holding one submit per recipient, each with the
 * dlr-url for GET; HTTP_CODEC_E_INVALID or HTTP_CODEC_E_TOO_LARGE with *out
 * holding kannel_status (400) and kannel_answer (Kannel's text, e.g.
 * "Missing receiver number, rejected") and a fault; HTTP_CODEC_E_NOMEM with
 * *out NULL. Credentials are not looked at: check them first, as Kannel does. */
int http_codec_kannel_parse(struct http_codec_batch **out, const struct http_codec_param *params,
                            size_t n, const struct http_codec_limits *lim);

/* Kannel's answer to a batch whose submits got results[i]: 202 "0: Accepted
 * for delivery" (or "3: Queued for later delivery" when one was queued), 503
 * "Temporal failure, try again later.", 403 "Not routable. Do not try
 * again.", or, when only some recipients were taken, 500 "Sending failed.
 * Failed receivers are: ..." written into buf (cap octets). Returns the text
 * (a constant or buf) and sets *status. */
const char *http_codec_kannel_answer(const struct http_codec_batch *b,
                                     const struct http_codec_result *results, unsigned *status,
                                     char *buf, size_t cap);

/* ---- Receipts to HTTP clients ---- */

struct http_codec_dlr {
  const struct msg_receipt *receipt; /* state (SMSC_ACCEPTED/REJECTED: Kannel's 8/16), err, times;
                                         src and dst of the message */
  uint64_t id;                 /* the gateway id of the message (%I) */
  const char *smsc;            /* %i: the connector it went out on; NULL = none */
  const char *smsc_msgid;      /* %F: the SMSC's id; NULL = none */
  const char *answer;          /* %A; NULL = a receipt text made from *receipt */
  const char *user;            /* %n: the account that sent the message; NULL = none */
  int64_t time;                /* %t, %T: when the receipt came, Unix seconds */
};

/* Kannel's DLR type for a message state: 1 delivered, 4 buffered (ENROUTE,
 * ACCEPTED), 2 for every failure, 8 and 16 for the SMSC's acceptance and
 * refusal of the submit; 0 for an unknown state. */
unsigned http_codec_dlr_type(uint8_t state);

/* Expands a dlr-url template for the receipt into dst, NUL-terminated.
 * Returns its length, HTTP_CODEC_E_SPACE, or HTTP_CODEC_E_INVALID when the
 * receipt has no receipt. */
int http_codec_dlr_url(char *dst, size_t cap, const char *tmpl, const struct http_codec_dlr *d);

/* What a sendsms request knows that its receipt will not: Kannel's %n,
 * %o, %B, %D and %#group#key# (NULL: empty). */
struct http_codec_submit_info {
  const char *user, *account, *binfo, *meta_data;
};

/* Fills in a dlr-url template's escapes that only the request knows (and
 * %R, the template itself), leaving the receipt's for http_codec_dlr_url;
 * each '%' of what is filled in is doubled, so that the second expansion
 * turns it back into one. Returns the length (NUL-terminated in dst) or
 * HTTP_CODEC_E_SPACE. */
int http_codec_dlr_url_prepare(char *dst, size_t cap, const char *tmpl, const struct http_codec_submit_info *s);

/* The JSON body of a receipt callback: {"id","dlr","status","state","err",
 * "from","to","smsc","smsc_id","answer","submit_time","done_time","time"}.
 * Returns its length (NUL-terminated in dst) or HTTP_CODEC_E_SPACE /
 * HTTP_CODEC_E_INVALID / HTTP_CODEC_E_NOMEM. */
int http_codec_dlr_json(char *dst, size_t cap, const struct http_codec_dlr *d);

/* ---- The outgoing HTTP connector ---- */

enum http_codec_escape {
  HTTP_CODEC_ESC_URL = 0,      /* values %-encoded: URL templates, form bodies */
  HTTP_CODEC_ESC_JSON          /* values JSON-string-escaped: JSON body templates */
};

/* What a message template needs beyond the message. */
struct http_codec_out {
  const char *smsc;            /* %i: this connector's name; NULL = none */
  const char *user;            /* %n: the account the message came from; NULL = none */
  int64_t time;                /* %t, %T: Unix seconds */
  bool mo;                     /* a mobile-originated message: %p and %q are its sender, %P and %Q
                                  its recipient (Kannel's sms-service get-url: %p is the handset) */
};

/* Expands a message template (URL or body) into dst, NUL-terminated.
 * Returns its length, HTTP_CODEC_E_SPACE, or HTTP_CODEC_E_INVALID for a
 * payload that does not convert (malformed GSM or UCS2). */
int http_codec_out_expand(char *dst, size_t cap, const char *tmpl, const struct msg *m,
                          const struct http_codec_out *o, enum http_codec_escape esc);

/* Classifies a provider's answer: 2xx PROTO_OK, 429 PROTO_E_THROTTLED, 0 (no
 * answer: connection failure or time-out), 408 and 5xx PROTO_E_TEMPORARY,
 * anything else PROTO_E_PERMANENT. On PROTO_OK, msgid gets the provider's
 * message id: the value at id_field in a JSON body (a dotted path such as
 * "messages.0.id"; a string or an integer), or with id_field NULL or "" the
 * whole body without surrounding white space; "" when there is none or it
 * does not fit msgid_cap. */
enum proto_status http_codec_out_classify(long http_status, const char *body, size_t len,
                                          const char *id_field, char *msgid, size_t msgid_cap);

#endif
