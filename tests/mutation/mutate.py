#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mutate.py - reads the mutation list and applies its mutations.

  mutate.py list  LIST                 name, file, tests, bug: one mutation a line, tab-separated
  mutate.py check LIST ROOT [NAME...]  each one (or each named) applies: its original text
                                       occurs exactly once in ROOT/file
  mutate.py apply LIST ROOT NAME       replaces the original text with the replacement, in place
  mutate.py show  LIST NAME            prints the mutation as a diff-like text

LIST is one file, or a folder whose *.list files are read in name order as
one list (tests/mutation/list: a file per area of the code); a name must be
unique across them.

Exit status 0, or 1 with the reasons on stderr (a malformed list, an
unknown name, a mutation that does not apply)."""
import os
import re
import sys

KEYS = ("file", "tests", "bug")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
TEST_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class ListError(Exception):
    pass


def parse(path):
    """The mutations of the list at path (a file, or a folder of *.list
    files), in order: dicts with name, file, tests (a list of names), bug,
    original, replacement, line, list."""
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".list"))
        if not files:
            raise ListError("%s: no *.list files" % path)
        out, where_defined = [], {}
        for f in files:
            for m in parse_file(f):
                if m["name"] in where_defined:
                    raise ListError("%s:%d: mutation '%s' is defined in %s already" %
                                    (f, m["line"] + 1, m["name"], where_defined[m["name"]]))
                where_defined[m["name"]] = f
                out.append(m)
        return out
    return parse_file(path)


def parse_file(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, seen = [], set()
    cur, section, text = None, None, []

    def where(i):
        return "%s:%d" % (path, i + 1)

    def close_text(i):
        if section == "original":
            cur["original"] = "\n".join(text)
        elif section == "replacement":
            cur["replacement"] = "\n".join(text)

    for i, line in enumerate(lines):
        if section in ("original", "replacement"):
            if line == "--- replacement" and section == "original":
                close_text(i)
                section, text = "replacement", []
            elif line == "--- end" and section == "replacement":
                close_text(i)
                section, text = None, []
                for key in KEYS:
                    if not cur.get(key):
                        raise ListError("%s: [%s] has no %s:" % (where(cur["line"]), cur["name"], key))
                if cur["original"] == "":
                    raise ListError("%s: [%s]: the original text is empty" % (where(cur["line"]), cur["name"]))
                if cur["original"] == cur["replacement"]:
                    raise ListError("%s: [%s]: the replacement is the original" % (where(cur["line"]), cur["name"]))
                out.append(cur)
                cur = None
            elif line.startswith("--- "):
                raise ListError("%s: unexpected '%s' (in the %s text of [%s])" % (where(i), line, section, cur["name"]))
            else:
                text.append(line)
            continue
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and cur is None):
            continue
        m = re.match(r"^\[(.*)\]$", stripped)
        if m:
            if cur is not None:
                raise ListError("%s: [%s] has no '--- original' ... '--- end'" % (where(cur["line"]), cur["name"]))
            name = m.group(1)
            if not NAME_RE.match(name):
                raise ListError("%s: bad mutation name '%s'" % (where(i), name))
            if name in seen:
                raise ListError("%s: mutation '%s' defined twice" % (where(i), name))
            seen.add(name)
            cur = {"name": name, "line": i, "list": path}
            continue
        if cur is None:
            raise ListError("%s: text outside a mutation: %s" % (where(i), line))
        if line == "--- original":
            section, text = "original", []
            continue
        m = re.match(r"^(\w+):\s*(.*?)\s*$", line)
        if not m or m.group(1) not in KEYS:
            raise ListError("%s: [%s]: expected one of %s, or '--- original'" %
                            (where(i), cur["name"], ", ".join(k + ":" for k in KEYS)))
        key, value = m.group(1), m.group(2)
        if key in cur:
            raise ListError("%s: [%s]: %s: given twice" % (where(i), cur["name"], key))
        if key == "tests":
            names = [t.strip() for t in value.split("|")]
            if not all(TEST_RE.match(t) for t in names):
                raise ListError("%s: [%s]: tests: must be test names separated by '|'" % (where(i), cur["name"]))
            value = names
        if key == "file" and (value.startswith("/") or ".." in value.split("/")):
            raise ListError("%s: [%s]: file: must be a path inside the tree" % (where(i), cur["name"]))
        cur[key] = value
    if cur is not None or section is not None:
        raise ListError("%s: the list ends inside [%s]" % (path, cur["name"] if cur else "?"))
    return out


def select(muts, names):
    if not names:
        return muts
    by_name = {m["name"]: m for m in muts}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ListError("no such mutation: %s (known: %s)" % (", ".join(unknown), ", ".join(by_name)))
    return [by_name[n] for n in names]


def problem(root, m):
    """Why m does not apply to the tree at root, or None."""
    path = os.path.join(root, m["file"])
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except OSError as e:
        return "[%s] %s: %s" % (m["name"], m["file"], e.strerror)
    n = text.count(m["original"])
    if n != 1:
        return "[%s] %s: the original text occurs %d times (must be exactly once):\n%s" % (
            m["name"], m["file"], n, indent(m["original"]))
    return None


def indent(text):
    return "\n".join("    | " + line for line in text.split("\n"))


def main(argv):
    if len(argv) < 3 or argv[1] not in ("list", "check", "apply", "show"):
        sys.stderr.write(__doc__)
        return 2
    cmd, listfile = argv[1], argv[2]
    try:
        muts = parse(listfile)
        if cmd == "list":
            for m in select(muts, argv[3:]):
                print("\t".join((m["name"], m["file"], "|".join(m["tests"]), m["bug"])))
        elif cmd == "show":
            for m in select(muts, argv[3:]):
                print("[%s] %s (tests: %s)\n  %s" % (m["name"], m["file"], "|".join(m["tests"]), m["bug"]))
                print("\n".join("  - " + l for l in m["original"].split("\n")))
                if m["replacement"]:
                    print("\n".join("  + " + l for l in m["replacement"].split("\n")))
                print()
        elif cmd == "check":
            if len(argv) < 4:
                raise ListError("check: no tree given")
            bad = [p for p in (problem(argv[3], m) for m in select(muts, argv[4:])) if p]
            for p in bad:
                sys.stderr.write("mutation does not apply: %s\n" % p)
            return 1 if bad else 0
        elif cmd == "apply":
            if len(argv) != 5:
                raise ListError("apply: give the tree and one name")
            m = select(muts, [argv[4]])[0]
            p = problem(argv[3], m)
            if p:
                sys.stderr.write("mutation does not apply: %s\n" % p)
                return 1
            path = os.path.join(argv[3], m["file"])
            with open(path, encoding="utf-8", newline="") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text.replace(m["original"], m["replacement"], 1))
    except ListError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
