/* tool_util.h - what emgload and emgsink share besides the runtime: option
 * values, signals into the event loop, status lines and text for records.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_TOOL_UTIL_H
#define EMG_TOOL_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include "evloop.h"
#include "msg.h"

/* Exit codes shared by the tools. */
enum tool_exit {
  TOOL_EXIT_OK = 0,
  TOOL_EXIT_FAILED = 1,      /* the run ended with refusals, losses or missing receipts */
  TOOL_EXIT_SETUP = 2,       /* could not listen, connect, open a file */
  TOOL_EXIT_USAGE = 5        /* bad argument */
};

/* Parses "MIN-MAX" (or a single "N") of non-negative integers into *min, *max.
 * Returns 0 or -1. */
int tool_parse_range(const char *text, uint64_t *min, uint64_t *max);

/* Parses a fraction 0..1 ("0.05"). Returns 0 or -1. */
int tool_parse_fraction(const char *text, double *out);

/* Parses a positive integer with an optional k/M suffix ("1M" = 1000000). */
int tool_parse_count(const char *text, uint64_t *out);

/* An address pattern "PREFIX:LENGTH": the prefix followed by random digits up
 * to LENGTH characters in all. The prefix is digits, a '+' allowed first
 * (written as it is, for clients that send international numbers so).
 * Returns 0 or -1. */
struct tool_addr_pattern {
  char prefix[MSG_ADDR_LEN];
  unsigned length;
};
int tool_parse_addr_pattern(const char *text, struct tool_addr_pattern *p);
void tool_addr_generate(const struct tool_addr_pattern *p, uint64_t *rng, char *out);

/* xorshift64*: fast, good enough for load patterns and delays. */
uint64_t tool_rand(uint64_t *state);
/* Uniform in [0, 1). */
double tool_rand_unit(uint64_t *state);

/* SIGINT and SIGTERM (and SIGHUP when wanted) arrive in the loop through a
 * signalfd: fn runs in the loop's thread with the signal number. Returns 0 or -1. */
int tool_signals(struct evloop *loop, void (*fn)(int signo, void *arg), void *arg);

/* The message payload as UTF-8 for records and checks: GSM7 and UCS2 text
 * converted, 8-bit data as hex. Returns bytes written (NUL-terminated, tabs
 * and newlines replaced by spaces so a record stays one line). */
size_t tool_payload_utf8(const struct msg *m, char *out, size_t cap);

/* --tls and its files, as emgload and emgsink take them (long options
 * TOOL_OPT_TLS.. in their getopt tables, parsed by tool_tls_option). */
struct tool_tls {
  bool on;
  const char *ca;       /* emgload: CAs the server must chain to (default the system's);
                         * emgsink: require client certificates from these */
  const char *cert;     /* emgsink: its certificate (required); emgload: a client certificate */
  const char *key;      /* cert's key; default: in cert's file */
};
enum { TOOL_OPT_TLS = 0x100, TOOL_OPT_CA, TOOL_OPT_CERT, TOOL_OPT_KEY };
#define TOOL_TLS_LONGOPTS \
  { "tls", no_argument, 0, TOOL_OPT_TLS }, { "ca", required_argument, 0, TOOL_OPT_CA }, \
  { "cert", required_argument, 0, TOOL_OPT_CERT }, { "key", required_argument, 0, TOOL_OPT_KEY }
/* Takes option ch (with its value) when it is one of them; false otherwise. */
bool tool_tls_option(struct tool_tls *t, int ch, const char *value);
/* The context t asks for (server: emgsink's side), NULL without --tls or
 * on failure (*failed set, the reason on stderr after the tool's name). */
struct tls_ctx *tool_tls_ctx(const struct tool_tls *t, bool server, const char *tool, bool *failed);

/* Whether stderr is a terminal (live status lines use \r there, a line each second elsewhere). */
bool tool_stderr_tty(void);

#endif
