"""Write requirements.lock: the exact versions of this venv's packages that the project needs.

    .venv/bin/python scripts/lock.py --out requirements.lock     # what `make lock` runs
    .venv-lighteval/bin/python scripts/lock.py --root lighteval==0.13.0 ... \
        --out requirements-lighteval.lock                          # what `make harness-lock` runs

The closure is walked from pyproject.toml's dependencies and its `test` extra (which pulls in
every other extra), each package's markers evaluated for this interpreter, so a package installed
into the venv by hand does not enter the lock. `make setup` and CI install with
`pip install -c requirements.lock`; pyproject.toml keeps the lower bounds for library users.
A local version label (`torch==2.13.0+cpu`) is dropped: `==2.13.0` accepts the CPU and the CUDA
build alike, whichever index the machine uses. With `--root` the closure is walked from those
requirements instead (lighteval's venv, whose pins cannot sit beside the kit's: `make harness-env`).
"""

from __future__ import annotations

import argparse
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("test",)
HEADER = ("# The versions the test suite runs against: `make setup` and CI install with\n"
          "# `pip install -c requirements.lock`. Refresh with `make lock` (scripts/lock.py) after\n"
          "# changing a dependency in pyproject.toml, then run `make test`.\n")
ROOTS_HEADER = ("# The versions of a venv of its own (`make harness-env`), the closure of: {roots}.\n"
                "# Refresh with `make harness-lock` (scripts/lock.py --root ...), then run `make test`.\n")


def project_requirements(root: Path = PROJECT_ROOT, extras=EXTRAS) -> list[Requirement]:
    """pyproject.toml's dependencies plus `extras`, the project's own extras expanded."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name, optional = canonicalize_name(project["name"]), project.get("optional-dependencies", {})
    found = [Requirement(line) for line in project["dependencies"]]
    wanted, done = list(extras), set()
    while wanted:
        extra = wanted.pop()
        if extra in done:
            continue
        done.add(extra)
        for req in map(Requirement, optional[extra]):
            if canonicalize_name(req.name) == name:  # meditod-hub[endpoint]: another extra
                wanted += req.extras
            else:
                found.append(req)
    return found


def closure(roots: list[Requirement] | None = None) -> dict[str, str]:
    """{canonical name: installed version} of every package `roots` need here, transitively."""
    found: dict[str, str] = {}
    pending = [(req, {""}) for req in (project_requirements() if roots is None else roots)]
    seen: set[tuple[str, frozenset]] = set()
    while pending:
        req, environment_extras = pending.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in environment_extras):
            continue
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            continue  # needed on another platform only, or missing: `pip check` says which
        found[key[0]] = dist.version.split("+", 1)[0]
        pending += [(Requirement(line), set(req.extras) | {""}) for line in dist.requires or []]
    return found


def render(pins: dict[str, str], header: str = HEADER) -> str:
    return header + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


def read_lock(path: str | Path) -> dict[str, str]:
    """{canonical name: version} of a lock file (comments and blank lines skipped)."""
    pins = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==", 1)
            pins[canonicalize_name(name)] = version
    return pins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="requirements.lock")
    parser.add_argument("--root", action="append", default=[],
                        help="pin the closure of this requirement instead of pyproject.toml's "
                             "(repeat for several)")
    args = parser.parse_args(argv)
    roots = [Requirement(line) for line in args.root] or None
    pins = closure(roots)
    header = ROOTS_HEADER.format(roots=", ".join(args.root)) if roots else HEADER
    Path(args.out).write_text(render(pins, header), encoding="utf-8")
    print(f"{args.out}: {len(pins)} packages pinned")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
