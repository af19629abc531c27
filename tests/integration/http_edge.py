#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""http_edge.py - raw-socket clients for http_edge.sh, each printing one line.

  framing PORT PATH AUTH KIND   KIND two-lengths or length-and-chunks: prints
                                "STATUS closed|open"
  chunked PORT PATH AUTH MIB    streams MIB MiB of chunks: prints
                                "STATUS BYTES_SENT closed|open"
  length PORT PATH AUTH MIB     announces MIB MiB by Content-Length and
                                sends them on whatever the answer, until a
                                send fails: prints "STATUS BYTES_SENT
                                reset|taken"
  closing PORT PATH AUTH MIB    a GET with "Connection: close", then MIB MiB
                                more: prints as length does
  after PORT PATH AUTH -        announces 100 MiB, sends 1 KiB; after the
                                answer, a byte each 50 ms (10): prints
                                "STATUS reset|open"
  per-ip PORT PATH AUTH N       holds N connections from 127.0.0.1, then
                                asks PATH (GET) from 127.0.0.2 and from
                                127.0.0.1: prints "OPEN CLOSED STATUS2 STATUS1"
  trickle PORT PATH AUTH SECS   sends a request's head one byte a second:
                                prints "closed|open SECONDS"
"""
import select
import socket
import sys
import time

BODY = b'{"from":"4912345","to":"4915550001","text":"edge"}'


def head(path, auth, extra):
    return (b'POST ' + path.encode() + b' HTTP/1.1\r\nHost: edge\r\nAuthorization: ' + auth.encode() +
            b'\r\nContent-Type: application/json\r\n' + extra + b'\r\n')


def status_of(answer):
    if answer.startswith(b'HTTP/1.'):
        return answer.split(b' ', 2)[1].decode()
    return '-'


def read_rest(s, answer, wait):
    """Reads until the server closes or wait seconds pass; (answer, closed)."""
    s.setblocking(True)
    s.settimeout(wait)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return answer, True
            answer += d
    except ConnectionResetError:
        return answer, True
    except socket.timeout:
        return answer, False


def framing(port, path, auth, kind):
    if kind == 'two-lengths':
        extra = b'Content-Length: %d\r\nContent-Length: 5\r\n' % len(BODY)
        body = BODY
    else:
        extra = b'Content-Length: %d\r\nTransfer-Encoding: chunked\r\n' % len(BODY)
        body = b'%x\r\n' % len(BODY) + BODY + b'\r\n0\r\n\r\n'
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(head(path, auth, extra) + body)
    answer, closed = read_rest(s, b'', 5)
    print(status_of(answer), 'closed' if closed else 'open')


def chunked(port, path, auth, mib):
    s = socket.socket()
    # A small send buffer, so that what counts as sent is near what the
    # server took in.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 128 * 1024)
    s.connect(('127.0.0.1', port))
    s.sendall(head(path, auth, b'Transfer-Encoding: chunked\r\n'))
    chunk = b'x' * 65536
    frame = b'%x\r\n' % len(chunk) + chunk + b'\r\n'

    def frames():
        for _ in range(mib * 16):
            yield frame
        yield b'0\r\n\r\n'

    s.setblocking(False)
    sent, answer, closed = 0, b'', False
    deadline = time.time() + 120
    for f in frames():
        view = memoryview(f)
        while view and not answer and not closed and time.time() < deadline:
            readable, writable, _ = select.select([s], [s], [], 1)
            if readable:
                try:
                    d = s.recv(65536)
                except ConnectionResetError:
                    d = b''
                closed = not d
                answer += d
            elif writable:
                try:
                    n = s.send(view)
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                sent += n
                view = view[n:]
        if answer or closed:
            break
    if not closed:
        answer, closed = read_rest(s, answer, 10)
    print(status_of(answer), sent, 'closed' if closed else 'open')


def length_then_body(port, path, auth, mib, closing=False):
    """Announces MIB MiB by Content-Length (closing: sends a whole GET with
    "Connection: close" instead), then sends MIB MiB on whatever the answer,
    as fast as the server takes them, until a send fails (the server
    closed: a reset) or all are sent: prints "STATUS BYTES_SENT
    reset|taken". An end of our input (the server's FIN) alone does not stop
    it: a half-closed server may still be reading."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 128 * 1024)
    s.connect(('127.0.0.1', port))
    if closing:
        s.sendall(b'GET ' + path.encode() + b' HTTP/1.1\r\nHost: edge\r\nAuthorization: ' + auth.encode() +
                  b'\r\nConnection: close\r\n\r\n')
    else:
        s.sendall(head(path, auth, b'Content-Length: %d\r\n' % (mib * 1024 * 1024)))
    chunk = memoryview(b'x' * 65536)
    s.setblocking(False)
    sent, answer, eof, reset, total = 0, b'', False, False, mib * 1024 * 1024
    deadline = time.time() + 60
    while not reset and sent < total and time.time() < deadline:
        readable, writable, _ = select.select([] if eof else [s], [s], [], 1)
        if readable:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                d, reset = b'', True
            eof = not d
            answer += d
        if writable and not reset:
            try:
                sent += s.send(chunk[:min(len(chunk), total - sent)])
            except (BrokenPipeError, ConnectionResetError):
                reset = True
    print(status_of(answer), sent, 'reset' if reset else 'taken')


