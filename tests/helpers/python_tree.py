"""The Python program whose call tree the Python-frames tests know: `python tree.py SECONDS` spins in
`spin` under two chains of callers, made in its first second and called until it ends."""

from __future__ import annotations

import textwrap

TREE = textwrap.dedent(
    """
    import sys, time

    def spin(n):
        x = 0
        for i in range(n):
            x += i * i
        return x

    def leaf():
        return spin(20000)

    def middle():
        return leaf()

    def other():
        return spin(20000)

    def main(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(3):
                middle()
            other()

    if __name__ == "__main__":
        main(float(sys.argv[1]))
    """
)
# Every sample of the program's work (spin) must carry one of these chains of its Python callers.
CHAINS = (("<module>", "main", "middle", "leaf", "spin"), ("<module>", "main", "other", "spin"))
