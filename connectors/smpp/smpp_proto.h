/* smpp_proto.h - what the SMPP adapter (smpp_proto_ops, declared in
 * proto.h) offers beyond the ops: the command_status <-> neutral status
 * mapping and SMPP time strings, for the tools and the tests.
 *
 * The adapter's conventions (framing errors, raw_status in requests, OTHER,
 * relative times, the lifetime of views) are at the top of smpp_proto.c.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SMPP_PROTO_H
#define EMG_SMPP_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include "proto.h"

/* An SMPP time without its NUL: YYMMDDhhmmsstnnp. */
#define SMPP_TIME_LEN 16

/* The neutral outcome of a command_status: ESME_RTHROTTLED -> THROTTLED,
 * RMSGQFUL -> QUEUE_FULL, RSYSERR and RX_T_APPN -> TEMPORARY, RINVPASWD,
 * RINVSYSID and RBINDFAIL -> AUTH, RINVBNDSTS -> BIND_STATE, RALYBND ->
 * ALREADY_BOUND, RINVSRCADR and RINVDSTADR -> ADDRESS, RINVMSGLEN ->
 * TOO_LONG, RINVCMDID -> UNSUPPORTED, RINVCMDLEN -> CMD_LEN, any other
 * code (vendor ones too) -> PERMANENT. */
enum proto_status smpp_proto_status(uint32_t command_status);

/* The command_status that answers with status in a response of op:
 * raw_status itself when it is a command_status (non-zero, bit 31 clear)
 * that means status, so specific and vendor codes pass through a gateway;
 * otherwise the code for status. Where SMPP has codes per command, the
 * failures follow op: TEMPORARY is ESME_RX_T_APPN in deliver_sm_resp (the
 * ESME's "retry later"), else RSYSERR; PERMANENT, and SYNTAX and CHECKSUM,
 * which SMPP has no code for, are RX_P_APPN in deliver_sm_resp, RSUBMITFAIL
 * in submit_sm_resp, else RUNKNOWNERR. AUTH is RBINDFAIL (it does not tell
 * which of system_id and password was wrong), ADDRESS is RINVDSTADR. */
uint32_t smpp_proto_command_status(enum proto_op op, enum proto_status status,
                                   uint32_t raw_status);

/* Reads schedule_delivery_time or validity_period (s NUL-terminated: empty,
 * or 16 characters). *t becomes 0 for the empty string, Unix seconds for an
 * absolute time (tenths dropped, its quarter-hour offset from UTC applied),
 * and minus the seconds of a relative time ("YYMMDDhhmmss000R", years of 365
 * days and months of 30; zero is 0, i.e. none). Two-digit years are
 * 1970-2069. Returns 0, or -1 for a malformed time or a date that does not
 * exist (*t untouched). */
int smpp_time_parse(const char *s, int64_t *t);

/* The reverse: writes "" for 0, "YYMMDDhhmmss000+" in UTC for t > 0, and
 * "YYMMDDhhmmss000R" for -t seconds when t < 0, NUL-terminated into dst.
 * Returns the length (0 or SMPP_TIME_LEN), or -1 when cap is below
 * SMPP_TIME_LEN + 1 or the time has no SMPP form (after 2069, relative
 * beyond 99 years). */
int smpp_time_format(char *dst, size_t cap, int64_t t);

#endif
