/* smpp_pdu.c - SMPP 3.4 splitter, decoder and encoder, generated from smpp_pdu.def.
 *
 * Every body codec is an expansion of its field list, so adding a PDU or a
 * field is a .def edit. Decoding touches only the fields it fills (no memset
 * of the whole struct) and finds NULs with memchr: it runs per PDU on the
 * hot path of every SMPP connection.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <limits.h>
#include <string.h>
#include "smpp_pdu.h"

_Static_assert(SMPP_TLV_TYPED_COUNT <= 32, "smpp_tlvs.present has 32 bits");
_Static_assert(SMPP_TLV_TYPED_COUNT < UINT8_MAX, "smpp_tlv.typed is one octet");

/* Bytes still to read: [p, end). Readers never move p past end. */
struct in {
  const uint8_t *p;
  const uint8_t *end;
};

/* Room still to write: [p, end). */
struct out {
  uint8_t *p;
  uint8_t *end;
};

static inline uint16_t get_be16(const uint8_t *p)
{
  return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get_be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void set_be16(uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static inline void set_be32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static inline size_t in_left(const struct in *in)
{
  return (size_t)(in->end - in->p);
}

static inline size_t out_left(const struct out *o)
{
  return (size_t)(o->end - o->p);
}

/* ---- mandatory fields ---- */

/* A C-Octet string of at most size octets, NUL included, that must end
 * before the PDU does; otherwise the field's own error. */
static inline int get_cstr(struct in *in, char *dst, size_t size, int err)
{
  size_t left = in_left(in);
  const uint8_t *nul = memchr(in->p, 0, left < size ? left : size);
  if (!nul)
    return err;
  size_t n = (size_t)(nul - in->p) + 1;
  memcpy(dst, in->p, n);
  in->p += n;
  return SMPP_OK;
}

static inline int get_u8(struct in *in, uint8_t *dst)
{
  if (in->p == in->end)
    return SMPP_ERR_BODY_SHORT;
  *dst = *in->p++;
  return SMPP_OK;
}

static inline int get_sm(struct in *in, uint8_t *len, const uint8_t **data)
{
  int rc = get_u8(in, len);
  if (rc != SMPP_OK)
    return rc;
  if (*len > in_left(in))
    return SMPP_ERR_SM_LENGTH;
  *data = in->p;
  in->p += *len;
  return SMPP_OK;
}

static inline int put_octets(struct out *o, const void *src, size_t n)
{
  if (n > out_left(o))
    return SMPP_ERR_NO_SPACE;
  if (n) /* src may be NULL for empty data */
    memcpy(o->p, src, n);
  o->p += n;
  return SMPP_OK;
}

/* The string in src[0..size) with its NUL; a string filling the whole array
 * has none and cannot be sent: the field's own error. */
static inline int put_cstr(struct out *o, const char *src, size_t size, int err)
{
  const char *nul = memchr(src, 0, size);
  if (!nul)
    return err;
  return put_octets(o, src, (size_t)(nul - src) + 1);
}

static inline int put_u8(struct out *o, uint8_t v)
{
  if (o->p == o->end)
    return SMPP_ERR_NO_SPACE;
  *o->p++ = v;
  return SMPP_OK;
}

static inline int put_sm(struct out *o, uint8_t len, const uint8_t *data)
{
  int rc = put_u8(o, len);
  return rc != SMPP_OK ? rc : put_octets(o, data, len);
}

/* Body codecs: decode_<body>() and encode_<body>() for each SMPP_BODY. */
#define SMPP_CSTR(field, size, error) \
  if ((rc = get_cstr(in, b->field, size, SMPP_ERR_##error)) != SMPP_OK) \
    return rc;
#define SMPP_U8(field) \
  if ((rc = get_u8(in, &b->field)) != SMPP_OK) \
    return rc;
#define SMPP_SM(length, data) \
  if ((rc = get_sm(in, &b->length, &b->data)) != SMPP_OK) \
    return rc;
#define SMPP_BODY(body, fields) \
  static int decode_##body(struct in *in, union smpp_body *u) \
  { \
    struct smpp_##body *b = &u->body; \
    int rc; \
    fields \
    return SMPP_OK; \
  }
#include "smpp_pdu.def"
#undef SMPP_CSTR
#undef SMPP_U8
#undef SMPP_SM

#define SMPP_CSTR(field, size, error) \
  if ((rc = put_cstr(o, b->field, size, SMPP_ERR_##error)) != SMPP_OK) \
    return rc;
#define SMPP_U8(field) \
  if ((rc = put_u8(o, b->field)) != SMPP_OK) \
    return rc;
#define SMPP_SM(length, data) \
  if ((rc = put_sm(o, b->length, b->data)) != SMPP_OK) \
    return rc;
#define SMPP_BODY(body, fields) \
  static int encode_##body(struct out *o, const union smpp_body *u) \
  { \
    const struct smpp_##body *b = &u->body; \
    int rc; \
    fields \
    return SMPP_OK; \
  }
#include "smpp_pdu.def"
#undef SMPP_CSTR
#undef SMPP_U8
#undef SMPP_SM

/* Header-only commands (TLVs aside). */
static int decode_none(struct in *in, union smpp_body *u)
{
  return SMPP_OK;
}

static int encode_none(struct out *o, const union smpp_body *u)
{
  return SMPP_OK;
}

/* ---- commands ---- */

struct command {
  uint32_t id;
  const char *name;
  int (*decode)(struct in *, union smpp_body *);
  int (*encode)(struct out *, const union smpp_body *);
  bool bare_error;
};

enum {
#define SMPP_CMD(NAME, name, id, body, bare_error) CMD_##NAME,
#include "smpp_pdu.def"
};

static const struct command commands[] = {
#define SMPP_CMD(NAME, name, id, body, bare_error) \
  [CMD_##NAME] = { id, #name, decode_##body, encode_##body, bare_error },
#include "smpp_pdu.def"
};

/* The one lookup of a command_id; NULL when unknown. */
static const struct command *command_find(uint32_t id)
{
  switch (id) {
#define SMPP_CMD(NAME, name, id_, body, bare_error) \
  case id_: return &commands[CMD_##NAME];
#include "smpp_pdu.def"
  default: return NULL;
  }
}

/* ---- TLVs ---- */

/* Typed TLV readers: store the value and return true if it fits the kind.
 * dst points to the typed field (of the kind's C type). */
static bool tlv_get_U8(void *dst, const uint8_t *v, uint16_t len, size_t size)
{
  if (len != 1)
    return false;
  *(uint8_t *)dst = v[0];
  return true;
}

static bool tlv_get_U16(void *dst, const uint8_t *v, uint16_t len, size_t size)
{
  if (len != 2)
    return false;
  *(uint16_t *)dst = get_be16(v);
  return true;
}

static bool tlv_get_U24(void *dst, const uint8_t *v, uint16_t len, size_t size)
{
  if (len != 3)
    return false;
  *(uint32_t *)dst = (uint32_t)v[0] << 16 | (uint32_t)v[1] << 8 | v[2];
  return true;
}

/* The string ends at its first NUL or, since some SMSCs leave the NUL out
 * of receipted_message_id, at the end of the value. */
static bool tlv_get_CSTR(void *dst, const uint8_t *v, uint16_t len, size_t size)
{
  const uint8_t *nul = len ? memchr(v, 0, len) : NULL;
  size_t n = nul ? (size_t)(nul - v) : len;
  if (n >= size)
    return false;
  if (n)
    memcpy(dst, v, n);
  ((char *)dst)[n] = '\0';
  return true;
}

static bool tlv_get_OCTETS(void *dst, const uint8_t *v, uint16_t len, size_t size)
{
  struct smpp_octets *o = dst;
  o->data = v;
  o->len = len;
  return true;
}

static int tlv_put(struct out *o, uint16_t tag, const void *value, size_t len)
{
  if (4 + len > out_left(o))
    return SMPP_ERR_NO_SPACE;
  set_be16(o->p, tag);
  set_be16(o->p + 2, (uint16_t)len);
  o->p += 4;
  return put_octets(o, value, len);
}

/* Typed TLV writers: src points to the typed field. */
static int tlv_put_U8(struct out *o, uint16_t tag, const void *src, size_t size)
{
  return tlv_put(o, tag, src, 1);
}

static int tlv_put_U16(struct out *o, uint16_t tag, const void *src, size_t size)
{
  uint8_t v[2];
  set_be16(v, *(const uint16_t *)src);
  return tlv_put(o, tag, v, sizeof v);
}

static int tlv_put_U24(struct out *o, uint16_t tag, const void *src, size_t size)
{
  uint32_t x = *(const uint32_t *)src;
  uint8_t v[3] = { (uint8_t)(x >> 16), (uint8_t)(x >> 8), (uint8_t)x };
  return tlv_put(o, tag, v, sizeof v);
}

static int tlv_put_CSTR(struct out *o, uint16_t tag, const void *src, size_t size)
{
  const char *nul = memchr(src, 0, size);
  if (!nul)
    return SMPP_ERR_TLV_VALUE;
  return tlv_put(o, tag, src, (size_t)(nul - (const char *)src) + 1);
}

static int tlv_put_OCTETS(struct out *o, uint16_t tag, const void *src, size_t size)
{
  const struct smpp_octets *v = src;
  return tlv_put(o, tag, v->data, v->len);
}

/* Fills the typed field of a known tag. Returns 1 + its index, or 0 when
 * the tag is not typed, its value does not fit, or it was typed already by
 * an earlier TLV: then it stays generic, so that a repeat is re-encoded as it
 * came rather than as a copy of the typed value. */
static uint8_t tlv_decode_typed(struct smpp_tlvs *t, uint16_t tag, const uint8_t *v, uint16_t len)
{
  switch (tag) {
#define SMPP_TLV(name, tag_, kind, size) \
  case tag_: \
    if (t->present & SMPP_TLV_BIT(name) || !tlv_get_##kind(&t->name, v, len, size)) \
      return 0; \
    t->present |= SMPP_TLV_BIT(name); \
    return SMPP_TLVI_##name + 1;
#include "smpp_pdu.def"
  default: return 0;
  }
}

static int tlv_encode_typed(struct out *o, const struct smpp_tlvs *t, unsigned index)
{
  switch (index) {
#define SMPP_TLV(name, tag, kind, size) \
  case SMPP_TLVI_##name: return tlv_put_##kind(o, tag, &t->name, size);
#include "smpp_pdu.def"
  default: return SMPP_OK; /* a present bit no typed TLV owns: nothing to write */
  }
}

static int decode_tlvs(struct in *in, struct smpp_tlvs *t)
{
  t->present = 0;
  t->count = 0;
  while (in->p < in->end) {
    if (in_left(in) < 4)
      return SMPP_ERR_TLV_STREAM;
    uint16_t tag = get_be16(in->p), len = get_be16(in->p + 2);
    in->p += 4;
    if (len > in_left(in))
      return SMPP_ERR_TLV_LENGTH;
    if (t->count == SMPP_MAX_TLVS)
      return SMPP_ERR_TLV_COUNT;
    struct smpp_tlv *e = &t->list[t->count++];
    e->value = in->p;
    e->tag = tag;
    e->len = len;
    e->typed = tlv_decode_typed(t, tag, in->p, len);
    in->p += len;
  }
  return SMPP_OK;
}

/* The list in order (typed entries from their fields, or left out once their
 * bit is cleared), then the typed fields set but not in the list. */
static int encode_tlvs(struct out *o, const struct smpp_tlvs *t)
{
  uint32_t listed = 0;
  int rc;
  for (unsigned i = 0; i < t->count && i < SMPP_MAX_TLVS; i++) {
    const struct smpp_tlv *e = &t->list[i];
    if (e->typed && e->typed <= SMPP_TLV_TYPED_COUNT) {
      uint32_t bit = UINT32_C(1) << (e->typed - 1);
      listed |= bit;
      rc = t->present & bit ? tlv_encode_typed(o, t, e->typed - 1u) : SMPP_OK;
    } else {
      rc = tlv_put(o, e->tag, e->value, e->len);
    }
    if (rc != SMPP_OK)
      return rc;
  }
  for (uint32_t rest = t->present & ~listed; rest; rest &= rest - 1)
    if ((rc = tlv_encode_typed(o, t, (unsigned)__builtin_ctz(rest))) != SMPP_OK)
      return rc;
  return SMPP_OK;
}

/* ---- PDUs ---- */

int smpp_split(const uint8_t *buf, size_t len, size_t max_pdu)
{
  if (len < 4)
    return 0;
  uint32_t n = get_be32(buf);
  if (n < SMPP_HEADER_LEN || n > max_pdu || n > INT_MAX)
    return SMPP_ERR_CMD_LEN;
  return len < n ? 0 : (int)n;
}

static inline bool is_error_resp(uint32_t command_id, uint32_t status)
{
  return (command_id & SMPP_RESP_BIT) && status != SMPP_ESME_ROK;
}

int smpp_pdu_decode(struct smpp_pdu *pdu, const uint8_t *buf, size_t len)
{
  if (len < SMPP_HEADER_LEN)
    return SMPP_ERR_CMD_LEN;
  pdu->command_id = get_be32(buf + 4);
  pdu->command_status = get_be32(buf + 8);
  pdu->sequence_number = get_be32(buf + 12);
  if (get_be32(buf) != len)
    return SMPP_ERR_CMD_LEN;
  const struct command *cmd = command_find(pdu->command_id);
  if (!cmd)
    return SMPP_ERR_CMD_ID;

  pdu->omit_body = len == SMPP_HEADER_LEN && is_error_resp(pdu->command_id, pdu->command_status);
  if (pdu->omit_body) {
    memset(&pdu->body, 0, sizeof pdu->body);
    pdu->tlv.present = 0;
    pdu->tlv.count = 0;
    return SMPP_OK;
  }
  struct in in = { buf + SMPP_HEADER_LEN, buf + len };
  int rc = cmd->decode(&in, &pdu->body);
  return rc != SMPP_OK ? rc : decode_tlvs(&in, &pdu->tlv);
}

int smpp_pdu_encode(const struct smpp_pdu *pdu, uint8_t *buf, size_t cap)
{
  const struct command *cmd = command_find(pdu->command_id);
  if (!cmd)
    return SMPP_ERR_CMD_ID;
  if (cap < SMPP_HEADER_LEN)
    return SMPP_ERR_NO_SPACE;
  struct out o = { buf + SMPP_HEADER_LEN, buf + cap };
  if (!(pdu->omit_body && is_error_resp(pdu->command_id, pdu->command_status))) {
    int rc = cmd->encode(&o, &pdu->body);
    if (rc == SMPP_OK)
      rc = encode_tlvs(&o, &pdu->tlv);
    if (rc != SMPP_OK)
      return rc;
  }
  /* at most a body of a few hundred octets plus 32 TLVs of 64 KiB: fits */
  uint32_t len = (uint32_t)(o.p - buf);
  set_be32(buf, len);
  set_be32(buf + 4, pdu->command_id);
  set_be32(buf + 8, pdu->command_status);
  set_be32(buf + 12, pdu->sequence_number);
  return (int)len;
}

void smpp_pdu_init(struct smpp_pdu *pdu, uint32_t command_id, uint32_t sequence_number)
{
  const struct command *cmd = command_find(command_id);
  pdu->command_id = command_id;
  pdu->command_status = SMPP_ESME_ROK;
  pdu->sequence_number = sequence_number;
  pdu->omit_body = cmd && cmd->bare_error;
  memset(&pdu->body, 0, sizeof pdu->body);
  pdu->tlv.present = 0;
  pdu->tlv.count = 0;
}

int smpp_tlv_add(struct smpp_pdu *pdu, uint16_t tag, const uint8_t *value, uint16_t len)
{
  struct smpp_tlvs *t = &pdu->tlv;
  if (t->count >= SMPP_MAX_TLVS)
    return SMPP_ERR_TLV_COUNT;
  t->list[t->count++] = (struct smpp_tlv){ .value = value, .tag = tag, .len = len, .typed = 0 };
  return SMPP_OK;
}

bool smpp_cstr_set(char *dst, size_t size, const char *src)
{
  size_t n = strlen(src);
  if (n >= size)
    return false;
  memcpy(dst, src, n + 1);
  return true;
}

/* ---- names and classes ---- */

const char *smpp_command_name(uint32_t command_id)
{
  const struct command *cmd = command_find(command_id);
  return cmd ? cmd->name : NULL;
}

const char *smpp_status_name(uint32_t command_status)
{
  switch (command_status) {
#define SMPP_STATUS(NAME, code) \
  case code: return #NAME;
#include "smpp_pdu.def"
  default: return NULL;
  }
}

const char *smpp_tlv_name(uint16_t tag)
{
  switch (tag) {
#define SMPP_TLV(name, tag_, kind, size) \
  case tag_: return #name;
#include "smpp_pdu.def"
  default: return NULL;
  }
}

struct error_info {
  uint32_t status;
  const char *text;
};

/* Indexed by -code: the codes are small negative numbers. */
static const struct error_info errors[] = {
  [0] = { SMPP_ESME_ROK, "no error" },
#define SMPP_ERROR(NAME, code, status, text) [-(code)] = { SMPP_##status, text },
#include "smpp_pdu.def"
};

static const struct error_info *error_find(int err)
{
  if (err > 0 || err <= -(int)(sizeof errors / sizeof errors[0]) || !errors[-err].text)
    return NULL;
  return &errors[-err];
}

const char *smpp_strerror(int err)
{
  const struct error_info *e = error_find(err);
  return e ? e->text : "unknown SMPP codec error";
}

uint32_t smpp_error_status(int err)
{
  const struct error_info *e = error_find(err);
  return e ? e->status : SMPP_ESME_RUNKNOWNERR;
}

enum smpp_submit_class smpp_submit_status_class(uint32_t command_status)
{
  switch (command_status) {
  case SMPP_ESME_ROK:
    return SMPP_SUBMIT_OK;
  case SMPP_ESME_RMSGQFUL:
  case SMPP_ESME_RTHROTTLED:
  case SMPP_ESME_RX_T_APPN:
  case SMPP_ESME_RSYSERR:
    return SMPP_SUBMIT_TEMPORARY;
  default:
    return SMPP_SUBMIT_PERMANENT;
  }
}
