#!/usr/bin/env python3
"""smpp_submit.py HOST:PORT USER PASSWORD LENGTH: binds as a transmitter and
submits one message of LENGTH 'A's (GSM default alphabet) in a
message_payload TLV; prints the submit_sm_resp's command_status in hex."""
import socket
import struct
import sys


def pdu(command_id, seq, body):
    return struct.pack(">IIII", 16 + len(body), command_id, 0, seq) + body


def read_pdu(sock):
    head = b""
    while len(head) < 16:
        chunk = sock.recv(16 - len(head))
        if not chunk:
            raise SystemExit("connection closed")
        head += chunk
    length, command_id, status, seq = struct.unpack(">IIII", head)
    body = b""
    while len(body) < length - 16:
        chunk = sock.recv(length - 16 - len(body))
        if not chunk:
            raise SystemExit("connection closed")
        body += chunk
    return command_id, status


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    user, password, length = sys.argv[2].encode(), sys.argv[3].encode(), int(sys.argv[4])
    sock = socket.create_connection((host, int(port)), timeout=10)
    bind = user + b"\0" + password + b"\0" + b"\0" + bytes([0x34, 0, 0]) + b"\0"
    sock.sendall(pdu(0x00000002, 1, bind))
    command_id, status = read_pdu(sock)
    if command_id != 0x80000002 or status != 0:
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


main()
