#!/usr/bin/env python3
"""doc_walk.py PAGE [--cwd DIR] [--timeout S] [--log FILE] - follows a walk-through
command by command, as an operator would, and fails where the document and the
machine disagree.

The walk-through's format (doc/first-day.md):
  - Only fenced blocks opened with ```console are run; other blocks are read, not run.
  - In them, a line starting with "# " is a command (the root prompt); a command line ending in
    a backslash goes on on the next line. The lines up to the next command or the block's end
    are what it prints (standard output and error together).
  - In those lines, "…" stands for any text within the line, and a line of just "…" for any
    number of lines (none included). Every other character must be there as written, and the
    lines must match the real output line for line: nothing more, nothing less (trailing
    blanks are not compared).
  - A last output line "[exit N]" says the command exits with status N; without one, it must
    exit with 0.

Every command runs in one bash, in order, so that a variable, the folder (cd) or a job started
with & carries on to the following ones as in an operator's shell. Each has --timeout seconds
(default 600); the first command whose output or exit status differs, or that runs over its
time, ends the walk: the script prints the document's line, the command, what was expected
and what came, and exits 1. With --log, every command and its real output is written there
(to re-capture the document from). Exit status: 0 when every command matched, 1 at the first
difference, 2 for a malformed document.
"""
# SPDX-License-Identifier: Apache-2.0
import argparse
import os
import re
import selectors
import signal
import subprocess
import sys
import time

ELLIPSIS = "\u2026"


class Step:
    def __init__(self, line, command, expected, status):
        self.line = line          # the command's line in the document (1-based)
        self.command = command
        self.expected = expected  # the output lines, as written
        self.status = status      # the exit status expected


def parse(path):
    steps = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    in_console = False
    in_other = False
    current = None
    for n, raw in enumerate(lines, 1):
        text = raw.rstrip()
        if text.startswith("```"):
            if in_console or in_other:
                in_console = in_other = False
                current = None
            elif text == "```console":
                in_console = True
            else:
                in_other = True
            continue
        if not in_console:
            continue
        if current is not None and current.command.endswith("\\") and not current.expected:
            current.command = current.command + "\n" + text
            continue
        if text.startswith("# ") or text == "#":
            current = Step(n, text[2:], [], 0)
            steps.append(current)
            continue
        if current is None:
            raise SyntaxError(f"{path}:{n}: output before any command in a console block")
        current.expected.append(text)
    if in_console or in_other:
        raise SyntaxError(f"{path}: a fenced block is not closed")
    for s in steps:
        if s.expected and re.fullmatch(r"\[exit \d+\]", s.expected[-1]):
            s.status = int(s.expected[-1][6:-1])
            s.expected = s.expected[:-1]
    return steps


def line_regex(pattern):
    parts = pattern.split(ELLIPSIS)
    return re.compile(".*".join(re.escape(p) for p in parts) + r"\Z", re.S)


def matches(expected, got):
    """Whether the real lines match the document's lines (see the format above)."""
    # Positions reachable in got after matching expected[:i]: a small dynamic program, so that a
    # line of just "…" may take any number of lines without backtracking blowing up.
    reach = {0}
    for pat in expected:
        nxt = set()
        if pat == ELLIPSIS:
            lo = min(reach) if reach else None
            if lo is not None:
                nxt = set(range(lo, len(got) + 1))
        else:
            rx = line_regex(pat)
            for j in reach:
                if j < len(got) and rx.match(got[j]):
                    nxt.add(j + 1)
        reach = nxt
        if not reach:
            return False
    return len(got) in reach


class Shell:
    """One bash, fed a command at a time; its exit status comes back on a pipe of its own."""

    def __init__(self, cwd):
        self.status_r, status_w = os.pipe()
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-c", f"exec 2>&1; "
             f"while IFS= read -r -d '' __cmd; do eval \"$__cmd\" </dev/null; "
             f"echo $? >&{status_w}; done"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, pass_fds=(status_w,),
            start_new_session=True)
        os.close(status_w)
        os.set_blocking(self.proc.stdout.fileno(), False)
        os.set_blocking(self.status_r, False)

    def run(self, command, timeout):
        """Returns (output, status); status None when the command ran over its time."""
        self.proc.stdin.write(command.encode() + b"\0")
        self.proc.stdin.flush()
        out = bytearray()
        status = bytearray()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        sel.register(self.status_r, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while b"\n" not in status:
            left = deadline - time.monotonic()
            if left <= 0:
                return out.decode(errors="replace"), None
            for key, _ in sel.select(left):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    if key.fd == self.status_r:
                        return out.decode(errors="replace"), -1
                    continue
                (status if key.fd == self.status_r else out).extend(chunk)
        # What the command wrote is in the pipe before bash writes its status: take the rest.
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            out.extend(chunk)
        sel.close()
        return out.decode(errors="replace"), int(status.decode().split("\n")[0])

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("doc")
    ap.add_argument("--cwd", default=".")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--log")
    args = ap.parse_args()
    try:
        steps = parse(args.doc)
    except SyntaxError as e:
        print(f"doc_walk: {e}", file=sys.stderr)
        return 2
    if not steps:
        print(f"doc_walk: {args.doc}: no ```console block with a command", file=sys.stderr)
        return 2
    log = open(args.log, "w", encoding="utf-8") if args.log else None
    shell = Shell(args.cwd)
    try:
        for i, s in enumerate(steps, 1):
            started = time.monotonic()
            out, status = shell.run(s.command, args.timeout)
            took = time.monotonic() - started
            got = out.split("\n")
            if got and got[-1] == "":
                got.pop()
            got = [g.rstrip() for g in got]
            if log:
                log.write(f"# {s.command}\n" + "".join(g + "\n" for g in got) +
                          (f"[exit {status}]\n" if status else "") + "\n")
                log.flush()
            where = f"{args.doc}:{s.line}"
            if status is None:
                print(f"not ok {i} - {where}: '{s.command}' ran over {args.timeout:g} s")
                print("  what it printed so far:\n" + "".join(f"    {g}\n" for g in got), end="")
                return 1
            if status != s.status or not matches(s.expected, got):
                print(f"not ok {i} - {where}: # {s.command}")
                print(f"  exit status {status}, expected {s.status}")
                print("  expected:\n" + "".join(f"    {e}\n" for e in s.expected), end="")
                print("  got:\n" + "".join(f"    {g}\n" for g in got), end="")
                return 1
            print(f"ok {i} - {where}: # {s.command.splitlines()[0]} ({took:.1f} s)")
        print(f"doc_walk: all {len(steps)} commands of {args.doc} printed what it shows")
        return 0
    finally:
        shell.close()
        if log:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
