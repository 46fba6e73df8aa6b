"""The file formats' reference tables in docs/ are made from their JSON Schemas
(docs/generate.py), and the schemas agree with the code that reads the files."""

import dataclasses
import importlib.util
import subprocess
import sys

import pytest
from conftest import ROOT

from evbench_agent import options, spec

GENERATE = ROOT / "docs" / "generate.py"
_loaded = importlib.util.spec_from_file_location("docs_generate", GENERATE)
generate = importlib.util.module_from_spec(_loaded)
_loaded.loader.exec_module(generate)


def test_the_docs_tables_are_the_schemas_and_the_spec_schema_is_the_spec():
    argv = [sys.executable, str(GENERATE), "--check"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # every spec key is in the schema, explained and defaulted as the spec is
    properties = spec.schema()["properties"]
    assert set(properties) == {field.name for field in dataclasses.fields(spec.Spec)}
    flagged = {option.spec_key for option in options.RUN_OPTIONS}
    assert flagged <= set(properties)
    for key, schema in properties.items():
        assert key in flagged or schema.get("description"), key
    # giving a key its documented default changes nothing in the spec
    default = spec.from_dict({})
    for key, schema in properties.items():
        given = spec.from_dict({key: schema["default"]})
        assert getattr(given, key) == getattr(default, key), key


@pytest.mark.parametrize("name", ["spec", "generator", "lab", "lab-index"])
def test_a_table_edited_by_hand_is_found_and_put_back(name):
    document = ROOT / "docs" / generate.TABLES[name][2]
    text = document.read_text(encoding="utf-8")
    begin = generate.BEGIN.format(name=name)
    start = text.index(begin)
    row = text.index("\n| `", start) + 1
    edited = text[:row] + "| `made_up` | text | | a key no schema has |\n" + text[row:]
    assert generate.rewritten(edited, name) == text
