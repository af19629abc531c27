#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""smpp_client.py - a minimal SMPP client for the tests, written apart from
emg's own codec:

  smpp_client.py submit HOST:PORT USER PASSWORD LENGTH
      binds as a transmitter and submits one message of LENGTH 'A's (GSM
      default alphabet) in a message_payload TLV; prints the submit_sm_resp's
      command_status in hex.
  smpp_client.py bind HOST:PORT USER PASSWORD COUNT [SOURCE_ADDRESS]
      COUNT binds, each on a connection of its own (from SOURCE_ADDRESS when
      given); prints "OK REFUSED SECONDS SLOWEST" (binds answered with status
      0, the others, the time they took in all, and the longest one took).
  smpp_client.py statuses HOST:PORT USER PASSWORD COUNT [SOURCE_ADDRESS]
      COUNT binds as transceiver, each on a connection of its own, all kept
      open until the last is answered; prints each bind_resp's
      command_status in hex, space-separated ("closed" when the connection
      went without an answer).
  smpp_client.py flood HOST:PORT USER PASSWORD SECONDS
      binds as a transceiver with a 4 KiB receive buffer, then sends
      enquire_links in 64 KiB batches for SECONDS without ever reading (a
      peer that does not read); prints, as JSON, the bytes sent and how long
      after the first enquire_link the connection was closed on it (null: not
      within the flood). SIGTERM ends it early, with the report.
  smpp_client.py hold HOST:PORT USER PASSWORD SECONDS
      binds as a transceiver and holds the session for up to SECONDS,
      answering what the gateway sends; prints "bound" once bound, then how
      the session ended: "unbind" (the gateway unbound it), "closed" (it
      closed the connection) or "timeout".
  smpp_client.py burst HOST:PORT USER PASSWORD COUNT
      binds as a transmitter, sends COUNT short submit_sm at once, then
      reads their answers; prints each command_status seen with its count,
      as "0x00000000:11 0x00000058:4", sorted (a sequence number answered
      twice or not at all exits non-zero)."""
import errno
import json
import select
import signal
import socket
import struct
import sys
import time


def pdu(command_id, seq, body):
    return struct.pack(">IIII", 16 + len(body), command_id, 0, seq) + body


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def read_pdu(sock):
    length, command_id, status, _ = struct.unpack(">IIII", read_exact(sock, 16))
    read_exact(sock, length - 16)
    return command_id, status


def connect(address, source=None):
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10,
                                    source_address=(source, 0) if source else None)


def bind_pdu(user, password, command_id):
    return pdu(command_id, 1, user + b"\0" + password + b"\0" + b"\0" + bytes([0x34, 0, 0]) + b"\0")


def bind(sock, user, password, command_id=0x00000002):
    sock.sendall(bind_pdu(user, password, command_id))
    answer, status = read_pdu(sock)
    if answer != command_id | 0x80000000:
        raise SystemExit("unexpected answer 0x%08x to a bind" % answer)
    return status


def submit_body(text):
    return (b"\0" + bytes([1, 1]) + b"4917000000001\0" + bytes([1, 1]) + b"4917100000001\0"
            + bytes([0, 0, 0]) + b"\0" + b"\0" + bytes([0, 0, 0, 0, len(text)]) + text)


def burst(address, user, password, count):
    sock = connect(address)
    sock.settimeout(60)
    status = bind(sock, user, password)
    if status != 0:
        raise SystemExit("bind refused: 0x%08x" % status)
    sock.sendall(b"".join(pdu(0x00000004, 2 + i, submit_body(b"burst")) for i in range(count)))
    seen, counts = set(), {}
    while len(seen) < count:
        length, command_id, status, seq = struct.unpack(">IIII", read_exact(sock, 16))
        read_exact(sock, length - 16)
        if command_id != 0x80000004 or seq in seen or not 2 <= seq < 2 + count:
            raise SystemExit("unexpected answer 0x%08x (sequence %d)" % (command_id, seq))
        seen.add(seq)
        counts[status] = counts.get(status, 0) + 1
    print(" ".join("0x%08x:%d" % (k, counts[k]) for k in sorted(counts)))
    sock.sendall(pdu(0x00000006, 1, b""))


def submit(address, user, password, length):
    sock = connect(address)
    status = bind(sock, user, password)
    if status != 0:
        raise SystemExit("bind refused: 0x%08x" % status)
    payload = b"A" * length
    body = (b"\0" + bytes([1, 1]) + b"4917000000001\0" + bytes([1, 1]) + b"4917100000001\0"
            + bytes([0, 0, 0]) + b"\0" + b"\0" + bytes([0, 0, 0, 0, 0])
            + struct.pack(">HH", 0x0424, len(payload)) + payload)
    sock.sendall(pdu(0x00000004, 2, body))
    command_id, status = read_pdu(sock)
    if command_id != 0x80000004:
        raise SystemExit("unexpected answer 0x%08x" % command_id)
    print("0x%08x" % status)
    sock.sendall(pdu(0x00000006, 3, b""))


def binds(address, user, password, count, source):
    ok = refused = 0
    start, slowest = time.monotonic(), 0.0
    for _ in range(count):
        began = time.monotonic()
        sock = connect(address, source)
        try:
            if bind(sock, user, password) == 0:
                ok += 1
            else:
                refused += 1
        except ConnectionError:
            refused += 1
        sock.close()
        slowest = max(slowest, time.monotonic() - began)
    print("%d %d %.3f %.3f" % (ok, refused, time.monotonic() - start, slowest))


def statuses(address, user, password, count, source):
    held, out = [], []
    for _ in range(count):
        sock = connect(address, source)
        held.append(sock)
        try:
            out.append("0x%02x" % bind(sock, user, password, 0x00000009))
        except ConnectionError:
            out.append("closed")
    print(" ".join(out))
    for sock in held:
        sock.close()


def flood(address, user, password, secs):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))   # the report still comes
    host, port = address.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, int(port)))
    s.sendall(bind_pdu(user, password, 0x00000009))
    time.sleep(0.3)        # bound by now; the answer is never read
    batch = b"".join(pdu(0x00000015, 2 + i, b"") for i in range(4096))
    view = memoryview(batch)
    s.setblocking(False)
    start = time.monotonic()
    sent, off, closed_after, error = 0, 0, None, None
    while not stop and time.monotonic() - start < secs:
        _, w, _ = select.select([], [s], [], 0.1)
        if not w:
            continue
        try:
            n = s.send(view[off:])
        except BlockingIOError:
            continue
        except OSError as e:
            closed_after, error = time.monotonic() - start, errno.errorcode.get(e.errno, str(e.errno))
            break
        sent += n
        off = (off + n) % len(batch)   # whole PDUs: the batch is sent round and round
    print(json.dumps({"sent": sent, "closed_after": closed_after, "error": error}))


def hold(address, user, password, secs):
    sock = connect(address)
    status = bind(sock, user, password, 0x00000009)
    if status != 0:
        print("refused 0x%02x" % status)
        return
    print("bound", flush=True)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        sock.settimeout(max(0.05, end - time.monotonic()))
        try:
            length, command_id, _, seq = struct.unpack(">IIII", read_exact(sock, 16))
            read_exact(sock, length - 16)
        except socket.timeout:
            break
        except ConnectionError:
            print("closed")
            return
        if command_id == 0x00000006:
            sock.sendall(struct.pack(">IIII", 16, 0x80000006, 0, seq))
            print("unbind")
            return
        if not command_id & 0x80000000:   # deliver_sm, enquire_link: answered
            sock.sendall(struct.pack(">IIII", 16 + (1 if command_id == 5 else 0), command_id | 0x80000000, 0, seq)
                         + (b"\0" if command_id == 5 else b""))
    print("timeout")


def main():
    mode, address, user, password, n = sys.argv[1:6]
    if mode == "submit":
        submit(address, user.encode(), password.encode(), int(n))
    elif mode == "bind":
        binds(address, user.encode(), password.encode(), int(n), sys.argv[6] if len(sys.argv) > 6 else None)
    elif mode == "statuses":
        statuses(address, user.encode(), password.encode(), int(n), sys.argv[6] if len(sys.argv) > 6 else None)
    elif mode == "flood":
        flood(address, user.encode(), password.encode(), float(n))
    elif mode == "burst":
        burst(address, user.encode(), password.encode(), int(n))
    elif mode == "hold":
        hold(address, user.encode(), password.encode(), float(n))
    else:
        raise SystemExit("usage: see the top of this file")


main()
