/* codec_bench.c - operations per second of the protocol codecs on one core.
 *
 * Prints one line per operation with its rate and the target it must meet.
 * Usage: codec_bench [--seconds S] [--json]
 * It pins itself to one CPU, so the figures are per core.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cimd2_codec.h"
#include "cimd2_text.h"
#include "clock.h"
#include "smpp_pdu.h"
#include "smpp_receipt.h"
#include "ucp_codec.h"

/* 145 characters: the reference test's message length. */
static const char text145[] =
  "Dear customer, your parcel 4711 has been dispatched and will arrive tomorrow between "
  "08:00 and 12:00. Reply STOP to opt out. Thanks for ordering!";

static uint8_t smpp_frame[1024];
static int smpp_frame_len;
static uint8_t ucp_frame[1024];
static int ucp_frame_len;
static uint8_t cimd2_frame[1024];
static int cimd2_frame_len;
static struct cimd2_packet cimd2_template;
static char receipt_text[256];
static int receipt_len;
static volatile uint64_t sink;  /* keeps results observable to the optimiser */

static struct smpp_pdu submit_template;
static struct ucp_msg op51_template;

static void build_inputs(void)
{
  struct smpp_pdu *p = &submit_template;
  smpp_pdu_init(p, SMPP_SUBMIT_SM, 42);
  struct smpp_sm *sm = &p->body.sm;
  sm->source_addr_ton = 1;
  sm->source_addr_npi = 1;
  SMPP_CSTR_SET(sm->source_addr, "4912345678901");
  sm->dest_addr_ton = 1;
  sm->dest_addr_npi = 1;
  SMPP_CSTR_SET(sm->destination_addr, "4917612345678");
  sm->registered_delivery = SMPP_REGDLV_RECEIPT_FINAL;
  sm->sm_length = (uint8_t)(sizeof text145 - 1);
  sm->short_message = (const uint8_t *)text145;
  /* A couple of TLVs, as real traffic carries. */
  p->tlv.user_message_reference = 0x1234;
  p->tlv.present |= SMPP_TLV_BIT(user_message_reference);
  smpp_tlv_add(p, 0x1401, (const uint8_t *)"vendor", 6);
  smpp_frame_len = smpp_pdu_encode(p, smpp_frame, sizeof smpp_frame);

  /* The same submit in CIMD2: text in its printable spelling (145 GSM
   * characters, as the adapter writes them), a receipt asked for. */
  static char cimd2_text[3 * sizeof text145];
  int cimd2_text_len = cimd2_text_encode(cimd2_text, sizeof cimd2_text, (const uint8_t *)text145,
                                         sizeof text145 - 1);
  struct cimd2_packet *c = &cimd2_template;
  cimd2_packet_init(c, CIMD2_SUBMIT, 3);
  cimd2_put(c, CIMD2_P_DESTINATION, "4917612345678", 13);
  cimd2_put(c, CIMD2_P_ORIGINATOR, "4912345678901", 13);
  cimd2_put(c, CIMD2_P_TEXT, cimd2_text, (size_t)(cimd2_text_len > 0 ? cimd2_text_len : 0));
  cimd2_put(c, CIMD2_P_STATUS_REPORT_REQUEST, "62", 2);
  cimd2_frame_len = cimd2_encode(c, cimd2_frame, sizeof cimd2_frame);

  static char amsg[400];
  int amsg_len = ucp_amsg_from_utf8(amsg, sizeof amsg, text145, sizeof text145 - 1, 0);
  struct ucp_msg *m = &op51_template;
  ucp_msg_init(m, 2, 'O', 51);
  m->o5x.adc = UCP_STR("4917612345678");
  m->o5x.oadc = UCP_STR("4912345678901");
  m->o5x.nrq = UCP_STR("1");
  m->o5x.nt = UCP_STR("3");
  m->o5x.mt = UCP_STR("3");
  m->o5x.msg = (struct ucp_slice){ amsg, (size_t)(amsg_len > 0 ? amsg_len : 0) };
  ucp_frame_len = ucp_encode(m, ucp_frame, sizeof ucp_frame);

  struct smpp_receipt r = { 0 };
  r.present = SMPP_RCPT_ID | SMPP_RCPT_SUB | SMPP_RCPT_DLVRD | SMPP_RCPT_SUBMIT_DATE |
              SMPP_RCPT_DONE_DATE | SMPP_RCPT_STAT | SMPP_RCPT_ERR | SMPP_RCPT_TEXT;
  strcpy(r.id, "1087269843");
  r.sub = r.dlvrd = 1;
  strcpy(r.submit_date, "2611300535");
  strcpy(r.done_date, "2611300536");
  r.state = SMPP_STATE_DELIVERED;
  r.text = text145;
  r.text_len = 20;
  receipt_len = smpp_receipt_format(receipt_text, sizeof receipt_text, &r);

  if (smpp_frame_len <= 0 || ucp_frame_len <= 0 || amsg_len <= 0 || receipt_len <= 0 || cimd2_frame_len <= 0) {
    fprintf(stderr, "codec_bench: building the inputs failed (%d %d %d %d %d)\n", smpp_frame_len,
            ucp_frame_len, amsg_len, receipt_len, cimd2_frame_len);
    exit(1);
  }
}

