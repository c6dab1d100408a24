#!/usr/bin/env python
"""A fixed CPU yardstick: the same single-threaded work every time (hashing and integer arithmetic in the
interpreter, stdlib only), its seconds printed. `make test` runs it at its start and at its end, so a run's
figures can be compared with another's: a file's time divided by the run's yardstick is the machine's hour
taken out (tests/conftest.py scales the lab files' hints by it to name the files over budget).

    python3 tools/yardstick.py          seconds of the work, e.g. 4.213
"""

import hashlib
import time

ROUNDS = 60


def work():
    digest = b"blackwell.inference"
    total = 0
    for _round in range(ROUNDS):
        for _step in range(40000):
            digest = hashlib.sha256(digest).digest()
        total += sum(i * i % 7 for i in range(400000))
    return digest.hex()[:8], total


def main():
    start = time.process_time()
    wall = time.monotonic()
    work()
    # CPU time of this process: a steal-free core gives the same figure whatever else runs; wall time shows the steal
    print("%.3f %.3f" % (time.monotonic() - wall, time.process_time() - start))


if __name__ == "__main__":
    main()
