#!/usr/bin/env python3
"""Checks that every Swift code block in README.md and the DocC articles quotes a compiled file.

Each ```swift block must be preceded by a line `<!-- example: PATH -->` naming a file of the
package (a target under Examples/, built by `swift build`), and must equal that file's contents
exactly (or a contiguous run of its lines, for `<!-- example: PATH lines A-B -->`). So the code
the documents show is code CI compiles.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "Sources").glob("*/Documentation.docc/*.md"))]
MARKER = re.compile(r"<!-- example: (\S+)(?: lines (\d+)-(\d+))? -->")

failures = []
checked = 0
for document in DOCUMENTS:
    lines = document.read_text().splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            start = index + 1
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            block = "\n".join(lines[start:end]).strip("\n")
            marker = MARKER.search(lines[index - 1]) if index > 0 else None
            where = f"{document.relative_to(ROOT)}:{index + 1}"
            if not marker:
                failures.append(f"{where}: swift block without an <!-- example: PATH --> marker")
            else:
                source = ROOT / marker.group(1)
                if not source.exists():
                    failures.append(f"{where}: {marker.group(1)} does not exist")
                else:
                    text = source.read_text().splitlines()
                    if marker.group(2):
                        text = text[int(marker.group(2)) - 1:int(marker.group(3))]
                    expected = "\n".join(text).strip("\n")
                    if block != expected:
                        failures.append(f"{where}: block differs from {marker.group(1)}")
                    checked += 1
            index = end
        index += 1

for failure in failures:
    print(failure, file=sys.stderr)
print(f"doc examples: {checked} checked, {len(failures)} problems")
sys.exit(1 if failures else 0)
