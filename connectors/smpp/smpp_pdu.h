/* smpp_pdu.h - SMPP 3.4 PDU codec: cuts a TCP byte stream into PDUs and
 * turns PDUs into typed structs and back.
 *
 * Pure code: no I/O, no allocation, no logging, no global that changes. The
 * layouts (command ids, mandatory bodies, typed TLVs, status codes, errors)
 * are data in smpp_pdu.def; this header and smpp_pdu.c are generated from it.
 *
 * Ownership and lifetimes: a struct smpp_pdu owns nothing and needs no
 * cleanup. Decoding copies every C-Octet string (and the typed string TLVs)
 * into the struct's fixed arrays, which are sized by the protocol maximum,
 * NUL included. short_message, message_payload and every TLV value are
 * pointers into the buffer that was decoded: they stay valid as long as that
 * buffer is neither freed nor overwritten. When encoding, those pointers are
 * read, never kept.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SMPP_PDU_H
#define EMG_SMPP_PDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SMPP_HEADER_LEN 16
#define SMPP_RESP_BIT 0x80000000u
#define SMPP_VERSION_34 0x34

/* Largest PDU a session accepts by default: a 64 KiB message_payload plus
 * room for the header, the mandatory fields and the other TLVs. */
#define SMPP_MAX_PDU_DEFAULT (65536 + 4096)

/* TLVs kept per PDU; a PDU carrying more fails with SMPP_ERR_TLV_COUNT. */
#define SMPP_MAX_TLVS 32

/* esm_class (doc/smpp.md 3.2) */
#define SMPP_ESM_SMSC_RECEIPT 0x04
#define SMPP_ESM_SME_ACK 0x08
#define SMPP_ESM_INTERMEDIATE 0x20
#define SMPP_ESM_RECEIPT_MASK (SMPP_ESM_SMSC_RECEIPT | SMPP_ESM_SME_ACK | SMPP_ESM_INTERMEDIATE)
#define SMPP_ESM_UDHI 0x40
#define SMPP_ESM_REPLY_PATH 0x80

/* registered_delivery (doc/smpp.md 3.3) */
#define SMPP_REGDLV_RECEIPT_FINAL 0x01
#define SMPP_REGDLV_RECEIPT_FAILURE 0x02
#define SMPP_REGDLV_INTERMEDIATE 0x10

/* Command ids: SMPP_SUBMIT_SM, SMPP_SUBMIT_SM_RESP, ... */
enum smpp_command_id {
#define SMPP_CMD(NAME, name, id, body, bare_error) SMPP_##NAME = id,
#include "smpp_pdu.def"
};

/* command_status codes: SMPP_ESME_ROK, SMPP_ESME_RTHROTTLED, ... */
enum smpp_command_status {
#define SMPP_STATUS(NAME, code) SMPP_##NAME = code,
#include "smpp_pdu.def"
};

/* What the functions below return on failure (always < 0). */
enum smpp_error {
  SMPP_OK = 0,
#define SMPP_ERROR(NAME, code, status, text) SMPP_ERR_##NAME = code,
#include "smpp_pdu.def"
};

/* Tags of the typed TLVs: SMPP_TAG_message_state, ... */
enum smpp_tlv_tag {
#define SMPP_TLV(name, tag, kind, size) SMPP_TAG_##name = tag,
#include "smpp_pdu.def"
};

/* Index of each typed TLV; SMPP_TLV_BIT(name) is its bit in smpp_tlvs.present. */
enum smpp_tlv_index {
#define SMPP_TLV(name, tag, kind, size) SMPP_TLVI_##name,
#include "smpp_pdu.def"
  SMPP_TLV_TYPED_COUNT
};
#define SMPP_TLV_BIT(name) (UINT32_C(1) << SMPP_TLVI_##name)

/* Octet data inside some buffer (see lifetimes above). */
struct smpp_octets {
  const uint8_t *data;
  uint16_t len;
};

/* Mandatory bodies: struct smpp_bind, smpp_sm, smpp_sm_resp, ... with the
 * fields of smpp_pdu.def under their SMPP 3.4 names. */
#define SMPP_CSTR(field, size, error) char field[size];
#define SMPP_U8(field) uint8_t field;
#define SMPP_SM(length, data) uint8_t length; const uint8_t *data;
#define SMPP_BODY(body, fields) struct smpp_##body { fields };
#include "smpp_pdu.def"
#undef SMPP_CSTR
#undef SMPP_U8
#undef SMPP_SM

/* One member per layout; smpp_pdu.def says which command uses which. */
union smpp_body {
#define SMPP_BODY(body, fields) struct smpp_##body body;
#include "smpp_pdu.def"
};

/* One TLV as it came on the wire (or as added by smpp_tlv_add). */
struct smpp_tlv {
  const uint8_t *value;
  uint16_t tag;
  uint16_t len;
  /* 0: generic, encoded from value/len. Otherwise 1 + its SMPP_TLVI_ index:
   * the value lives in the typed field and is encoded from there (so edits
   * to the typed field are what goes out, at this TLV's place). */
  uint8_t typed;
};

/* Every TLV of a PDU in wire order, and the typed view of the known ones.
 * A typed field is meaningful only while its bit is set in present. A known
 * tag whose value does not fit its type (an integer of the wrong width, a
 * string longer than its maximum) stays generic only, as Kannel drops such
 * a TLV rather than the whole PDU; so does a repeat of a tag already typed
 * (the first one wins). */
