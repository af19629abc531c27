/* smpp_libsmpp34.c - cross-checks our SMPP codec against libsmpp34 (Debian
 * libsmpp34-dev), an independent C implementation. For bind_transceiver (and
 * its resp), submit_sm with TLVs, submit_sm_resp (OK and throttled),
 * deliver_sm carrying a receipt, enquire_link, unbind and generic_nack:
 *   (a) libsmpp34 packs the PDU, ours decodes it and the fields are asserted;
 *   (b) ours encodes the same PDU, libsmpp34 unpacks it and the fields are
 *       asserted there; where neither side has TLVs (whose order libsmpp34
 *       reverses) both encodings must be identical.
 * Prints every mismatch and "libsmpp34 cross-check: N passed, M failed";
 * exits 1 on any failure.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h> /* libsmpp34's headers use its types without including it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <smpp34.h>
#include <smpp34_structs.h>
#include <smpp34_params.h>
#include "smpp_pdu.h"

static int passed, failed;

static void check(const char *pdu, const char *what, int ok, const char *got, const char *want)
{
  if (ok) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s: %s: got %s, want %s\n", pdu, what, got, want);
}

static void check_num(const char *pdu, const char *what, unsigned long got, unsigned long want)
{
  char g[32], w[32];
  snprintf(g, sizeof g, "0x%lx", got);
  snprintf(w, sizeof w, "0x%lx", want);
  check(pdu, what, got == want, g, w);
}

static void check_str(const char *pdu, const char *what, const void *got, const char *want)
{
  check(pdu, what, strcmp(got, want) == 0, got, want);
}

static void check_mem(const char *pdu, const char *what, const void *got, size_t got_len, const void *want,
                      size_t want_len)
{
  char g[32], w[32];
  snprintf(g, sizeof g, "%zu octets", got_len);
  snprintf(w, sizeof w, "%zu octets%s", want_len, got_len == want_len ? " (others)" : "");
  check(pdu, what, got_len == want_len && memcmp(got, want, want_len) == 0, g, w);
}

/* libsmpp34's TLV list: copies of t appended by build_tlv. */
static void lib_tlv8(tlv_t **list, uint16_t tag, uint8_t v)
{
  tlv_t t = { .tag = tag, .length = 1 };
  t.value.val08 = v;
  build_tlv(list, &t);
}

static void lib_tlv16(tlv_t **list, uint16_t tag, uint16_t v)
{
  tlv_t t = { .tag = tag, .length = 2 };
  t.value.val16 = v;
  build_tlv(list, &t);
}

static void lib_tlv_octets(tlv_t **list, uint16_t tag, const void *v, uint16_t len)
{
  tlv_t t = { .tag = tag, .length = len };
  memcpy(t.value.octet, v, len);
  build_tlv(list, &t);
}

static const tlv_t *lib_tlv_find(const tlv_t *list, uint16_t tag)
{
  for (; list; list = list->next)
    if (list->tag == tag)
      return list;
  return NULL;
}

/* One PDU both ways. The struct is libsmpp34's for this command. */
struct lib_case {
  const char *name;
  uint32_t type;
  void (*lib_build)(void *lib);          /* fill libsmpp34's struct */
  void (*our_build)(struct smpp_pdu *p); /* the same PDU for our encoder */
  void (*our_check)(const char *name, const struct smpp_pdu *p);
  void (*lib_check)(const char *name, const void *lib);
  tlv_t *(*lib_tlvs)(void *lib);        /* its TLV list, to free; NULL if it has none */
};

/* ---- bind_transceiver ---- */

static void lib_bind(void *v)
{
  bind_transceiver_t *b = v;
  b->command_id = BIND_TRANSCEIVER;
  b->sequence_number = 1;
  strcpy((char *)b->system_id, "l34");
  strcpy((char *)b->password, "pw");
  strcpy((char *)b->system_type, "T");
  b->interface_version = SMPP_VERSION;
  b->addr_ton = 1;
  b->addr_npi = 1;
  strcpy((char *)b->address_range, "^47");
}

static void our_bind(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_BIND_TRANSCEIVER, 1);
  SMPP_CSTR_SET(p->body.bind.system_id, "l34");
  SMPP_CSTR_SET(p->body.bind.password, "pw");
  SMPP_CSTR_SET(p->body.bind.system_type, "T");
  p->body.bind.interface_version = SMPP_VERSION_34;
  p->body.bind.addr_ton = 1;
  p->body.bind.addr_npi = 1;
  SMPP_CSTR_SET(p->body.bind.address_range, "^47");
}

