/* cimd2_proto.h - the CIMD2 adapter (cimd2_proto_ops, declared in proto.h):
 * its error-code mapping. Its conventions are set out at the top of
 * cimd2_proto.c, the protocol in doc/cimd2.md.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CIMD2_PROTO_H
#define EMG_CIMD2_PROTO_H

#include "proto.h"

/* The error code (900) a response carries for status s (doc/cimd2.md 8.5):
 * THROTTLED and QUEUE_FULL 10, TEMPORARY 6, the AUTH kinds 100,
 * ALREADY_BOUND 102, BIND_STATE and UNSUPPORTED 1, SYNTAX, CMD_LEN and
 * CHECKSUM 2, ADDRESS 300, SOURCE 306, TOO_LONG 302, NO_MESSAGE 7, any
 * other 9. */
unsigned cimd2_proto_error(enum proto_status s);

/* The status of an error code (doc/cimd2.md 5.4): 0 PROTO_OK, a code it
 * does not know PROTO_E_PERMANENT. */
enum proto_status cimd2_proto_status(unsigned code);

#endif
