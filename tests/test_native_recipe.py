"""native/'s sources agree: the committed type table and proto2 forms are what protos/ gives;
meta-evbench's evbench-native recipe (its DEPENDS function run against a stand-in for
bitbake's datastore: no bitbake in CI) builds the agent's runtimes as CMake names them."""

import re
import subprocess
import sys
import types

import pytest
from conftest import ROOT, require
from test_schema import TOOLS_PYTHON

from evbench_agent.native import runtimes

sys.path.insert(0, str(ROOT / "protos"))
import native_types  # protos/ is no package

RECIPE = ROOT / "meta-evbench" / "recipes-evbench" / "evbench-native" / "evbench-native_0.1.0.bb"
IMAGE = ROOT / "meta-evbench" / "recipes-core" / "images" / "evbench-image.bb"
CMAKE = ROOT / "native" / "CMakeLists.txt"
GENERATED = ROOT / "native" / "generated"


def _needs(text: str) -> dict[str, str]:
    return dict(re.findall(r'^EVBENCH_NATIVE_NEEDS\[([^\]]+)\] = "([^"]*)"', text, re.M))


def test_the_recipe_builds_the_agents_runtimes_as_cmake_names_them():
    text = RECIPE.read_text()
    default = re.search(r'^EVBENCH_NATIVE_CODECS \?\?= "([^"]*)"', text, re.M).group(1).split()
    in_cmake = re.search(r'set\(EVBENCH_ALL_CODECS "([^"]*)"\)', CMAKE.read_text()).group(1)
    assert default == list(runtimes.RUNTIMES) == in_cmake.split(";")
    assert set(_needs(text)) == set(runtimes.RUNTIMES)


class _Fatal(Exception):
    pass


class _Datastore:
    """A stand-in for bitbake's `d` with the recipe's variables and flags."""

    def __init__(self, text: str, codecs: str) -> None:
        self.flags, self.codecs = _needs(text), codecs

    def getVar(self, name: str) -> str | None:
        return self.codecs if name == "EVBENCH_NATIVE_CODECS" else None

    def getVarFlag(self, name: str, flag: str) -> str | None:
        return self.flags.get(flag) if name == "EVBENCH_NATIVE_NEEDS" else None

    def getVarFlags(self, name: str) -> dict[str, str]:
        return self.flags


def _fatal(message: str) -> None:
    raise _Fatal(message)


def test_depends_follow_the_chosen_runtimes_and_an_unknown_one_stops_the_parse():
    text = RECIPE.read_text()
    source = re.search(r"^def evbench_native_depends\(d\):\n(?:    .*\n|\n)+", text, re.M).group(0)
    namespace: dict = {"bb": types.SimpleNamespace(fatal=_fatal)}
    exec(source, namespace)  # the recipe's own Python, as bitbake would run it
    depends = namespace["evbench_native_depends"]
    assert depends(_Datastore(text, "c:cjson c:nanopb")) == "cjson nanopb nanopb-native"
    assert 'DEPENDS = "${@evbench_native_depends(d)}"' in text
    with pytest.raises(_Fatal, match="unknown runtime c:yaml"):
        depends(_Datastore(text, "c:protobuf-c c:yaml"))


def test_the_image_installs_the_harnesses_only_when_asked():
    image = IMAGE.read_text()
    assert 'EVBENCH_NATIVE_CODECS ??= ""' in image
    assert "${EVBENCH_NATIVE}" in image
    assert "'evbench-native' if d.getVar('EVBENCH_NATIVE_CODECS').strip()" in image
    # The recipe installs where the agent looks (evbench_agent.native.runtimes).
    assert "/usr/libexec/evbench-native" in [str(d) for d in runtimes.search_dirs()]
    assert '"${libexecdir}/evbench-native"' in RECIPE.read_text()


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


def test_protoc_c_names_and_the_proto2_form_follow_their_rules():
    # protoc-c 1.4: packages joined by "__", a capital after a lower-case letter starts a word
    # (as in the .pb-c.h it writes: evbench__seed__backend_data_packet__descriptor)
    seed = native_types.protobuf_c_name("evbench.seed.BackendDataPacket")
    assert seed == "evbench__seed__backend_data_packet"
    assert native_types.protobuf_c_name("evbench.shapes.Vector3") == "evbench__shapes__vector3"
    # the proto2 form keeps presence and packing and refuses what it cannot carry
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
    text = 'syntax = "proto3";\nmessage M {\n  optional double a = 1;\n  int32 b = 2;\n}\n'
    with pytest.raises(ValueError, match="scalar b has no presence"):
        native_types.proto2_form(text, "m.proto")
    without_presence = 'syntax = "proto3";\nmessage M {\n  int32 b = 2;\n}\n'
    assert native_types.proto2_form(without_presence, "m") is None
