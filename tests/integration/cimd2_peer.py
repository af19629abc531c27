#!/usr/bin/env python3
"""cimd2_peer.py - a CIMD2 peer written from the specification, independent
of emg's codec, for the session tests (cimd2_session.sh).

  cimd2_peer.py probe HOST:PORT USER PASSWORD
      Talks to a CIMD2 server as a client would, and as one should not:
      prints one line per step, "NAME PACKET", PACKET being what the server
      answered (its TABs as '|', without STX, checksum and ETX; "EOF" when
      it closed the connection, "NONE" when nothing came).
  cimd2_peer.py smsc PORT SECONDS [nowindow]
      Plays an SMSC for one client: answers its login and its alives, and
      prints "login PACKET" and "alive PACKET" for each (as above), for
      SECONDS seconds. With nowindow, a login asking for a window (019) is
      refused with 900:105 (windowing disabled).
"""
import re
import socket
import sys
import time

STX, ETX = b"\x02", b"\x03"


def packet(body, checksum=True):
    """STX body [checksum] ETX; body is text with TABs."""
    raw = STX + body.encode("latin-1")
    if checksum:
        raw += b"%02X" % (sum(raw) & 0xFF)
    return raw + ETX


def shown(raw):
    """A packet for the log: TABs as '|', without STX, checksum, ETX."""
    text = raw.decode("latin-1").strip("\x02\x03")
    text = re.sub(r"\t[0-9A-F]{2}$", "\t", text)
    return text.replace("\t", "|")


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def send(self, raw):
        self.sock.sendall(raw)

    def read(self, timeout=10.0):
        """The next packet, "EOF" or "NONE" (none within timeout, a bound
        for a hang: answers take milliseconds)."""
        deadline = time.monotonic() + timeout
        while ETX not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return "NONE"
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                return "NONE"
            except ConnectionResetError:
                return "EOF"
            if not data:
                return "EOF"
            self.buf += data
        end = self.buf.index(ETX) + 1
        start = self.buf.rfind(STX, 0, end)
        raw, self.buf = self.buf[max(start, 0):end], self.buf[end:]
        # Verify the checksum it carries, as a peer must.
        m = re.match(rb"\x02(.*\t)([0-9A-F]{2})\x03$", raw, re.S)
        if m and int(m.group(2), 16) != (sum(b"\x02" + m.group(1)) & 0xFF):
            return "BADSUM " + shown(raw)
        return shown(raw)

    def close(self):
        self.sock.close()


def connect(addr):
    host, port = addr.rsplit(":", 1)
    return Conn(socket.create_connection((host, int(port)), timeout=5))


def probe(addr, user, password):
    out = []

    def step(name, conn, raw, timeout=10.0):
        conn.send(raw)
        out.append("%s %s" % (name, conn.read(timeout)))

    c = connect(addr)
    step("submit_before_login", c, packet("03:001\t021:4917012345\t033:hi\t"))
    c.close()

    c = connect(addr)
    step("wrong_password", c, packet("01:001\t010:%s\t011:%s-wrong\t" % (user, password)))
    out.append("after_wrong_password %s" % c.read(10.0))
    c.close()

    c = connect(addr)
    step("login", c, packet("01:001\t010:%s\t011:%s\t" % (user, password)))
    step("alive", c, packet("40:003\t"))
    bad = bytearray(packet("03:005\t021:4917012345\t033:hi\t"))
    bad[-2] = ord("0") if bad[-2] != ord("0") else ord("1")
    step("bad_checksum", c, bytes(bad))
    step("unknown_operation", c, packet("17:007\t"))
    step("enquire_status", c, packet("04:009\t021:4917012345\t060:261202115500\t"))
    step("bad_status_report_request", c, packet("03:011\t021:4917012345\t033:x\t056:x\t"))
    step("no_checksum_submit", c, packet("03:013\t021:4917012345\t023:12345\t033:Hello _Oa home\t056:14\t",
                                         checksum=False))
    step("submit", c, packet("03:015\t021:4917012345\t023:12345\t033:Hello again\t"))
    # The server's own alive, after its keep-alive time: answered.
    got = c.read(10.0)
    out.append("server_alive %s" % got)
    if got.startswith("40:"):
        c.send(packet("90:%s\t" % got[3:6]))
    step("logout", c, packet("02:017\t"))
    out.append("after_logout %s" % c.read(10.0))
    c.close()
    print("\n".join(out))


def smsc(port, seconds, nowindow=False):
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4)
    deadline = time.monotonic() + seconds
    c = None
    while time.monotonic() < deadline:
        if c is None:   # a connection that only checked the port is not the client
            lsock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                c = Conn(lsock.accept()[0])
            except socket.timeout:
                break
        got = c.read(deadline - time.monotonic())
        if got == "EOF":
            c.close()
            c = None
            continue
        if got == "NONE":
            break
        op, number = got[0:2], got[3:6]
        if op == "01":
            print("login " + got, flush=True)
            if nowindow and "|019:" in got:
                c.send(packet("51:%s\t900:105\t901:Windowing disabled\t" % number))
            else:
                c.send(packet("51:%s\t" % number))
        elif op == "40":
            print("alive " + got, flush=True)
            c.send(packet("90:%s\t" % number))
        elif op == "02":
            c.send(packet("52:%s\t" % number))
        else:
            print("other " + got, flush=True)
    if c:
        c.close()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "probe":
        probe(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "smsc":
        smsc(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:] == ["nowindow"])
    else:
        sys.exit(__doc__)
