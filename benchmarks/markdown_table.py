"""The Markdown tables the benchmarks print: docs/costs.md holds them as
printed, so every script writes them the same way."""
from __future__ import print_function


def header(*titles):
    print("| " + " | ".join(titles) + " |")
    print("|" + "---|" * len(titles))


def row(*cells):
    print("| " + " | ".join(str(cell) for cell in cells) + " |")