def after_refusal(port, path, auth):
    """Announces 100 MiB by Content-Length and sends 1 KiB of it; once the
    answer and its end are in, sends a byte each 50 ms, 10 times: prints
    "STATUS reset|open". A server that closed with its answer resets the
    first; one that reads on for a while (a lingering close) takes them."""
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(head(path, auth, b'Content-Length: %d\r\n' % (100 * 1024 * 1024)) + b'x' * 1024)
    answer, _ = read_rest(s, b'', 10)
    state = 'open'
    for _ in range(10):
        try:
            s.send(b'x')
            time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            state = 'reset'
            break
    print(status_of(answer), state)


def get(port, path, auth, source):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    try:
        s.connect(('127.0.0.1', port))
        s.sendall(b'GET ' + path.encode() + b' HTTP/1.1\r\nHost: edge\r\nAuthorization: ' +
                  auth.encode() + b'\r\nConnection: close\r\n\r\n')
        answer, _ = read_rest(s, b'', 5)
    except OSError:
        answer = b''
    s.close()
    return status_of(answer)


def is_open(s):
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b''
    except BlockingIOError:
        return True
    except OSError:
        return False


def per_ip(port, path, auth, n):
    held = []
    for _ in range(n):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        s.connect(('127.0.0.1', port))
        held.append(s)
    # Closed at once, which a busy machine makes a moment: counted once the
    # count has held for a second (bounded, 15 s).
    time.sleep(1)
    still, end = sum(1 for s in held if is_open(s)), time.time() + 15
    while time.time() < end:
        time.sleep(1)
        now = sum(1 for s in held if is_open(s))
        if now == still:
            break
        still = now
    other = get(port, path, auth, '127.0.0.2')
    same = get(port, path, auth, '127.0.0.1')
    print(still, n - still, other, same)
    for s in held:
        s.close()


def trickle(port, path, auth, secs):
    s = socket.create_connection(('127.0.0.1', port))
    request = b'GET ' + path.encode() + b' HTTP/1.1\r\nHost: edge\r\nX-Slow: ' + b'a' * 4096
    t0 = time.time()
    for i in range(secs):
        try:
            s.send(request[i:i + 1])
        except OSError:
            break
        time.sleep(1)
        if not is_open(s):
            break
    else:
        print('open', round(time.time() - t0))
        return
    print('closed', round(time.time() - t0))


if __name__ == '__main__':
    what, port, path, auth, arg = sys.argv[1:6]
    if what == 'framing':
        framing(int(port), path, auth, arg)
    elif what == 'chunked':
        chunked(int(port), path, auth, int(arg))
    elif what == 'length':
        length_then_body(int(port), path, auth, int(arg))
    elif what == 'closing':
        length_then_body(int(port), path, auth, int(arg), closing=True)
    elif what == 'after':
        after_refusal(int(port), path, auth)
    elif what == 'per-ip':
        per_ip(int(port), path, auth, int(arg))
    else:
        trickle(int(port), path, auth, int(arg))