/* Each operation runs `n` times and returns a value that depends on the work. */
typedef uint64_t (*bench_fn)(uint64_t n);

static uint64_t smpp_decode_op(uint64_t n)
{
  static struct smpp_pdu pdu;
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (smpp_split(smpp_frame, (size_t)smpp_frame_len, SMPP_MAX_PDU_DEFAULT) != smpp_frame_len ||
        smpp_pdu_decode(&pdu, smpp_frame, (size_t)smpp_frame_len) != SMPP_OK)
      abort();
    acc += pdu.body.sm.sm_length + pdu.sequence_number;
  }
  return acc;
}

static uint64_t smpp_encode_op(uint64_t n)
{
  static uint8_t out[1024];
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    submit_template.sequence_number = (uint32_t)i + 1;
    int len = smpp_pdu_encode(&submit_template, out, sizeof out);
    if (len <= 0)
      abort();
    acc += (uint64_t)len + out[15];
  }
  return acc;
}

static uint64_t smpp_roundtrip_op(uint64_t n)
{
  static struct smpp_pdu pdu;
  static uint8_t out[1024];
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (smpp_pdu_decode(&pdu, smpp_frame, (size_t)smpp_frame_len) != SMPP_OK)
      abort();
    pdu.sequence_number = (uint32_t)i + 1;
    int len = smpp_pdu_encode(&pdu, out, sizeof out);
    if (len != smpp_frame_len)
      abort();
    acc += out[15];
  }
  return acc;
}

static uint64_t ucp_decode_op(uint64_t n)
{
  static struct ucp_msg m;
  uint64_t acc = 0;
  size_t frame_len;
  for (uint64_t i = 0; i < n; i++) {
    if (ucp_split(ucp_frame, (size_t)ucp_frame_len, UCP_FRAME_MAX, &frame_len) != UCP_SPLIT_FRAME ||
        ucp_decode(ucp_frame, frame_len, &m) != 0)
      abort();
    acc += m.o5x.msg.len + (uint64_t)m.trn;
  }
  return acc;
}

static uint64_t ucp_encode_op(uint64_t n)
{
  static uint8_t out[1024];
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    op51_template.trn = (int)(i % 100);
    int len = ucp_encode(&op51_template, out, sizeof out);
    if (len <= 0)
      abort();
    acc += (uint64_t)len + out[2];
  }
  return acc;
}

