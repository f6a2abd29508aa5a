#!/usr/bin/env python3
"""Writes a MiniMalloc CSV problem of N rows for the scale benchmark (BENCHMARKS.md).

usage: bench/gen_csv.py N [short|long] > FILE
short: row i lives [i, i + L) with L uniform in 1..63 (about 32 buffers live at once);
long:  row i lives [i, i + L) with L uniform in 1..N/4 (about N/8 live at once).
Sizes are uniform in 1..2^20 bytes; the generator is seeded, so a file is reproducible."""
import random
import sys


def main():
    n = int(sys.argv[1])
    kind = sys.argv[2] if len(sys.argv) > 2 else "short"
    top = 63 if kind == "short" else max(1, n // 4)
    rng = random.Random(14)
    out = sys.stdout
    out.write("id,lower,upper,size\n")
    rows = []
    for i in range(n):
        rows.append("b%d,%d,%d,%d\n" % (i, i, i + rng.randint(1, top), rng.randint(1, 1 << 20)))
        if len(rows) == 65536:
            out.write("".join(rows))
            rows = []
    out.write("".join(rows))


if __name__ == "__main__":
    main()
