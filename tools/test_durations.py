"""Write tests/durations.json: how long each test file took, from pytest JUnit reports.

    pytest ... --junitxml=/tmp/run.xml
    python tools/test_durations.py /tmp/run.xml [more.xml ...]

tests/conftest.py hands the files to pytest-xdist longest first by these numbers (files
not listed follow, ordered as before: those with ``slow`` tests, then by number of tests),
so one long file does not start last and run alone while the other workers idle. Files
under ``MIN_SECONDS`` are left out (their order does not matter); a file in several reports
keeps its longest time. Existing entries for files absent from the reports are kept."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "durations.json"
MIN_SECONDS = 20.0


def file_seconds(report: Path) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for case in ET.parse(report).iter("testcase"):
        # "tests.parity.vision.test_x" (or "...test_x.TestClass") -> tests/parity/vision/test_x.py
        parts = case.get("classname", "").split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        if not parts:
            continue
        path = "/".join(parts) + ".py"
        seconds[path] = seconds.get(path, 0.0) + float(case.get("time") or 0.0)
    return seconds


def main(reports: list[str]) -> None:
    if not reports:
        sys.exit(__doc__)
    known = json.loads(OUT.read_text()) if OUT.exists() else {}
    measured: dict[str, float] = {}
    for report in reports:
        for path, s in file_seconds(Path(report)).items():
            measured[path] = max(measured.get(path, 0.0), s)
    for path, s in measured.items():
        if s >= MIN_SECONDS and (ROOT / path).is_file():
            known[path] = round(s)
        else:
            known.pop(path, None)
    OUT.write_text(json.dumps(dict(sorted(known.items(), key=lambda kv: -kv[1])), indent=1)
                   + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(known)} files")


if __name__ == "__main__":
    main(sys.argv[1:])