static void our_check_bind(const char *n, const struct smpp_pdu *p)
{
  check_str(n, "system_id", p->body.bind.system_id, "l34");
  check_str(n, "password", p->body.bind.password, "pw");
  check_str(n, "system_type", p->body.bind.system_type, "T");
  check_num(n, "interface_version", p->body.bind.interface_version, 0x34);
  check_num(n, "addr_ton", p->body.bind.addr_ton, 1);
  check_num(n, "addr_npi", p->body.bind.addr_npi, 1);
  check_str(n, "address_range", p->body.bind.address_range, "^47");
}

static void lib_check_bind(const char *n, const void *v)
{
  const bind_transceiver_t *b = v;
  check_str(n, "system_id", b->system_id, "l34");
  check_str(n, "password", b->password, "pw");
  check_str(n, "system_type", b->system_type, "T");
  check_num(n, "interface_version", b->interface_version, 0x34);
  check_num(n, "addr_ton", b->addr_ton, 1);
  check_num(n, "addr_npi", b->addr_npi, 1);
  check_str(n, "address_range", b->address_range, "^47");
}

/* ---- bind_transceiver_resp with sc_interface_version ---- */

static void lib_bind_resp(void *v)
{
  bind_transceiver_resp_t *b = v;
  b->command_id = BIND_TRANSCEIVER_RESP;
  b->sequence_number = 1;
  strcpy((char *)b->system_id, "SMSC");
  lib_tlv8(&b->tlv, TLVID_sc_interface_version, 0x34);
}

static void our_bind_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_BIND_TRANSCEIVER_RESP, 1);
  SMPP_CSTR_SET(p->body.bind_resp.system_id, "SMSC");
  p->tlv.sc_interface_version = 0x34;
  p->tlv.present |= SMPP_TLV_BIT(sc_interface_version);
}

static void our_check_bind_resp(const char *n, const struct smpp_pdu *p)
{
  check_str(n, "system_id", p->body.bind_resp.system_id, "SMSC");
  check_num(n, "TLVs typed", p->tlv.present, SMPP_TLV_BIT(sc_interface_version));
  check_num(n, "sc_interface_version", p->tlv.sc_interface_version, 0x34);
}

static void lib_check_bind_resp(const char *n, const void *v)
{
  const bind_transceiver_resp_t *b = v;
  check_str(n, "system_id", b->system_id, "SMSC");
  const tlv_t *t = lib_tlv_find(b->tlv, TLVID_sc_interface_version);
  check_num(n, "sc_interface_version", t ? t->value.val08 : 0, 0x34);
}

static tlv_t *tlvs_bind_resp(void *v)
{
  return ((bind_transceiver_resp_t *)v)->tlv;
}

/* ---- submit_sm with TLVs ---- */

static const uint8_t sm_text[] = "\x05\x00\x03\x2a\x02\x01\x04\x1f\x04\x40";
#define SM_TEXT_LEN (sizeof sm_text - 1)

static void lib_submit(void *v)
{
  submit_sm_t *s = v;
  s->command_id = SUBMIT_SM;
  s->sequence_number = 2;
  strcpy((char *)s->service_type, "CMT");
  s->source_addr_ton = 5;
  strcpy((char *)s->source_addr, "LibSMPP");
  s->dest_addr_ton = 1;
  s->dest_addr_npi = 1;
  strcpy((char *)s->destination_addr, "4790000001");
  s->esm_class = SMPP34_UDHI_IND;
  s->protocol_id = 0x41;
  s->priority_flag = 1;
  strcpy((char *)s->validity_period, "000001000000000R");
  s->registered_delivery = 1;
  s->data_coding = 8;
  s->sm_length = SM_TEXT_LEN;
  memcpy(s->short_message, sm_text, SM_TEXT_LEN);
  lib_tlv16(&s->tlv, TLVID_user_message_reference, 0x0102);
  lib_tlv16(&s->tlv, TLVID_sar_msg_ref_num, 0x0A0B);
  lib_tlv8(&s->tlv, TLVID_sar_total_segments, 3);
  lib_tlv8(&s->tlv, TLVID_sar_segment_seqnum, 2);
  lib_tlv_octets(&s->tlv, 0x1400, "xyz", 3);
}

