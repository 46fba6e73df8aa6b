"""The native harnesses' committed type table and proto2 forms are what protos/ gives."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT, require
from test_schema import TOOLS_PYTHON

sys.path.insert(0, str(ROOT / "protos"))
import native_types  # protos/ is no package

GENERATED = ROOT / "native" / "generated"


def test_the_native_type_table_and_proto2_forms_match_the_protos(tmp_path):
    require(TOOLS_PYTHON.exists(), "the .venv-pb425 environment (tests/setup_envs.py)")
    subprocess.run(
        [str(TOOLS_PYTHON), str(ROOT / "protos" / "generate.py"), "--native-types",
         "--out", str(tmp_path)],
        check=True, capture_output=True,
    )  # fmt: skip
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(GENERATED) for p in GENERATED.rglob("*") if p.is_file())
    assert written == committed
    for path in written:
        assert (tmp_path / path).read_text() == (GENERATED / path).read_text(), (
            f"native/generated/{path} drifted: run `.venv-pb425/bin/python protos/generate.py "
            "--native-types`"
        )


def test_protoc_c_names_follow_its_rule():
    # protoc-c 1.4 names: packages joined by "__", a capital after a lower-case letter
    # starts a word (checked against the .pb-c.h protoc-c writes, e.g.
    # evbench__seed__backend_data_packet__descriptor).
    seed = native_types.protobuf_c_name("evbench.seed.BackendDataPacket")
    assert seed == "evbench__seed__backend_data_packet"
    assert native_types.protobuf_c_name("evbench.shapes.Vector3") == "evbench__shapes__vector3"


def test_the_proto2_form_keeps_presence_and_packing_and_refuses_what_it_cannot_carry():
    text = (
        'syntax = "proto3";\nmessage M {\n  optional double a = 1;\n  Sub s = 2;\n'
        "  repeated int32 r = 3;\n  repeated string t = 4;\n}\n"
    )
    form = native_types.proto2_form(text, "m.proto")
    assert 'syntax = "proto2";' in form
    assert "  optional double a = 1;\n" in form
    assert "  optional Sub s = 2;\n" in form
    assert "  repeated int32 r = 3 [packed = true];\n" in form
    assert "  repeated string t = 4;\n" in form  # strings are never packed
    # and refuses what it cannot carry exactly
    text = 'syntax = "proto3";\nmessage M {\n  optional double a = 1;\n  int32 b = 2;\n}\n'
    with pytest.raises(ValueError, match="scalar b has no presence"):
        native_types.proto2_form(text, "m.proto")
    without_presence = 'syntax = "proto3";\nmessage M {\n  int32 b = 2;\n}\n'
    assert native_types.proto2_form(without_presence, "m") is None
