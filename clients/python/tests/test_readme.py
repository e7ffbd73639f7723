"""The READMEs' example runs as written (its server URL aside) against a
real serve and fake executor, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import List

import pytest

import flotilla

from conftest import NODES

HERE = Path(__file__).resolve().parent


def examples(readme: Path) -> List[str]:
    found = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert found, "%s has no python example" % readme
    return found


def example(readme: Path) -> str:
    return examples(readme)[0]


def test_the_readme_example_runs_and_prints_what_it_says(service):
    code = example(HERE.parent / "README.md")
    # The repository's README shows the same example.
    assert example(HERE.parents[2] / "README.md") == code
    assert len(code.strip().splitlines()) <= 12
    service.executor("c1", NODES)
    code = code.replace('"http://127.0.0.1:8080"', repr(service.url))
    out = io.StringIO()
    env: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README example", "exec"), env)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 * 4 + 2
    types = [line.split()[2] for line in lines[:12]]
    assert sorted(types) == sorted(["submitted", "leased", "running", "succeeded"] * 3)
    assert all(" c1 node-" in line for line in lines[:12] if line.split()[2] != "submitted")
    assert lines[12] == "['succeeded', 'succeeded', 'succeeded']"
    assert lines[13] == "jobs[0].requests.cpu lots"

    # The client README's second example goes on from the first (its
    # client, queue A, and a cluster the service knows by now).
    [_, warned] = examples(HERE.parent / "README.md")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.warns(flotilla.NeverFitsWarning):
        exec(compile(warned, "README warnings example", "exec"), env)
    assert out.getvalue() == "jobs[0] cpu True\n"
