"""The READMEs' example runs as written (its server URL aside) against a
real serve and fake executor, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from conftest import NODES

HERE = Path(__file__).resolve().parent


def example(readme: Path) -> str:
    m = re.search(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert m, "%s has no python example" % readme
    return m.group(1)


def test_the_readme_example_runs_and_prints_what_it_says(service):
    code = example(HERE.parent / "README.md")
    # The repository's README shows the same example.
    assert example(HERE.parents[2] / "README.md") == code
    assert len(code.strip().splitlines()) <= 12
    service.executor("c1", NODES)
    code = code.replace('"http://127.0.0.1:8080"', repr(service.url))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README example", "exec"), {})
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 * 4 + 2
    types = [line.split()[2] for line in lines[:12]]
    assert sorted(types) == sorted(["submitted", "leased", "running", "succeeded"] * 3)
    assert all(" c1 node-" in line for line in lines[:12] if line.split()[2] != "submitted")
    assert lines[12] == "['succeeded', 'succeeded', 'succeeded']"
    assert lines[13] == "jobs[0].requests.cpu lots"