struct smpp_tlvs {
  uint32_t present;
  unsigned count;
  struct smpp_tlv list[SMPP_MAX_TLVS];
#define SMPP_TLV_FIELD_U8(name, size) uint8_t name;
#define SMPP_TLV_FIELD_U16(name, size) uint16_t name;
#define SMPP_TLV_FIELD_U24(name, size) uint32_t name;
#define SMPP_TLV_FIELD_CSTR(name, size) char name[size];
#define SMPP_TLV_FIELD_OCTETS(name, size) struct smpp_octets name;
#define SMPP_TLV(name, tag, kind, size) SMPP_TLV_FIELD_##kind(name, size)
#include "smpp_pdu.def"
#undef SMPP_TLV_FIELD_U8
#undef SMPP_TLV_FIELD_U16
#undef SMPP_TLV_FIELD_U24
#undef SMPP_TLV_FIELD_CSTR
#undef SMPP_TLV_FIELD_OCTETS
};

struct smpp_pdu {
  uint32_t command_id;
  uint32_t command_status;
  uint32_t sequence_number;
  /* Only for a response with command_status != 0: true = the PDU is (or is
   * sent as) the bare 16-octet header, no body and no TLVs. smpp_pdu_init
   * sets it for the commands SMPP 3.4 sends so (bind_*_resp, submit_sm_resp,
   * data_sm_resp, query_sm_resp); decode sets it from what came. */
  bool omit_body;
  union smpp_body body;
  struct smpp_tlvs tlv;
};

/* Splitter. Looks at the start of buf (len bytes of stream) and returns 0 if
 * more bytes are needed, the length of the complete PDU at buf if there is
 * one, or SMPP_ERR_CMD_LEN when command_length is below 16 or above max_pdu
 * (e.g. SMPP_MAX_PDU_DEFAULT). A stream cannot be resynchronised after that
 * error: answer generic_nack ESME_RINVCMDLEN and close. */
int smpp_split(const uint8_t *buf, size_t len, size_t max_pdu);

/* Decodes the one PDU in buf[0..len) (len as smpp_split returned it) into
 * *pdu. Returns SMPP_OK or a negative SMPP_ERR_*; smpp_error_status() gives
 * the command_status to answer with. Whenever len >= 16 the header fields
 * are filled even on failure, so the error response can carry the request's
 * command_id and sequence_number. A response with command_status != 0 and no
 * body is accepted (body fields zero, omit_body set), as is one with a body.
 * Never reads outside buf[0..len). See the top of this file for lifetimes. */
int smpp_pdu_decode(struct smpp_pdu *pdu, const uint8_t *buf, size_t len);

/* Encodes *pdu into buf (cap bytes). Returns the PDU length (command_length
 * is written to match) or a negative SMPP_ERR_*: SMPP_ERR_NO_SPACE if it
 * does not fit, SMPP_ERR_CMD_ID for an unknown command_id, or the field's
 * error when a string is not NUL-terminated within its array. TLVs go out
 * in list order, typed ones from their typed field (dropped if their bit was
 * cleared); typed fields whose bit is set but that are not in the list follow,
 * in smpp_pdu.def order. A decoded PDU re-encodes byte for byte, except that
 * a typed string TLV is written with exactly one terminating NUL. */
int smpp_pdu_encode(const struct smpp_pdu *pdu, uint8_t *buf, size_t cap);

/* Prepares *pdu for encoding: the header given, status 0, every body field
 * zero/empty, no TLVs, omit_body as the command wants on error. */
void smpp_pdu_init(struct smpp_pdu *pdu, uint32_t command_id, uint32_t sequence_number);

/* Appends a generic TLV (value is borrowed: it must outlive the encode).
 * For the tags of smpp_pdu.def, set the typed field and its present bit
 * instead. Returns SMPP_OK or SMPP_ERR_TLV_COUNT when the list is full. */
int smpp_tlv_add(struct smpp_pdu *pdu, uint16_t tag, const uint8_t *value, uint16_t len);

/* Copies the C string src into the array dst of size octets (NUL included).
 * Returns false, leaving dst untouched, when src does not fit. */
bool smpp_cstr_set(char *dst, size_t size, const char *src);
#define SMPP_CSTR_SET(array, src) smpp_cstr_set((array), sizeof(array), (src))

/* Names for logs: "submit_sm", "ESME_RTHROTTLED", "message_state"; NULL when
 * the value is not in smpp_pdu.def (e.g. vendor status codes). */
const char *smpp_command_name(uint32_t command_id);
const char *smpp_status_name(uint32_t command_status);
const char *smpp_tlv_name(uint16_t tag);

/* For an SMPP_ERR_* code: a sentence for logs, and the command_status to
 * answer the offending PDU with (ESME_RUNKNOWNERR for a code not ours). */
const char *smpp_strerror(int err);
uint32_t smpp_error_status(int err);

/* What a submit_sm_resp (or data_sm_resp) command_status means for the
 * message: delivered to the SMSC, try again later (queue full, throttled,
 * temporary application error, system error: Kannel re-queues on exactly
 * these), or rejected for good. */
enum smpp_submit_class {
  SMPP_SUBMIT_OK,
  SMPP_SUBMIT_TEMPORARY,
  SMPP_SUBMIT_PERMANENT
};
enum smpp_submit_class smpp_submit_status_class(uint32_t command_status);

#endif
