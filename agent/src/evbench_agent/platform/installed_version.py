"""The installed version of a distribution, read from its metadata file on sys.path.

Every manifest names the version of each installed codec library. importlib.metadata
answers that, but brings email, zipfile, csv and their helpers into the agent
(about 3.5 MiB of the manager's peak RSS on the lab PC, against a 30 MiB aim) to
read one header line. This reads the same line: the first `Version:` header of the
first matching `NAME-VERSION.dist-info/METADATA` (wheels, pip) or
`NAME-VERSION.egg-info` (`PKG-INFO` inside, or the file itself: Debian's and
Yocto's setuptools packages) found along sys.path, in sys.path order, as
importlib.metadata does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

#: The metadata headers end at the first blank line; no real header block is this long.
_MAX_HEADER_BYTES = 256 * 1024
_SUFFIXES = {"dist-info": "METADATA", "egg-info": "PKG-INFO"}


def normalise(name: str) -> str:
    """A distribution name as directory names spell it (PEP 503 runs of -_. as one _)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _version_header(metadata: Path) -> str | None:
    try:
        with metadata.open("rb") as stream:
            head = stream.read(_MAX_HEADER_BYTES)
    except OSError:
        return None
    for raw in head.decode("utf-8", errors="replace").splitlines():
        if not raw.strip():
            return None  # end of the headers: none named the version
        key, _, value = raw.partition(":")
        if key.strip().lower() == "version" and value.strip():
            return value.strip()
    return None


def distribution_version(distribution: str, path: Iterable[str] | None = None) -> str | None:
    """The version of `distribution` installed along `path` (default sys.path), or None."""
    wanted = normalise(distribution)
    for entry in sys.path if path is None else path:
        directory = Path(entry or ".")
        try:
            names = sorted(child.name for child in directory.iterdir())
        except OSError:  # a zip archive on the path, or a directory that is gone
            continue
        for name in names:
            stem, _, suffix = name.rpartition(".")
            if suffix not in _SUFFIXES or normalise(stem.split("-")[0]) != wanted:
                continue
            candidate = directory / name
            metadata = candidate / _SUFFIXES[suffix] if candidate.is_dir() else candidate
            version = _version_header(metadata)
            if version is not None:
                return version
    return None
