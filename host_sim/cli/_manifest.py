"""``host-sim manifest SPEC [-o FILE]``: build a mod's manifest in the sandbox, print its JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from modular_sdk import ManifestBuildError

from ..fold import build_manifest
from ._options import add_timeout

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "manifest",
        help="build a mod's manifest in the sandbox and print its JSON",
        description="Import the mod in a throwaway sandbox (no host attached), refuse it if its "
        "top level does I/O, and print its manifest as deterministic JSON.",
    )
    parser.add_argument("spec", metavar="SPEC", help="path/to/file.py or package.module, optionally with :attr")
    # More specs are a mistake worth advice (run() gives it), not argparse's "unrecognized
    # arguments"; hidden, so the usage shows the one SPEC the command takes.
    parser.add_argument("more_specs", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", metavar="FILE", help="write the JSON to FILE instead of stdout")
    add_timeout(parser, default=10.0, what="the import")
    parser.set_defaults(handler=run, parser=parser)


def run(args: argparse.Namespace) -> int:
    """Print (or write) the manifest; exit 1 with the refusal on stderr, 2 for several specs."""
    specs: list[str] = [args.spec, *args.more_specs]
    if len(specs) != 1:
        parser: argparse.ArgumentParser = args.parser
        parser.error(
            f"manifest builds one mod, got {len(specs)} specs ({', '.join(map(repr, specs))}); "
            f"run it once per mod, or validate them all with: host-sim check {' '.join(specs)}"
        )
    try:
        text = build_manifest(specs[0], timeout=args.timeout).to_json()
    except ManifestBuildError as exc:
        print(f"host-sim manifest: {exc}", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_bytes(text.encode("utf-8"))
    except OSError as exc:
        print(f"host-sim manifest: cannot write {args.output!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
