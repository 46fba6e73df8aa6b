"""meta-evbench's evbench-native recipe, read offline (bitbake needs the layers' sources).

Its runtimes must be the agent's and the CMake build's, each with what it needs,
and its DEPENDS function runs here against a stand-in for bitbake's datastore (a
fake: bitbake cannot run in CI). oelint-adv checks it with the whole layer
(tests/test_layer.py::test_oelint_reports_nothing).
"""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from evbench_agent.native import runtimes

RECIPE = ROOT / "meta-evbench" / "recipes-evbench" / "evbench-native" / "evbench-native_0.1.0.bb"
IMAGE = ROOT / "meta-evbench" / "recipes-core" / "images" / "evbench-image.bb"
CMAKE = ROOT / "native" / "CMakeLists.txt"


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


class _Bb:
    @staticmethod
    def fatal(message: str) -> None:
        raise _Fatal(message)


def _depends_function(text: str):
    source = re.search(r"^def evbench_native_depends\(d\):\n(?:    .*\n|\n)+", text, re.M).group(0)
    namespace: dict = {"bb": _Bb}
    exec(source, namespace)  # the recipe's own Python, as bitbake would run it
    return namespace["evbench_native_depends"]


def test_depends_follow_the_chosen_runtimes_and_an_unknown_one_stops_the_parse():
    text = RECIPE.read_text()
    depends = _depends_function(text)
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
