"""The command line of the lab's export: `python -m tools.site.lab --output DIR [--model NAME] [--fast]`."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.site.lab import DEFAULT_MODEL, LabError, NotExportable, check_exportable, export_lab

NOT_EXPORTABLE = 2  # exit status of a model the lab cannot run (a one-line message names those it can)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.site.lab",
                                     description="Export a trained GRU translator and the attention lab page into "
                                                 "DIR (open DIR/index.html; it runs offline in the browser).")
    parser.add_argument("--output", "-o", required=True, type=Path, help="folder to write the lab into")
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"a cached recipe (default {DEFAULT_MODEL})")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="a model file saved with course_utils.zoo.save_checkpoint, instead of a recipe")
    parser.add_argument("--fast", action="store_true", default=None,
                        help="the fast-mode model (default: as COURSE_FAST says)")
    args = parser.parse_args(argv)
    try:
        if args.checkpoint is None:
            check_exportable(args.model)  # before the corpus is read
        report = export_lab(args.output, args.model, fast=args.fast, checkpoint=args.checkpoint, log=None)
    except NotExportable as error:
        print(f"error: {error}", file=sys.stderr)
        return NOT_EXPORTABLE
    except (LabError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0
