"""The build backend of the flotilla package (PEP 517 and PEP 660).

Standard library only, so that `pip install --no-index clients/python`
works offline in a fresh virtual environment: setuptools, the usual
backend, is not in such an environment and no index can supply it. It
builds a pure-Python wheel (py3-none-any) of the flotilla directory with
zipfile, an sdist with tarfile, and an editable wheel (a .pth file naming
this directory). Builds are reproducible: entries sorted, timestamps fixed
(SOURCE_DATE_EPOCH when set, else 1980-01-01).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

NAME = "flotilla"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"

__all__ = [
    "build_wheel", "build_sdist", "build_editable",
    "get_requires_for_build_wheel", "get_requires_for_build_sdist", "get_requires_for_build_editable",
    "prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable",
]


def _version() -> str:
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise RuntimeError("flotilla/__init__.py: no __version__ line")
    return m.group(1)


def _dist_info() -> str:
    return "%s-%s.dist-info" % (NAME, _version())


def _metadata() -> bytes:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    head = [
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + _version(),
        "Summary: Client of the Flotilla batch scheduler's queueing service (HTTP API)",
        "License: Apache-2.0",
        "Requires-Python: >=3.8",
        "Description-Content-Type: text/markdown",
    ]
    return ("\n".join(head) + "\n\n" + readme).encode("utf-8")


def _wheel_file() -> bytes:
    return ("Wheel-Version: 1.0\nGenerator: flotilla_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG).encode()


def _package_files() -> List[Tuple[str, str]]:
    """(path in the archive, path on disk) of the package's files, sorted."""
    out = []
    for d, dirs, files in os.walk(os.path.join(ROOT, NAME)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(d, f)
            out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return sorted(out)


def _date_time() -> Tuple[int, int, int, int, int, int]:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        t = time.gmtime(max(int(epoch), 315532800))  # zip cannot go before 1980
        return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
    return (1980, 1, 1, 0, 0, 0)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(wheel_directory: str, entries: List[Tuple[str, bytes]]) -> str:
    """Writes a wheel of entries plus the dist-info files; returns its name."""
    info = _dist_info()
    entries = entries + [
        (info + "/METADATA", _metadata()),
        (info + "/WHEEL", _wheel_file()),
        (info + "/top_level.txt", (NAME + "\n").encode()),
    ]
    record = [_record_line(p, d) for p, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = "%s-%s-%s.whl" % (NAME, _version(), TAG)
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            zi = zipfile.ZipInfo(path, _date_time())
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, str]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(p, _read(full)) for p, full in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, str]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    # A .pth file puts this directory on sys.path: the package is imported
    # from the source tree.
    return _write_wheel(wheel_directory, [("__editable__.%s.pth" % NAME, (ROOT + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, str]] = None) -> str:
    base = "%s-%s" % (NAME, _version())
    files = [(p, _read(full)) for p, full in _package_files()]
    for extra in ("pyproject.toml", "README.md", "_build/flotilla_build.py"):
        files.append((extra, _read(os.path.join(ROOT, extra))))
    files.append(("PKG-INFO", _metadata()))
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    mtime = max(int(os.environ.get("SOURCE_DATE_EPOCH") or 0), 315532800)  # as the wheel's
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, data in sorted(files):
            ti = tarfile.TarInfo(base + "/" + path)
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = mtime
            t.addfile(ti, io.BytesIO(data))
    return name


def _prepare_metadata(metadata_directory: str) -> str:
    info = _dist_info()
    d = os.path.join(metadata_directory, info)
    os.makedirs(d, exist_ok=True)
    for name, data in (("METADATA", _metadata()), ("WHEEL", _wheel_file())):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return info


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, str]] = None) -> str:
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: Optional[Dict[str, str]] = None) -> str:
    return _prepare_metadata(metadata_directory)


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []
