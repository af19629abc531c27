#!/usr/bin/env python3
"""http_edge.py - raw-socket clients for http_edge.sh, each printing one line.

  framing PORT PATH AUTH KIND   KIND two-lengths or length-and-chunks: prints
                                "STATUS closed|open"
  chunked PORT PATH AUTH MIB    streams MIB MiB of chunks: prints
                                "STATUS BYTES_SENT closed|open"
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


if __name__ == '__main__':
    what, port, path, auth, arg = sys.argv[1:6]
    if what == 'framing':
        framing(int(port), path, auth, arg)
    else:
        chunked(int(port), path, auth, int(arg))
