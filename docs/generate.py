"""The reference tables of the file formats in docs/, made from their JSON Schemas.

Each table sits between `<!-- schema-table: NAME -->` and `<!-- end schema-table -->`
in its document; this script rewrites what is between them from the schema, so a
key exists once (in the schema, which also validates the files):

    .venv/bin/python docs/generate.py          # rewrite the tables
    .venv/bin/python docs/generate.py --check  # exit 1 naming each table that differs

tests/test_docs_tables.py runs the check, so a schema changed without its docs fails.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from evbench_agent import options
from evbench_core import json_schema

DOCS = Path(__file__).resolve().parent
#: Table name -> (the package that ships the schema, its file, the document).
TABLES = {
    "spec": ("evbench_agent", "spec.schema.json", "running.md"),
    "generator": ("evbench_agent.payloads", "generator.schema.json", "own-messages.md"),
    "lab": ("evbench.lab", "lab.schema.json", "lab.md"),
    "lab-index": ("evbench.lab", "lab-index.schema.json", "lab.md"),
}
BEGIN = "<!-- schema-table: {name} -->"
END = "<!-- end schema-table -->"


def _resolved(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        target = root["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _objects(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a value of `schema` may be (itself, its anyOf alternatives)."""
    schema = _resolved(schema, root)
    described = "properties" in schema or isinstance(schema.get("additionalProperties"), dict)
    found = [schema] if described else []
    for option in schema.get("anyOf", []):
        found += _objects(option, root)
    return found


def _rows(schema: dict[str, Any], root: dict[str, Any], prefix: str) -> list[tuple]:
    """(key, schema) for every key of an object schema, nested keys by dotted path."""
    rows: list[tuple] = []
    required = set(schema.get("required", []))
    for name, child in schema.get("properties", {}).items():
        rows.append((f"{prefix}{name}", child, name in required))
        rows += _nested(child, root, f"{prefix}{name}")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        rows += _nested(extra, root, f"{prefix}NAME")
    return rows


def _nested(child: dict[str, Any], root: dict[str, Any], key: str) -> list[tuple]:
    """The rows inside a key's value: an object's keys (KEY.x), a list's objects' (KEY[].x)."""
    resolved = _resolved(child, root)
    rows: list[tuple] = []
    for found in _objects(resolved, root):
        rows += _rows(found, root, f"{key}.")
    for candidate in [resolved, *(_resolved(o, root) for o in resolved.get("anyOf", []))]:
        items = candidate.get("items")
        if isinstance(items, dict):
            for found in _objects(items, root):
                rows += _rows(found, root, f"{key}[].")
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in schema:
        return ""
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`"


def table(name: str) -> str:
    package, file, _ = TABLES[name]
    root = json_schema.load(package, file)
    flags = {option.spec_key: option for option in options.RUN_OPTIONS}
    spec = name == "spec"
    head = ["key", *(["option"] if spec else []), "value", "default", "meaning"]
    lines = [f"| {' | '.join(head)} |", f"|{'---|' * len(head)}"]
    for key, child, required in _rows(root, root, ""):
        option = flags.get(key) if spec else None
        meaning = _resolved(child, root).get("description", "")
        if option is not None and not meaning:
            text = option.help.replace("%%", "%")  # argparse's escape
            meaning = text[0].upper() + text[1:] + "."
        cells = [f"`{key}`"]
        if spec:
            cells.append(f"`{option.flag}`" if option is not None else "")
        cells += [json_schema.describe(child, root), _default(child, required), meaning]
        lines.append(f"| {' | '.join(_cell(cell) for cell in cells)} |")
    return "\n".join(lines)


def rewritten(text: str, name: str) -> str:
    begin = BEGIN.format(name=name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"docs/generate.py: no '{begin}' ... '{END}' in the document")
    return pattern.sub(lambda _: f"{begin}\n{table(name)}\n{END}", text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which tables differ")
    args = parser.parse_args(argv)
    stale = []
    for document in dict.fromkeys(doc for _, _, doc in TABLES.values()):
        path = DOCS / document
        old = path.read_text(encoding="utf-8")
        new = old
        for name, (_, _, target) in TABLES.items():
            if target == document:
                new = rewritten(new, name)
        if new != old:
            stale.append(document)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if stale and args.check:
        print(
            f"docs/generate.py: the schema tables of {', '.join(stale)} differ from the "
            "schemas: run `.venv/bin/python docs/generate.py`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