static uint64_t cimd2_decode_op(uint64_t n)
{
  static struct cimd2_packet p;
  uint64_t acc = 0;
  size_t skip = 0;
  for (uint64_t i = 0; i < n; i++) {
    int len = cimd2_split(cimd2_frame, (size_t)cimd2_frame_len, CIMD2_FRAME_MAX, &skip);
    if (len <= 0 || cimd2_decode(cimd2_frame, (size_t)len, &p) != 0)
      abort();
    acc += p.n_params + p.number;
  }
  return acc;
}

static uint64_t cimd2_encode_op(uint64_t n)
{
  static uint8_t out[1024];
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    cimd2_template.number = (uint16_t)(2 * (i % 128) + 1);
    int len = cimd2_encode(&cimd2_template, out, sizeof out);
    if (len <= 0)
      abort();
    acc += (uint64_t)len + out[5];
  }
  return acc;
}

static uint64_t receipt_parse_op(uint64_t n)
{
  struct smpp_receipt r;
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (smpp_receipt_parse(&r, receipt_text, (size_t)receipt_len) < 0)
      abort();
    acc += r.state + r.text_len;
  }
  return acc;
}

struct bench {
  const char *name;
  bench_fn fn;
  double target;  /* ops/s this machine must reach; 0 = no target */
};

static const struct bench benches[] = {
  { "smpp submit_sm decode", smpp_decode_op, 10e6 },
  { "smpp submit_sm encode", smpp_encode_op, 10e6 },
  { "smpp submit_sm round trip", smpp_roundtrip_op, 5e6 },
  { "ucp op 51 decode", ucp_decode_op, 3e6 },
  { "ucp op 51 encode", ucp_encode_op, 0 },
  { "cimd2 submit decode", cimd2_decode_op, 0 },
  { "cimd2 submit encode", cimd2_encode_op, 0 },
  { "smpp receipt parse", receipt_parse_op, 0 },
};

/* Runs fn in growing batches until `seconds` have passed; the best of
 * three such runs is reported, as other processes may steal the core. */
static double measure(bench_fn fn, double seconds)
{
  double best = 0;
  for (int run = 0; run < 3; run++) {
    uint64_t done = 0, batch = 1000, start = clock_now_ns(), elapsed;
    do {
      sink += fn(batch);
      done += batch;
      elapsed = clock_now_ns() - start;
      if (elapsed < 10000000)
        batch *= 2;
    } while (elapsed < (uint64_t)(seconds / 3 * 1e9));
    double rate = (double)done / ((double)elapsed / 1e9);
    if (rate > best)
      best = rate;
  }
  return best;
}

int main(int argc, char **argv)
{
  double seconds = 3;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else {
      fprintf(stderr, "usage: codec_bench [--seconds S] [--json]\n");
      return 5;
    }
  }
  if (seconds <= 0)
    seconds = 3;

  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);

  build_inputs();
  int missed = 0;
  if (json)
    printf("{");
  else
    printf("emg codec benchmark: one core, %.1f s per operation, best of 3\n"
           "inputs: submit_sm %d bytes, op 51 %d bytes, CIMD2 submit %d bytes (145-character text), receipt %d bytes\n\n"
           "%-28s %14s %14s  %s\n",
           seconds, smpp_frame_len, ucp_frame_len, cimd2_frame_len, receipt_len, "operation", "ops/s", "target", "");
  for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
    double rate = measure(benches[i].fn, seconds);
    int ok = benches[i].target == 0 || rate >= benches[i].target;
    missed += !ok;
    if (json) {
      printf("%s\"%s\":%.0f", i ? "," : "", benches[i].name, rate);
    } else {
      char target[32] = "-";
      if (benches[i].target)
        snprintf(target, sizeof target, "%.0f", benches[i].target);
      printf("%-28s %14.0f %14s  %s\n", benches[i].name, rate, target,
             benches[i].target ? (ok ? "met" : "MISSED") : "");
    }
    fflush(stdout);
  }
  if (json)
    printf("}\n");
  else
    printf("\n%s\n", missed ? "some targets missed" : "all targets met");
  return 0;
}
