/* smpp_cli.c - our SMPP codec as a command-line tool, for cross-checks
 * against other implementations (tests/interop/smpp_net_smpp.pl).
 *
 *   emg_smpp_cli encode   prints a fixed set of PDUs our encoder writes,
 *                         one per line: name<TAB>hex
 *   emg_smpp_cli decode   reads PDUs from stdin, one per line as hex or
 *                         label<TAB>hex, and prints for each "pdu=<label>",
 *                         its fields as key=value lines (C-Octet strings
 *                         as they are, octet data in hex, TLVs as tlv.<name>
 *                         or tlv.0x<tag>, omit_body=1 for a bare error
 *                         response) and an empty line; a PDU that does
 *                         not decode gives error= and status= lines instead.
 *
 * The body fields are printed from smpp_pdu.def, so every layout is covered.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hexutil.h"
#include "smpp_pdu.h"

static void print_hex(const char *key, const uint8_t *data, size_t len)
{
  static char hex[2 * 65536 + 1];
  hex_encode(hex, data, len);
  printf("%s=%.*s\n", key, (int)(2 * len), hex);
}

/* ---- decode: printing ---- */

#define SMPP_CSTR(field, size, error) printf("%s=%s\n", #field, b->field);
#define SMPP_U8(field) printf("%s=%u\n", #field, b->field);
#define SMPP_SM(length, data) \
  printf("%s=%u\n", #length, b->length); \
  print_hex(#data, b->data, b->length);
#define SMPP_BODY(body, fields) \
  static void print_##body(const union smpp_body *u) \
  { \
    const struct smpp_##body *b = &u->body; \
    fields \
  }
#include "smpp_pdu.def"
#undef SMPP_CSTR
#undef SMPP_U8
#undef SMPP_SM

static void print_none(const union smpp_body *u)
{
}

static void print_body(const struct smpp_pdu *p)
{
  switch (p->command_id) {
#define SMPP_CMD(NAME, name, id, layout, bare_error) \
  case id: print_##layout(&p->body); break;
#include "smpp_pdu.def"
  }
}

/* Typed TLV printers; v points to the typed field. */
static void print_typed_U8(const char *key, const void *v) { printf("%s=%u\n", key, *(const uint8_t *)v); }
static void print_typed_U16(const char *key, const void *v) { printf("%s=%u\n", key, *(const uint16_t *)v); }
static void print_typed_U24(const char *key, const void *v) { printf("%s=%u\n", key, *(const uint32_t *)v); }
static void print_typed_CSTR(const char *key, const void *v) { printf("%s=%s\n", key, (const char *)v); }

static void print_typed_OCTETS(const char *key, const void *v)
{
  const struct smpp_octets *o = v;
  print_hex(key, o->data, o->len);
}

static void print_tlvs(const struct smpp_tlvs *t)
{
  for (unsigned i = 0; i < t->count; i++) {
    const struct smpp_tlv *e = &t->list[i];
    switch (e->typed ? e->typed - 1 : SMPP_TLV_TYPED_COUNT) {
#define SMPP_TLV(name, tag, kind, size) \
    case SMPP_TLVI_##name: print_typed_##kind("tlv." #name, &t->name); break;
#include "smpp_pdu.def"
    default: {
      char key[16];
      snprintf(key, sizeof key, "tlv.0x%04x", e->tag);
      print_hex(key, e->value, e->len);
    }
    }
  }
}

static int decode_stdin(void)
{
  static char line[2 * SMPP_MAX_PDU_DEFAULT + 256];
  static uint8_t buf[SMPP_MAX_PDU_DEFAULT];
  int count = 0;
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || line[0] == '#')
      continue;
    char *hex = strchr(line, '\t');
    if (hex) {
      *hex++ = '\0';
      printf("pdu=%s\n", line);
    } else {
      hex = line;
      printf("pdu=%d\n", count);
    }
    count++;
    size_t hex_len = strlen(hex);
    int len = hex_len / 2 <= sizeof buf ? hex_decode(buf, hex, hex_len) : -1;
    struct smpp_pdu p;
    int rc = len < 0 ? SMPP_ERR_CMD_LEN : smpp_pdu_decode(&p, buf, (size_t)len);
    if (rc != SMPP_OK) {
      printf("error=%s\nstatus=0x%08x\n\n", len < 0 ? "not hex" : smpp_strerror(rc), smpp_error_status(rc));
      continue;
    }
    const char *name = smpp_command_name(p.command_id);
    printf("command=%s\ncommand_id=0x%08x\ncommand_status=0x%08x\nsequence_number=%u\n", name,
           p.command_id, p.command_status, p.sequence_number);
    if (p.omit_body)
      printf("omit_body=1\n");
    print_body(&p);
    print_tlvs(&p.tlv);
    printf("\n");
  }
  return 0;
}

/* ---- encode: the fixed set ---- */