static void our_submit(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_SUBMIT_SM, 2);
  struct smpp_sm *sm = &p->body.sm;
  SMPP_CSTR_SET(sm->service_type, "CMT");
  sm->source_addr_ton = 5;
  SMPP_CSTR_SET(sm->source_addr, "LibSMPP");
  sm->dest_addr_ton = 1;
  sm->dest_addr_npi = 1;
  SMPP_CSTR_SET(sm->destination_addr, "4790000001");
  sm->esm_class = SMPP_ESM_UDHI;
  sm->protocol_id = 0x41;
  sm->priority_flag = 1;
  SMPP_CSTR_SET(sm->validity_period, "000001000000000R");
  sm->registered_delivery = 1;
  sm->data_coding = 8;
  sm->short_message = sm_text;
  sm->sm_length = SM_TEXT_LEN;
  p->tlv.user_message_reference = 0x0102;
  p->tlv.sar_msg_ref_num = 0x0A0B;
  p->tlv.sar_total_segments = 3;
  p->tlv.sar_segment_seqnum = 2;
  p->tlv.present |= SMPP_TLV_BIT(user_message_reference) | SMPP_TLV_BIT(sar_msg_ref_num) |
                    SMPP_TLV_BIT(sar_total_segments) | SMPP_TLV_BIT(sar_segment_seqnum);
  smpp_tlv_add(p, 0x1400, (const uint8_t *)"xyz", 3);
}

static void our_check_submit(const char *n, const struct smpp_pdu *p)
{
  const struct smpp_sm *sm = &p->body.sm;
  check_str(n, "service_type", sm->service_type, "CMT");
  check_num(n, "source_addr_ton", sm->source_addr_ton, 5);
  check_str(n, "source_addr", sm->source_addr, "LibSMPP");
  check_num(n, "dest_addr_ton", sm->dest_addr_ton, 1);
  check_num(n, "dest_addr_npi", sm->dest_addr_npi, 1);
  check_str(n, "destination_addr", sm->destination_addr, "4790000001");
  check_num(n, "esm_class", sm->esm_class, 0x40);
  check_num(n, "protocol_id", sm->protocol_id, 0x41);
  check_num(n, "priority_flag", sm->priority_flag, 1);
  check_str(n, "schedule_delivery_time", sm->schedule_delivery_time, "");
  check_str(n, "validity_period", sm->validity_period, "000001000000000R");
  check_num(n, "registered_delivery", sm->registered_delivery, 1);
  check_num(n, "data_coding", sm->data_coding, 8);
  check_mem(n, "short_message", sm->short_message, sm->sm_length, sm_text, SM_TEXT_LEN);
  check_num(n, "TLVs", p->tlv.count, 5);
  check_num(n, "TLVs typed", p->tlv.present,
            SMPP_TLV_BIT(user_message_reference) | SMPP_TLV_BIT(sar_msg_ref_num) |
              SMPP_TLV_BIT(sar_total_segments) | SMPP_TLV_BIT(sar_segment_seqnum));
  check_num(n, "user_message_reference", p->tlv.user_message_reference, 0x0102);
  check_num(n, "sar_msg_ref_num", p->tlv.sar_msg_ref_num, 0x0A0B);
  check_num(n, "sar_total_segments", p->tlv.sar_total_segments, 3);
  check_num(n, "sar_segment_seqnum", p->tlv.sar_segment_seqnum, 2);
  const struct smpp_tlv *vendor = NULL;
  for (unsigned i = 0; i < p->tlv.count; i++)
    if (p->tlv.list[i].tag == 0x1400)
      vendor = &p->tlv.list[i];
  check(n, "vendor TLV 0x1400 kept", vendor && !vendor->typed, vendor ? "typed" : "missing", "generic");
  if (vendor)
    check_mem(n, "vendor TLV 0x1400", vendor->value, vendor->len, "xyz", 3);
}

