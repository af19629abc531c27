/* tls_certs.h - certificates for the TLS tests (tls_certs.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMG_TEST_TLS_CERTS_H
#define EMG_TEST_TLS_CERTS_H

/* Makes, in a new temporary folder: ca.pem, other-ca.pem, server.pem (CN
 * localhost, names localhost and 127.0.0.1) with server.key, client.pem (CN
 * acme) with client.key, expired.pem and future.pem (server.key's), ca.key. */
void make_certs(void);
/* The path of one of them; the same string each time for a name. */
const char *file(const char *name);
/* Removes them and the folder. */
void remove_certs(void);

#endif