#define RECEIPT_TEXT \
  "id:5f3a9c01 sub:001 dlvrd:001 submit date:2408061430 done date:2408061431 " \
  "stat:DELIVRD err:000 text:Hello from emg"

static void build_bind_transceiver(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_BIND_TRANSCEIVER, 1);
  SMPP_CSTR_SET(p->body.bind.system_id, "emg");
  SMPP_CSTR_SET(p->body.bind.password, "secret");
  SMPP_CSTR_SET(p->body.bind.system_type, "EMG");
  p->body.bind.interface_version = SMPP_VERSION_34;
  p->body.bind.addr_ton = 1;
  p->body.bind.addr_npi = 1;
  SMPP_CSTR_SET(p->body.bind.address_range, "^47");
}

static void build_bind_transceiver_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_BIND_TRANSCEIVER_RESP, 1);
  SMPP_CSTR_SET(p->body.bind_resp.system_id, "EMGSMSC");
  p->tlv.sc_interface_version = SMPP_VERSION_34;
  p->tlv.present |= SMPP_TLV_BIT(sc_interface_version);
}

static void build_bind_receiver_resp_error(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_BIND_RECEIVER_RESP, 1);
  p->command_status = SMPP_ESME_RINVPASWD;
}

static void build_submit_sm(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_SUBMIT_SM, 2);
  struct smpp_sm *sm = &p->body.sm;
  SMPP_CSTR_SET(sm->service_type, "CMT");
  sm->source_addr_ton = 5;
  SMPP_CSTR_SET(sm->source_addr, "Gateway");
  sm->dest_addr_ton = 1;
  sm->dest_addr_npi = 1;
  SMPP_CSTR_SET(sm->destination_addr, "4790000001");
  sm->esm_class = SMPP_ESM_UDHI;
  sm->protocol_id = 0x41;
  sm->priority_flag = 1;
  SMPP_CSTR_SET(sm->validity_period, "000001000000000R");
  sm->registered_delivery = SMPP_REGDLV_RECEIPT_FINAL;
  sm->data_coding = 8;
  static const uint8_t text[] = "\x05\x00\x03\x2a\x02\x01\x00H\x00i";
  sm->short_message = text;
  sm->sm_length = sizeof text - 1;
  p->tlv.user_message_reference = 0x1234;
  p->tlv.sar_msg_ref_num = 42;
  p->tlv.sar_total_segments = 2;
  p->tlv.sar_segment_seqnum = 1;
  p->tlv.present |= SMPP_TLV_BIT(user_message_reference) | SMPP_TLV_BIT(sar_msg_ref_num) |
                    SMPP_TLV_BIT(sar_total_segments) | SMPP_TLV_BIT(sar_segment_seqnum);
}

static void build_submit_sm_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_SUBMIT_SM_RESP, 2);
  SMPP_CSTR_SET(p->body.sm_resp.message_id, "5f3a9c01");
}

static void build_submit_sm_resp_throttled(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_SUBMIT_SM_RESP, 3);
  p->command_status = SMPP_ESME_RTHROTTLED;
}

static void build_deliver_sm(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_DELIVER_SM, 7);
  struct smpp_sm *sm = &p->body.sm;
  sm->source_addr_ton = 1;
  sm->source_addr_npi = 1;
  SMPP_CSTR_SET(sm->source_addr, "4790000001");
  sm->dest_addr_ton = 5;
  SMPP_CSTR_SET(sm->destination_addr, "Gateway");
  sm->esm_class = SMPP_ESM_SMSC_RECEIPT;
  sm->short_message = (const uint8_t *)RECEIPT_TEXT;
  sm->sm_length = (uint8_t)strlen(RECEIPT_TEXT);
  SMPP_CSTR_SET(p->tlv.receipted_message_id, "5f3a9c01");
  p->tlv.message_state = 2;
  p->tlv.network_error_code = 0x030000;
  p->tlv.present |= SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state) |
                    SMPP_TLV_BIT(network_error_code);
}

static void build_deliver_sm_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_DELIVER_SM_RESP, 7);
}

static void build_data_sm(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_DATA_SM, 8);
  SMPP_CSTR_SET(p->body.data_sm.source_addr, "12345");
  p->body.data_sm.dest_addr_ton = 1;
  SMPP_CSTR_SET(p->body.data_sm.destination_addr, "4790000002");
  p->body.data_sm.data_coding = 4;
  p->tlv.message_payload = (struct smpp_octets){ (const uint8_t *)"payload", 7 };
  p->tlv.destination_port = 2948;
  p->tlv.present |= SMPP_TLV_BIT(message_payload) | SMPP_TLV_BIT(destination_port);
}

static void build_data_sm_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_DATA_SM_RESP, 8);
  SMPP_CSTR_SET(p->body.sm_resp.message_id, "d1");
}

static void build_query_sm(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_QUERY_SM, 9);
  SMPP_CSTR_SET(p->body.query_sm.message_id, "5f3a9c01");
  p->body.query_sm.source_addr_ton = 5;
  SMPP_CSTR_SET(p->body.query_sm.source_addr, "Gateway");
}

