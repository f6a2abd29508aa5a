#!/usr/bin/env python3
"""Checks that every reference to a section of a Markdown document names one that exists.

A reference is a document name followed by a quoted section, as the sources and documents
write them: `docs/allocator.md, "Staging"`, `(gguf.md, "Models")`, `docs/graph.md ("Decoder
graph")`, across a line break of a comment too. A bare name (`gguf.md`) is looked for next to
the referring document, then in docs/, then at the top of the tree. The section exists when
a heading of that document holds its text (backticks aside). Prints each broken reference as
FILE:LINE: DOC, "SECTION": why, and exits 1 if there is one. This file, whose self-test
holds broken references on purpose, is not scanned.

usage: check_doc_refs.py [SOURCE_DIR]
       check_doc_refs.py --self-test   (the checker on a small tree of known references)
"""
import os
import re
import sys

SCANNED = ("src", "include", "tools", "tests", "docs", "bench", "scripts", "cmake")
TOP_FILES = ("README.md", "BENCHMARKS.md", "CMakeLists.txt")
EXTS = (".c", ".h", ".md", ".txt", ".sh", ".cmake", ".py", ".mjs", ".js", ".css", ".cpp")
# a comment leader at the start of a continued line: " * ", "// ", "# "
LEADER = re.compile(r"\n[ \t]*(?:\*(?!/)|//|#(?!#))?[ \t]*")
REF = re.compile(r'([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(?:\]\([^)]*\))?,? \(?"([^"\n]+)"')


def files(root):
    for top in TOP_FILES:
        if os.path.isfile(os.path.join(root, top)):
            yield top
    for d in SCANNED:
        for base, dirs, names in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for n in sorted(names):
                if n.endswith(EXTS) and n != os.path.basename(__file__):
                    yield os.path.relpath(os.path.join(base, n), root)


def headings(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            cache[path] = [re.sub(r"^#+\s*", "", l).replace("`", "").strip()
                           for l in f if re.match(r"#{1,6}\s", l)]
    return cache[path]


def resolve(root, referrer, doc):
    if "/" in doc:
        cands = [doc, os.path.join(os.path.dirname(referrer), doc)]
    else:
        cands = [os.path.join(os.path.dirname(referrer), doc), os.path.join("docs", doc), doc]
    for c in cands:
        if os.path.isfile(os.path.join(root, c)):
            return os.path.join(root, c)
    return None


def check(root):
    """Returns (checked, broken lines)."""
    out, checked = [], 0
    for rel in files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        # offsets into the joined text map back to lines through the newlines removed
        joined, lines, pos = [], [], 0
        for m in LEADER.finditer(text):
            joined.append(text[pos:m.start()])
            lines.append(sum(len(s) for s in joined))
            joined.append(" ")
            pos = m.end()
        joined.append(text[pos:])
        flat = "".join(joined)
        for m in REF.finditer(flat):
            doc, section = m.group(1), m.group(2).replace("`", "").strip()
            line = 1 + sum(1 for b in lines if b < m.start())
            checked += 1
            path = resolve(root, rel, doc)
            why = None
            if path is None:
                why = "no such document"
            elif not any(section in h for h in headings(path)):
                why = "no such section"
            if why:
                out.append(f'{rel}:{line}: {doc}, "{section}": {why}')
    return checked, out


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "src"))
        with open(os.path.join(root, "docs", "a.md"), "w") as f:
            f.write("# A\n\n## The `writer`\n\ntext, see (b.md, \"Gone\")\n")
        with open(os.path.join(root, "src", "x.c"), "w") as f:
            f.write('/* ok (docs/a.md, "The writer"), ok across lines (docs/a.md,\n'
                    ' * "The writer"); bad docs/a.md, "Writer"; bad on line 3\n'
                    ' * (docs/a.md, "Nothing") and docs/none.md, "X" */\n')
        checked, out = check(root)
        want = ['docs/a.md:5: b.md, "Gone": no such document',
                'src/x.c:2: docs/a.md, "Writer": no such section',
                'src/x.c:3: docs/a.md, "Nothing": no such section',
                'src/x.c:3: docs/none.md, "X": no such document']
        if checked != 6 or sorted(out) != sorted(want):
            print(f"self-test: checked {checked}, expected 6; got", *out, sep="\n  ")
            return 1
    print("self-test: 6 references, the 4 broken ones found")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    checked, out = check(root)
    for line in out:
        print(line)
    if out:
        print(f"{len(out)} of {checked} section references are broken")
        return 1
    print(f"{checked} section references, all found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