static void lib_check_submit(const char *n, const void *v)
{
  const submit_sm_t *s = v;
  check_str(n, "service_type", s->service_type, "CMT");
  check_num(n, "source_addr_ton", s->source_addr_ton, 5);
  check_str(n, "source_addr", s->source_addr, "LibSMPP");
  check_num(n, "dest_addr_ton", s->dest_addr_ton, 1);
  check_num(n, "dest_addr_npi", s->dest_addr_npi, 1);
  check_str(n, "destination_addr", s->destination_addr, "4790000001");
  check_num(n, "esm_class", s->esm_class, 0x40);
  check_num(n, "protocol_id", s->protocol_id, 0x41);
  check_num(n, "priority_flag", s->priority_flag, 1);
  check_str(n, "validity_period", s->validity_period, "000001000000000R");
  check_num(n, "registered_delivery", s->registered_delivery, 1);
  check_num(n, "data_coding", s->data_coding, 8);
  check_mem(n, "short_message", s->short_message, s->sm_length, sm_text, SM_TEXT_LEN);
  const tlv_t *t;
  t = lib_tlv_find(s->tlv, TLVID_user_message_reference);
  check_num(n, "user_message_reference", t ? t->value.val16 : 0, 0x0102);
  t = lib_tlv_find(s->tlv, TLVID_sar_msg_ref_num);
  check_num(n, "sar_msg_ref_num", t ? t->value.val16 : 0, 0x0A0B);
  t = lib_tlv_find(s->tlv, TLVID_sar_total_segments);
  check_num(n, "sar_total_segments", t ? t->value.val08 : 0, 3);
  t = lib_tlv_find(s->tlv, TLVID_sar_segment_seqnum);
  check_num(n, "sar_segment_seqnum", t ? t->value.val08 : 0, 2);
  t = lib_tlv_find(s->tlv, 0x1400);
  check_mem(n, "vendor TLV 0x1400", t ? (const void *)t->value.octet : "", t ? t->length : 0, "xyz", 3);
}

static tlv_t *tlvs_submit(void *v)
{
  return ((submit_sm_t *)v)->tlv;
}

/* ---- submit_sm_resp, OK and throttled ---- */

static void lib_submit_resp(void *v)
{
  submit_sm_resp_t *r = v;
  r->command_id = SUBMIT_SM_RESP;
  r->sequence_number = 2;
  strcpy((char *)r->message_id, "5f3a9c01");
}

static void our_submit_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_SUBMIT_SM_RESP, 2);
  SMPP_CSTR_SET(p->body.sm_resp.message_id, "5f3a9c01");
}

static void our_check_submit_resp(const char *n, const struct smpp_pdu *p)
{
  check_str(n, "message_id", p->body.sm_resp.message_id, "5f3a9c01");
}

static void lib_check_submit_resp(const char *n, const void *v)
{
  check_str(n, "message_id", ((const submit_sm_resp_t *)v)->message_id, "5f3a9c01");
}

/* libsmpp34 always writes the (NULL) message_id; ours sends SMPP 3.4's bare
 * header (doc/smpp.md 1.4): no byte comparison, each reads the other's. */
static void lib_throttled(void *v)
{
  submit_sm_resp_t *r = v;
  r->command_id = SUBMIT_SM_RESP;
  r->command_status = ESME_RTHROTTLED;
  r->sequence_number = 4;
}

static void our_throttled(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_SUBMIT_SM_RESP, 4);
  p->command_status = SMPP_ESME_RTHROTTLED;
}

static void our_check_throttled(const char *n, const struct smpp_pdu *p)
{
  check_str(n, "message_id", p->body.sm_resp.message_id, "");
  check_num(n, "submit class", smpp_submit_status_class(p->command_status), SMPP_SUBMIT_TEMPORARY);
}

static void lib_check_throttled(const char *n, const void *v)
{
  const submit_sm_resp_t *r = v;
  check_num(n, "command_length", r->command_length, 16);
  check_str(n, "message_id", r->message_id, "");
}

/* ---- deliver_sm carrying a receipt ---- */

#define RECEIPT \
  "id:5f3a9c01 sub:001 dlvrd:001 submit date:2408061430 done date:2408061431 " \
  "stat:DELIVRD err:000 text:Hello"

static void lib_deliver(void *v)
{
  deliver_sm_t *d = v;
  d->command_id = DELIVER_SM;
  d->sequence_number = 7;
  d->source_addr_ton = 1;
  d->source_addr_npi = 1;
  strcpy((char *)d->source_addr, "4790000001");
  d->dest_addr_ton = 5;
  strcpy((char *)d->destination_addr, "Gateway");
  d->esm_class = SMPP34_DELIVERY_RECEIPT;
  d->sm_length = sizeof RECEIPT - 1;
  memcpy(d->short_message, RECEIPT, sizeof RECEIPT - 1);
  lib_tlv_octets(&d->tlv, TLVID_receipted_message_id, "5f3a9c01", 9);
  lib_tlv8(&d->tlv, TLVID_message_state, 2);
  lib_tlv_octets(&d->tlv, TLVID_network_error_code, "\x03\x00\x22", 3);
}

static void our_deliver(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_DELIVER_SM, 7);
  struct smpp_sm *sm = &p->body.sm;
  sm->source_addr_ton = 1;
  sm->source_addr_npi = 1;
  SMPP_CSTR_SET(sm->source_addr, "4790000001");
  sm->dest_addr_ton = 5;
  SMPP_CSTR_SET(sm->destination_addr, "Gateway");
  sm->esm_class = SMPP_ESM_SMSC_RECEIPT;
  sm->short_message = (const uint8_t *)RECEIPT;
  sm->sm_length = sizeof RECEIPT - 1;
  SMPP_CSTR_SET(p->tlv.receipted_message_id, "5f3a9c01");
  p->tlv.message_state = 2;
  p->tlv.network_error_code = 0x030022;
  p->tlv.present |= SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state) |
                    SMPP_TLV_BIT(network_error_code);
}

static void our_check_deliver(const char *n, const struct smpp_pdu *p)
{
  const struct smpp_sm *sm = &p->body.sm;
  check_str(n, "source_addr", sm->source_addr, "4790000001");
  check_num(n, "source_addr_npi", sm->source_addr_npi, 1);
  check_str(n, "destination_addr", sm->destination_addr, "Gateway");
  check_num(n, "dest_addr_ton", sm->dest_addr_ton, 5);
  check_num(n, "esm_class", sm->esm_class, SMPP_ESM_SMSC_RECEIPT);
  check_mem(n, "short_message", sm->short_message, sm->sm_length, RECEIPT, sizeof RECEIPT - 1);
  check_num(n, "TLVs typed", p->tlv.present,
            SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state) | SMPP_TLV_BIT(network_error_code));
  check_str(n, "receipted_message_id", p->tlv.receipted_message_id, "5f3a9c01");
  check_num(n, "message_state", p->tlv.message_state, 2);
  check_num(n, "network_error_code", p->tlv.network_error_code, 0x030022);
}

static void lib_check_deliver(const char *n, const void *v)
{
  const deliver_sm_t *d = v;
  check_str(n, "source_addr", d->source_addr, "4790000001");
  check_num(n, "source_addr_npi", d->source_addr_npi, 1);
  check_str(n, "destination_addr", d->destination_addr, "Gateway");
  check_num(n, "dest_addr_ton", d->dest_addr_ton, 5);
  check_num(n, "esm_class", d->esm_class, SMPP34_DELIVERY_RECEIPT);
  check_mem(n, "short_message", d->short_message, d->sm_length, RECEIPT, sizeof RECEIPT - 1);
  const tlv_t *t = lib_tlv_find(d->tlv, TLVID_receipted_message_id);
  check_mem(n, "receipted_message_id", t ? (const void *)t->value.octet : "", t ? t->length : 0,
            "5f3a9c01", 9);
  t = lib_tlv_find(d->tlv, TLVID_message_state);
  check_num(n, "message_state", t ? t->value.val08 : 0, 2);
  t = lib_tlv_find(d->tlv, TLVID_network_error_code);
  check_mem(n, "network_error_code", t ? (const void *)t->value.octet : "", t ? t->length : 0,
            "\x03\x00\x22", 3);
}

static tlv_t *tlvs_deliver(void *v)
{
  return ((deliver_sm_t *)v)->tlv;
}

/* ---- header-only PDUs ---- */

static void lib_enquire(void *v)
{
  enquire_link_t *e = v;
  e->command_id = ENQUIRE_LINK;
  e->sequence_number = 3;
}

static void our_enquire(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_ENQUIRE_LINK, 3);
}

static void lib_unbind(void *v)
{
  unbind_t *u = v;
  u->command_id = UNBIND;
  u->sequence_number = 10;
}

static void our_unbind(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_UNBIND, 10);
}

static void lib_nack(void *v)
{
  generic_nack_t *g = v;
  g->command_id = GENERIC_NACK;
  g->command_status = ESME_RINVCMDID;
  g->sequence_number = 9;
}

static void our_nack(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_GENERIC_NACK, 9);
  p->command_status = SMPP_ESME_RINVCMDID;
}

static void our_check_empty(const char *n, const struct smpp_pdu *p)
{
  check_num(n, "TLVs", p->tlv.count, 0);
}

static void lib_check_empty(const char *n, const void *v)
{
  check_num(n, "command_length", ((const enquire_link_t *)v)->command_length, 16);
}