static void build_query_sm_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_QUERY_SM_RESP, 9);
  SMPP_CSTR_SET(p->body.query_sm_resp.message_id, "5f3a9c01");
  SMPP_CSTR_SET(p->body.query_sm_resp.final_date, "240806143100004+");
  p->body.query_sm_resp.message_state = 2;
}

static void build_cancel_sm(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_CANCEL_SM, 15);
  SMPP_CSTR_SET(p->body.cancel_sm.message_id, "5f3a9c02");
  p->body.cancel_sm.source_addr_ton = 5;
  SMPP_CSTR_SET(p->body.cancel_sm.source_addr, "Gateway");
  p->body.cancel_sm.dest_addr_ton = 1;
  p->body.cancel_sm.dest_addr_npi = 1;
  SMPP_CSTR_SET(p->body.cancel_sm.destination_addr, "4790000001");
}

static void build_cancel_sm_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_CANCEL_SM_RESP, 15);
  p->command_status = SMPP_ESME_RCANCELFAIL;
}

static void build_replace_sm(struct smpp_pdu *p)
{
  static const uint8_t text[] = "New text";
  smpp_pdu_init(p, SMPP_REPLACE_SM, 16);
  SMPP_CSTR_SET(p->body.replace_sm.message_id, "5f3a9c03");
  SMPP_CSTR_SET(p->body.replace_sm.source_addr, "Gateway");
  SMPP_CSTR_SET(p->body.replace_sm.validity_period, "000002000000000R");
  p->body.replace_sm.registered_delivery = 1;
  p->body.replace_sm.short_message = text;
  p->body.replace_sm.sm_length = sizeof text - 1;
}

static void build_replace_sm_resp(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_REPLACE_SM_RESP, 16);
}

static void build_outbind(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_OUTBIND, 10);
  SMPP_CSTR_SET(p->body.outbind.system_id, "EMGSMSC");
  SMPP_CSTR_SET(p->body.outbind.password, "pw");
}

static void build_alert_notification(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_ALERT_NOTIFICATION, 11);
  p->body.alert_notification.source_addr_ton = 1;
  SMPP_CSTR_SET(p->body.alert_notification.source_addr, "4790000003");
  SMPP_CSTR_SET(p->body.alert_notification.esme_addr, "emg");
}

static void build_enquire_link(struct smpp_pdu *p) { smpp_pdu_init(p, SMPP_ENQUIRE_LINK, 12); }
static void build_enquire_link_resp(struct smpp_pdu *p) { smpp_pdu_init(p, SMPP_ENQUIRE_LINK_RESP, 12); }
static void build_unbind(struct smpp_pdu *p) { smpp_pdu_init(p, SMPP_UNBIND, 13); }
static void build_unbind_resp(struct smpp_pdu *p) { smpp_pdu_init(p, SMPP_UNBIND_RESP, 13); }

static void build_generic_nack(struct smpp_pdu *p)
{
  smpp_pdu_init(p, SMPP_GENERIC_NACK, 14);
  p->command_status = SMPP_ESME_RINVCMDID;
}

static const struct {
  const char *name;
  void (*build)(struct smpp_pdu *);
} fixed[] = {
#define PDU(name) { #name, build_##name }
  PDU(bind_transceiver), PDU(bind_transceiver_resp), PDU(bind_receiver_resp_error),
  PDU(submit_sm), PDU(submit_sm_resp), PDU(submit_sm_resp_throttled),
  PDU(deliver_sm), PDU(deliver_sm_resp), PDU(data_sm), PDU(data_sm_resp),
  PDU(query_sm), PDU(query_sm_resp), PDU(cancel_sm), PDU(cancel_sm_resp), PDU(replace_sm),
  PDU(replace_sm_resp), PDU(outbind), PDU(alert_notification),
  PDU(enquire_link), PDU(enquire_link_resp), PDU(unbind), PDU(unbind_resp), PDU(generic_nack),
#undef PDU
};

static int encode_fixed(void)
{
  static uint8_t buf[1024];
  static char hex[2 * sizeof buf + 1];
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    struct smpp_pdu p;
    fixed[i].build(&p);
    int n = smpp_pdu_encode(&p, buf, sizeof buf);
    if (n < 0) {
      fprintf(stderr, "emg_smpp_cli: encoding %s: %s\n", fixed[i].name, smpp_strerror(n));
      return 1;
    }
    hex_encode(hex, buf, (size_t)n);
    printf("%s\t%.*s\n", fixed[i].name, 2 * n, hex);
  }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "encode") == 0)
    return encode_fixed();
  if (argc == 2 && strcmp(argv[1], "decode") == 0)
    return decode_stdin();
  fprintf(stderr, "usage: emg_smpp_cli encode | decode < hex-pdus\n");
  return 2;
}
