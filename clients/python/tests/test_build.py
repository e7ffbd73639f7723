"""The in-tree build backend: a valid, reproducible wheel and sdist, and
`pip install --no-index clients/python` in a fresh venv, offline."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import flotilla

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_build"))

import flotilla_build  # noqa: E402


def test_the_wheel_holds_the_package_and_a_record_that_matches_it(tmp_path):
    name = flotilla_build.build_wheel(str(tmp_path))
    assert name == "flotilla-%s-py3-none-any.whl" % flotilla.__version__
    with zipfile.ZipFile(tmp_path / name) as z:
        names = z.namelist()
        info = "flotilla-%s.dist-info/" % flotilla.__version__
        for want in ("flotilla/__init__.py", "flotilla/client.py", "flotilla/errors.py", "flotilla/types.py",
                     "flotilla/py.typed", info + "METADATA", info + "WHEEL", info + "RECORD"):
            assert want in names
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        record = z.read(info + "RECORD").decode().splitlines()
        assert sorted(r.split(",")[0] for r in record) == sorted(names)
        for row in record:
            path, digest, size = row.split(",")
            if path == info + "RECORD":
                assert (digest, size) == ("", "")
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == ("sha256=" + want, len(data)), path
        meta = z.read(info + "METADATA").decode()
        assert "\nVersion: %s\n" % flotilla.__version__ in meta
        assert "Tag: py3-none-any" in z.read(info + "WHEEL").decode()


def test_the_versions_agree_and_builds_are_reproducible(tmp_path):
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "%s"$' % re.escape(flotilla.__version__), pyproject, re.M)
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        name = flotilla_build.build_wheel(str(d))
        sdist = flotilla_build.build_sdist(str(d))
    assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / sdist).read_bytes() == (b / sdist).read_bytes()
    with tarfile.open(a / sdist) as t:
        names = t.getnames()
    base = "flotilla-%s/" % flotilla.__version__
    for want in ("pyproject.toml", "PKG-INFO", "README.md", "_build/flotilla_build.py", "flotilla/client.py"):
        assert base + want in names


# Creates a venv and runs pip twice: about 15 s.
def test_pip_installs_it_offline_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    pip = [str(py), "-m", "pip", "install", "--no-index", "--quiet"]
    where = [str(py), "-c", "import flotilla; print(flotilla.__file__, flotilla.__version__)"]

    subprocess.run(pip + [str(ROOT)], check=True, env=env, cwd=tmp_path)
    out = subprocess.run(where, check=True, env=env, cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert Path(out[0]).is_relative_to(venv) and out[1] == flotilla.__version__

    # Editable (PEP 660): imported from the source tree.
    subprocess.run(pip + ["--editable", str(ROOT)], check=True, env=env, cwd=tmp_path)
    out = subprocess.run(where, check=True, env=env, cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert Path(out[0]) == ROOT / "flotilla" / "__init__.py"
