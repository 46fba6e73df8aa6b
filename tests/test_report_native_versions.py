"""The report names a native codec's runtime: one answer per (JSON, protobuf) pair of a
language, and its version as its harness reported it (issue 44, item 4, the report's part;
the boxes of a real run of every runtime: tests/test_native_runtimes.py).
"""

from __future__ import annotations

from evbench.report import runtimes, table

NATIVE = {"c:protobuf-c": {"library": "protobuf-c", "version": "1.4.1"},
          "c:cjson": {"library": "cJSON", "version": "1.7.15"}}  # fmt: skip
MANIFEST = {"platform": {"native_codecs": NATIVE}}


def test_each_language_pairs_its_json_runtimes_with_its_protobuf_runtimes():
    names = ["json", "protobuf", "c:protobuf-c", "c:cjson", "c:nanopb", "cpp:protobuf",
             "cpp:nlohmann"]  # fmt: skip
    found = [(p.baseline, p.candidate, p.language) for p in runtimes.pairs(names)]
    # C: one JSON runtime x two protobuf runtimes; C++: one x one; Python is the main answer.
    assert found == [
        ("c:cjson", "c:protobuf-c", "C"),
        ("c:cjson", "c:nanopb", "C"),
        ("cpp:nlohmann", "cpp:protobuf", "C++"),
    ]
    # no pair across languages or without both sides
    assert runtimes.pairs(["json", "c:protobuf-c", "cpp:nlohmann"]) == []
    assert runtimes.pairs(["json", "protobuf"]) == []


def test_titles_and_tables_name_library_version_and_language():
    pair = runtimes.pairs(["c:protobuf-c", "c:cjson"])[0]
    title = "Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15) in C"
    assert runtimes.title(pair, MANIFEST) == title
    # A manifest without the harness's word (an older run): the library, no version.
    assert runtimes.label("c:nanopb", {}) == "Protobuf (nanopb)"
    assert table.display_name("cpp:nlohmann") == "JSON (nlohmann::json)"
    assert table.display_name("protobuf") == "Protobuf"
    assert table.display_name("orjson") == "orjson"