static const struct lib_case cases[] = {
  { "bind_transceiver", BIND_TRANSCEIVER, lib_bind, our_bind, our_check_bind, lib_check_bind, NULL },
  { "bind_transceiver_resp", BIND_TRANSCEIVER_RESP, lib_bind_resp, our_bind_resp, our_check_bind_resp,
    lib_check_bind_resp, tlvs_bind_resp },
  { "submit_sm", SUBMIT_SM, lib_submit, our_submit, our_check_submit, lib_check_submit, tlvs_submit },
  { "submit_sm_resp", SUBMIT_SM_RESP, lib_submit_resp, our_submit_resp, our_check_submit_resp,
    lib_check_submit_resp, NULL },
  { "submit_sm_resp throttled", SUBMIT_SM_RESP, lib_throttled, our_throttled, our_check_throttled,
    lib_check_throttled, NULL },
  { "deliver_sm receipt", DELIVER_SM, lib_deliver, our_deliver, our_check_deliver, lib_check_deliver,
    tlvs_deliver },
  { "enquire_link", ENQUIRE_LINK, lib_enquire, our_enquire, our_check_empty, lib_check_empty, NULL },
  { "unbind", UNBIND, lib_unbind, our_unbind, our_check_empty, lib_check_empty, NULL },
  { "generic_nack", GENERIC_NACK, lib_nack, our_nack, our_check_empty, lib_check_empty, NULL },
};

/* Room for any of libsmpp34's PDU structs (deliver_sm_t is the largest here). */
union lib_any {
  bind_transceiver_t bind;
  bind_transceiver_resp_t bind_resp;
  submit_sm_t submit;
  submit_sm_resp_t submit_resp;
  deliver_sm_t deliver;
  enquire_link_t enquire;
  unbind_t unbind;
  generic_nack_t nack;
};

static void run(const struct lib_case *c)
{
  static union lib_any lib;
  uint8_t theirs[2048], ours[2048];
  int their_len = 0;
  struct smpp_pdu p, want;

  c->our_build(&want);

  /* (a) libsmpp34 packs, we decode */
  memset(&lib, 0, sizeof lib);
  c->lib_build(&lib);
  int rc = smpp34_pack(c->type, theirs, sizeof theirs, &their_len, &lib);
  check(c->name, "libsmpp34 packs it", rc == 0, smpp34_strerror, "success");
  if (c->lib_tlvs)
    destroy_tlv(c->lib_tlvs(&lib));
  if (rc == 0) {
    rc = smpp_pdu_decode(&p, theirs, (size_t)their_len);
    check(c->name, "we decode libsmpp34's PDU", rc == SMPP_OK, smpp_strerror(rc), "success");
    if (rc == SMPP_OK) {
      check_num(c->name, "command_id", p.command_id, want.command_id);
      check_num(c->name, "command_status", p.command_status, want.command_status);
      check_num(c->name, "sequence_number", p.sequence_number, want.sequence_number);
      c->our_check(c->name, &p);
    }
  }

  /* (b) we encode, libsmpp34 unpacks */
  int our_len = smpp_pdu_encode(&want, ours, sizeof ours);
  check(c->name, "we encode it", our_len > 0, smpp_strerror(our_len), "success");
  if (our_len <= 0)
    return;
  memset(&lib, 0, sizeof lib);
  rc = smpp34_unpack(c->type, &lib, ours, our_len);
  check(c->name, "libsmpp34 unpacks our PDU", rc == 0, smpp34_strerror, "success");
  if (rc == 0) {
    const enquire_link_t *h = &lib.enquire; /* every struct starts with the header */
    check_num(c->name, "libsmpp34: command_length", h->command_length, (unsigned long)our_len);
    check_num(c->name, "libsmpp34: command_id", h->command_id, want.command_id);
    check_num(c->name, "libsmpp34: command_status", h->command_status, want.command_status);
    check_num(c->name, "libsmpp34: sequence_number", h->sequence_number, want.sequence_number);
    c->lib_check(c->name, &lib);
  }
  if (c->lib_tlvs)
    destroy_tlv(c->lib_tlvs(&lib));

  /* without TLVs or a bare error header, both must write the same octets */
  if (!c->lib_tlvs && !(want.omit_body && want.command_status))
    check_mem(c->name, "same encoding as libsmpp34", ours, (size_t)our_len, theirs, (size_t)their_len);
}

int main(void)
{
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run(&cases[i]);
  printf("libsmpp34 cross-check: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
