"""meta-evbench and the kas files, checked offline (the README says how to run bitbake's parse):
the agent recipe's RDEPENDS against the agent's imports (ast, oe-core's python3 manifest in
tests/data/yocto), its version, the kas schema, oelint-adv, the kernel's CAN fragment,
`systemd-analyze verify` of the unit and the can0 file in a real systemd-networkd.
"""

import ast
import fnmatch
import importlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, require, require_command
from test_release import version_line

from evbench_agent import codecs

LAYER = ROOT / "meta-evbench"
AGENT_PACKAGE = ROOT / "agent" / "src" / "evbench_agent"
#: The core, in the agent's wheel beside it: its imports are the recipe's too.
CORE_PACKAGE = ROOT / "agent" / "src" / "evbench_core"
#: The packages of the agent's wheel: importing one another needs no recipe.
OWN_PACKAGES = (AGENT_PACKAGE.name, CORE_PACKAGE.name)
RECIPE_DIR = LAYER / "recipes-evbench" / "evbench-agent"
UNIT = RECIPE_DIR / "files" / "evbench-agent.service"
IMAGE = LAYER / "recipes-core" / "images" / "evbench-image.bb"
MANIFEST = ROOT / "tests" / "data" / "yocto" / "python3-manifest.scarthgap.json"
SYSTEM_UNITS = Path("/usr/lib/systemd/system")
KAS_FILES = [ROOT / "kas.yml", *sorted((ROOT / "kas").glob("*.yml"))]
CAN_NETWORK = LAYER / "recipes-connectivity" / "evbench-can" / "files" / "80-evbench-can0.network"
CAN_RECIPE = CAN_NETWORK.parent.parent / "evbench-can_0.1.0.bb"
NETWORKD = Path("/lib/systemd/systemd-networkd")

#: Third-party modules (and submodules) the agent's own code imports, and their scarthgap
#: package. A codec declares its library's in its `@codec(..., yocto=...)` (evbench_agent/
#: codecs/), and `packages_needed` adds them.
THIRD_PARTY = {
    "google.protobuf": "python3-protobuf",
    "psutil": "python3-psutil",
    "serial": "python3-pyserial",
}
#: Guarded imports (a pip-installed agent without them gives a one-line error) the image
#: carries all the same: issue 19 puts pyserial in RDEPENDS, for a UART link when the
#: network is down.
IMAGE_REQUIRES = {"serial"}
#: Modules compiled into CPython 3.12 (sys.builtin_module_names of an unpatched build;
#: Modules/Setup.bootstrap): no file in the manifest, they come with python3-core.
BUILTIN = {
    "_abc", "_ast", "_codecs", "_collections", "_functools", "_imp", "_io", "_locale",
    "_operator", "_signal", "_sre", "_stat", "_string", "_symtable", "_thread",
    "_tokenize", "_tracemalloc", "_typing", "_warnings", "_weakref", "atexit",
    "builtins", "errno", "faulthandler", "gc", "itertools", "marshal", "posix", "pwd",
    "sys", "time",
}  # fmt: skip
#: Modules of Python 3.10 and 3.11 that scarthgap's 3.12 renamed, imported under `except
#: ImportError` after the 3.12 name (evbench_core.digests: `_sha256` is `_sha2`, python3-crypt).
OLDER_PYTHON_ONLY = {"_sha256"}
#: Calls whose first string argument is a module imported at run time (a computed name is
#: invisible here; the suites registry's are the agent's own).
IMPORT_CALLS = {"import_module", "__import__"}


@dataclass
class Imports:
    required: set[str] = field(default_factory=set)
    #: Imported under `except ImportError`, or a codec's module (imported when used).
    optional: set[str] = field(default_factory=set)


def _catches_import_error(node: ast.Try) -> bool:
    # Only these: an import under a broader `except` is still counted as required.
    names = {"ImportError", "ModuleNotFoundError"}
    for handler in node.handlers:
        caught = handler.type
        kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if caught is None or any(isinstance(k, ast.Name) and k.id in names for k in kinds):
            return True
    return False


def _walk(node: ast.AST, optional: bool, found: Imports) -> None:
    if isinstance(node, ast.If) and "TYPE_CHECKING" in (
        getattr(node.test, "id", None),  # an ast.Name
        getattr(node.test, "attr", None),  # an ast.Attribute
    ):
        for child in node.orelse:  # the TYPE_CHECKING branch never runs
            _walk(child, optional, found)
        return
    if isinstance(node, ast.Try):
        guarded = optional or _catches_import_error(node)
        for child in node.body:
            _walk(child, guarded, found)
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            _walk(child, optional, found)
        return
    target = found.optional if optional else found.required
    if isinstance(node, ast.Import):
        target.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        # `from a import b` may import the submodule a.b: keep the longer name,
        # the resolver falls back to the longest prefix it knows.
        target.update(f"{node.module}.{alias.name}" for alias in node.names)
    elif isinstance(node, ast.Call):
        name = getattr(node.func, "attr", getattr(node.func, "id", None))
        first = node.args[0] if node.args else None
        module = first.value if isinstance(first, ast.Constant) else None
        if name in IMPORT_CALLS and isinstance(module, str) and module:
            target.add(module)
    for child in ast.iter_child_nodes(node):
        _walk(child, optional, found)


def scan_imports(package_dir: Path) -> Imports:
    found = Imports()
    for path in sorted(package_dir.rglob("*.py")):
        _walk(ast.parse(path.read_text(), str(path)), False, found)
    own = (package_dir.name, *OWN_PACKAGES, "__future__")
    for names in (found.required, found.optional):
        names.difference_update({n for n in names if n.split(".")[0] in own})
    return found


class Manifest:
    """openembedded-core's split of the standard library into python3-* packages."""

    PREFIX = "${libdir}/python${PYTHON_MAJMIN}/"

    def __init__(self, path: Path) -> None:
        text = "".join(
            line for line in path.read_text().splitlines(True) if not line.startswith("#")
        )
        self.patterns = [
            (item[len(self.PREFIX) :], f"python3-{name}")
            for name, entry in json.loads(text).items()
            for item in entry["files"]
            if item.startswith(self.PREFIX)
        ]

    def package_of(self, module: str) -> str | None:
        """The package holding `module` (or its longest known parent), or None."""
        parts = module.split(".")
        if parts[0] in BUILTIN:
            return "python3-core"
        for length in range(len(parts), 0, -1):
            stem = "/".join(parts[:length])
            candidates = [f"{stem}.py", stem, f"{stem}/__init__.py"]
            if length == 1:
                candidates.append(f"lib-dynload/{stem}.cpython-312-aarch64-linux-gnu.so")
            packages = {
                package
                for pattern, package in self.patterns
                for candidate in candidates
                if fnmatch.fnmatchcase(candidate, pattern)
            }
            if len(packages) > 1:
                raise AssertionError(f"{module} is in several packages: {sorted(packages)}")
            if packages:
                return packages.pop()
        return None


def packages_needed(imports: Imports, manifest: Manifest) -> dict[str, set[str]]:
    """Standard-library modules and required third-party ones are RDEPENDS (a codec's
    standard-library module too: the interpreter always has it); the optional third-party
    ones that exist in scarthgap are RRECOMMENDS; "unknown" those neither the manifest nor
    THIRD_PARTY knows (decide, then add them)."""
    needs: dict[str, set[str]] = {"RDEPENDS": set(), "RRECOMMENDS": set(), "unknown": set()}
    # THIRD_PARTY and each Python codec's module with its declared package
    known = {c.module: c.yocto for c in codecs.CODECS.values() if c.distribution is not None}
    known |= THIRD_PARTY
    for module in sorted(imports.required | imports.optional):
        # The key of `known` that `module` belongs to (the longest), if any.
        keys = [key for key in known if module == key or module.startswith(f"{key}.")]
        if (key := max(keys, key=len, default=None)) is not None:
            package = known[key]
            if module in imports.required and package is None:
                needs["unknown"].add(f"{module} (required, but no scarthgap package)")
            elif package is not None:
                required = module in imports.required or key in IMAGE_REQUIRES
                needs["RDEPENDS" if required else "RRECOMMENDS"].add(package)
        elif module.split(".")[0] in OLDER_PYTHON_ONLY and module not in imports.required:
            continue
        elif (package := manifest.package_of(module)) is not None:
            needs["RDEPENDS"].add(package)
        else:
            needs["unknown"].add(module)
    needs["RRECOMMENDS"] -= needs["RDEPENDS"]
    return needs


def recipe_values(text: str, variable: str) -> set[str]:
    joined = re.sub(r"\\\n", " ", text)
    pattern = rf'^{re.escape(variable)}\s*[?+]?=\s*"([^"]*)"'
    return {word for value in re.findall(pattern, joined, re.M) for word in value.split()}


def agent_recipe() -> Path:
    recipes = sorted(RECIPE_DIR.glob("evbench-agent_*.bb"))
    assert len(recipes) == 1, f"expected one evbench-agent recipe, found {recipes}"
    return recipes[0]


def rdepends_problems(package_dir: Path, manifest_path: Path) -> list[str]:
    """What the agent recipe lacks or has too many of, one line each; empty when exact."""
    imports = scan_imports(package_dir)
    core = scan_imports(CORE_PACKAGE)
    imports.required |= core.required
    imports.optional |= core.optional | {declared.module for declared in codecs.CODECS.values()}
    needs = packages_needed(imports, Manifest(manifest_path))
    text = agent_recipe().read_text()
    problems = [
        f"unknown module {m}: a codec's library goes in its @codec(yocto=...), "
        "any other third-party module in THIRD_PARTY, an interpreter built-in in BUILTIN"
        for m in needs.pop("unknown")
    ]
    for name, wanted in needs.items():
        variable = f"{name}:${{PN}}"
        have = recipe_values(text, variable)
        problems += [f"{variable} lacks {p}" for p in sorted(wanted - have)]
        problems += [f"{variable} has {p}, which no import needs" for p in sorted(have - wanted)]
    return problems


@pytest.fixture(scope="module")
def manifest_path() -> Path:
    require(MANIFEST.is_file(), f"the python3 manifest {MANIFEST}")
    return MANIFEST


def test_the_recipe_has_the_agents_version_and_rdepends_exactly_its_imports(manifest_path):
    assert rdepends_problems(AGENT_PACKAGE, manifest_path) == []
    version = version_line(AGENT_PACKAGE / "__init__.py")
    assert agent_recipe().name == f"evbench-agent_{version}.bb"


def test_imports_added_without_their_package_fail(tmp_path: Path, manifest_path: Path) -> None:
    # A module-level import, an import call inside a function, and an unknown module.
    copy = tmp_path / "evbench_agent"
    shutil.copytree(AGENT_PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "new_feature.py").write_text("import sqlite3\nfrom xml.etree import ElementTree\n")
    (copy / "late.py").write_text(
        "import importlib\n\ndef f():\n"
        "    importlib.import_module('mmap')\n    import evbench_scratch\n"
    )
    problems = rdepends_problems(copy, manifest_path)
    lacking = {f"RDEPENDS:${{PN}} lacks python3-{name}" for name in ("sqlite3", "xml", "mmap")}
    assert lacking <= set(problems), problems
    assert any(p.startswith("unknown module evbench_scratch") for p in problems), problems


def test_guarded_and_type_checking_imports_are_not_rdepends(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "try:\n    import ujson\nexcept ImportError:\n    ujson = None\n"
        "if TYPE_CHECKING:\n    import sqlite3\n"
    )
    found = scan_imports(package)
    assert found.required == {"typing.TYPE_CHECKING"}
    assert found.optional == {"ujson"}


def test_manifest_maps_modules_to_their_packages(manifest_path: Path) -> None:
    manifest = Manifest(manifest_path)
    assert manifest.package_of("json") == "python3-json"
    assert manifest.package_of("collections.abc.Callable") == "python3-core"
    assert manifest.package_of("random") == "python3-math"
    assert manifest.package_of("math") == "python3-core"  # lib-dynload/math.*.so
    assert manifest.package_of("no_such_module") is None
    # A standard-library codec declares the manifest's package for its module.
    stdlib = [c for c in codecs.CODECS.values() if c.distribution is None]
    assert stdlib  # json at least
    for declared in stdlib:
        assert declared.yocto == manifest.package_of(declared.module), declared.name


def test_kas_files_validate_against_the_kas_schema_and_pin_every_repository() -> None:
    try:
        from jsonschema.validators import validator_for

        from kas import configschema
    except ImportError as error:
        require(False, f"the Python package {error.name} (kas, in requirements-dev.txt)")
    # As kas itself validates: its shipped schema, with the validator it declares.
    validator = validator_for(configschema.CONFIGSCHEMA)(configschema.CONFIGSCHEMA)
    names = {path.relative_to(ROOT).as_posix() for path in KAS_FILES}
    assert {"kas.yml", "kas/beagleplay.yml", "kas/qemuarm64.yml"} <= names
    errors = [
        f"{path.name}: {error.json_path}: {error.message}"
        for path in KAS_FILES
        for error in validator.iter_errors(yaml.safe_load(path.read_text()))
    ]
    assert errors == []
    # The check can fail: a misspelt key.
    document = yaml.safe_load((ROOT / "kas.yml").read_text())
    document["repos"]["meta-ti"]["layer"] = document["repos"]["meta-ti"].pop("layers")
    assert list(validator.iter_errors(document)) != []
    # Every repository is pinned to a commit.
    for path in KAS_FILES:
        for name, repo in (yaml.safe_load(path.read_text()).get("repos") or {}).items():
            if repo and "url" in repo:
                assert re.fullmatch(r"[0-9a-f]{40}", repo.get("commit", "")), (path.name, name)
    main = yaml.safe_load((ROOT / "kas.yml").read_text())
    assert main["distro"] and main["machine"] == "am62xx-evm"
    assert main["repos"]["evbench"] == {"layers": {"meta-evbench": None}}  # this checkout
    assert 'INIT_MANAGER = "systemd"' in "".join(main["local_conf_header"].values())


def _venv_command(name: str) -> str:
    path = Path(sys.executable).parent / name
    require(path.exists(), f"the command {name!r}")
    return str(path)


def _oelint(layer: Path) -> subprocess.CompletedProcess:
    files = sorted(
        str(p) for p in layer.rglob("*") if p.suffix in {".bb", ".bbappend", ".bbclass", ".conf"}
    )
    assert len(files) >= 3, files
    # oelint-adv reads .oelint.cfg (the justified suppressions) from its working directory.
    command = [_venv_command("oelint-adv"), "--quiet", "--release", "scarthgap", *files]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_oelint_reports_nothing_and_finds_a_style_fault(tmp_path: Path) -> None:
    result = _oelint(LAYER)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")
    layer = tmp_path / "meta-evbench"
    shutil.copytree(LAYER, layer)
    recipe = layer / agent_recipe().relative_to(LAYER)
    recipe.write_text(recipe.read_text() + "\ndo_install:append() {\n    mkdir -p ${D}/opt\n}\n")
    result = _oelint(layer)
    assert result.returncode != 0
    assert "oelint.task.nomkdir" in result.stdout + result.stderr


def _layer_files() -> list[Path]:
    return sorted(p for p in LAYER.rglob("*") if p.suffix in (".bb", ".bbappend", ".conf", ".inc"))


def test_layer_lines_fit_the_style_guide_and_its_readme_names_a_maintainer() -> None:
    # The OpenEmbedded style guide asks for readable lines: the layer keeps to 100 characters.
    long_lines = [
        f"{path.relative_to(ROOT)}:{number}: {len(line)} characters"
        for path in _layer_files()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if len(line) > 100
    ]
    assert long_lines == []
    readme = (LAYER / "README.md").read_text()  # yocto-check-layer asks for the contact
    assert re.search(r"^Maintainer[s]?:", readme, re.MULTILINE)


def test_image_inherits_before_its_feature_checks_and_adds_no_image_types() -> None:
    lines: dict[str, int] = {}  # a variable (or `inherit`) -> the first line that sets it
    for number, line in enumerate(IMAGE.read_text().splitlines(), 1):
        match = re.match(r"([A-Za-z_][\w:${}-]*)\s*(\?\?=|\?=|\+=|=|:=|\.=)", line)
        if line.startswith("inherit "):
            lines.setdefault("inherit", number)
        elif match:
            lines.setdefault(match.group(1), number)
    # features_check reads REQUIRED_DISTRO_FEATURES: the class comes first (style guide order).
    assert lines["inherit"] < lines["REQUIRED_DISTRO_FEATURES"]
    # meta-ti's k3 machines (am62xx-evm, beagleplay) list wic.xz and wic.bmap themselves.
    assert "IMAGE_FSTYPES" not in lines


def test_one_place_decides_whether_the_responder_starts_at_boot() -> None:
    # The agent recipe's SYSTEMD_AUTO_ENABLE, driven by EVBENCH_SERVE; no hand-made links.
    texts = {path: path.read_text() for path in _layer_files()}
    assert not [path for path, text in texts.items() if ".target.wants" in text]
    setters = [path for path, text in texts.items() if "SYSTEMD_AUTO_ENABLE" in text]
    assert setters == [agent_recipe()]
    auto_enable = next(
        line for line in texts[agent_recipe()].splitlines() if "SYSTEMD_AUTO_ENABLE" in line
    )
    assert "EVBENCH_SERVE" in auto_enable


def _verify(root: Path, unit: Path) -> subprocess.CompletedProcess:
    command = [require_command("systemd-analyze"), "verify", f"--root={root}", str(unit)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.integration  # the real systemd-analyze
def test_systemd_unit_verifies_in_a_staged_root_and_fails_without_the_agent(tmp_path):
    exec_start = re.search(r"^ExecStart=(.+)$", UNIT.read_text(), re.M)
    assert exec_start and exec_start[1].split()[:2] == ["/usr/bin/evbench-agent", "serve"]
    # A root with this machine's systemd units (the targets the unit names), the unit,
    # and the installed agent's entry point as its ExecStart.
    require(SYSTEM_UNITS.is_dir(), f"systemd's units in {SYSTEM_UNITS}")
    units = tmp_path / "usr" / "lib" / "systemd" / "system"
    shutil.copytree(SYSTEM_UNITS, units, symlinks=True)
    shutil.copy(UNIT, units / UNIT.name)
    binary = tmp_path / "usr" / "bin" / "evbench-agent"
    binary.parent.mkdir(parents=True)
    shutil.copy(_venv_command("evbench-agent"), binary)
    result = _verify(tmp_path, units / UNIT.name)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    binary.unlink()
    result = _verify(tmp_path, units / UNIT.name)
    assert result.returncode != 0
    assert "/usr/bin/evbench-agent" in result.stderr


@pytest.mark.integration  # the real systemd-networkd
def test_can0_network_file_loads_in_systemd_networkd_without_a_word(tmp_path: Path) -> None:
    text = CAN_NETWORK.read_text()
    # What docs/buses.md and the file's own comment promise: CAN FD at 500 k / 2 M on can0.
    assert "Name=can0" in text and "BitRate=500K" in text and "DataBitRate=2M" in text
    require(NETWORKD.exists(), f"systemd-networkd ({NETWORKD})")
    unshare = require_command("unshare")
    # Beside a file with a bad key and value: networkd names both, so it read the files
    # (in name order, ours first), and says nothing of ours.
    shutil.copy(CAN_NETWORK, tmp_path / CAN_NETWORK.name)
    bad = "[Match]\nName=can0\n\n[CAN]\nBitRat=500K\nBitRate=fast\n"
    (tmp_path / "81-bad.network").write_text(bad)
    # In network and mount namespaces of its own (only a loopback) with a new /run holding
    # the files: networkd can touch neither the host nor its system bus.
    script = (
        "mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/network"
        f" && cp {tmp_path}/*.network /run/systemd/network/ && exec timeout 120 {NETWORKD}"
    )
    environment = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_LOG_TARGET": "console"}
    argv = [unshare, "--net", "--mount", "sh", "-c", script]
    said: list[str] = []
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment
    ) as networkd:
        assert networkd.stdout is not None
        for line in networkd.stdout:  # until it has named the bad file twice, or ended
            if "/run/systemd/network/" in line:
                said.append(line.strip())
            if sum("/81-bad.network" in seen for seen in said) == 2:
                break
        networkd.terminate()  # `timeout` passes it on to networkd
        networkd.wait(timeout=60)
    assert len(said) == 2 and all("/81-bad.network" in line for line in said), said
    assert "Unknown key 'BitRat'" in said[0] and "'fast'" in said[1], said


def test_the_image_installs_the_can_recipe_it_names_and_the_codecs_packages() -> None:
    image = IMAGE.read_text()
    # Set in kas.yml's local.conf, not by the image (whose default is empty): the kernel
    # recipes read it too, and a layer that is no BSP changes nothing until asked.
    local_conf = yaml.safe_load((ROOT / "kas.yml").read_text())["local_conf_header"]
    assert 'EVBENCH_BUSES = "evbench-can"' in local_conf["evbench"].splitlines()
    assert 'EVBENCH_BUSES ??= ""' in image and "${EVBENCH_BUSES}" in image
    assert CAN_RECIPE.exists()
    # It adds exactly the codecs' packages the agent does not bring, so each codec's declared
    # package is on the board: with the agent (its RDEPENDS: the standard library's,
    # protobuf) or by the image.
    required = recipe_values(agent_recipe().read_text(), "RDEPENDS:${PN}")
    declared = {c.yocto for c in codecs.CODECS.values() if c.yocto}
    assert recipe_values(image, "EVBENCH_CODECS") == declared - required


def test_recipe_values_reads_the_assignments_worked_out_by_hand() -> None:
    text = 'A = "x \\\n    y"\nA += "z"\n# A = "no"\nAB = "v"\nB ?= "w"\n'
    assert recipe_values(text, "A") == {"x", "y", "z"}
    assert recipe_values(text, "B") == {"w"}


def test_a_codec_whose_package_the_recipe_lacks_fails(monkeypatch, manifest_path) -> None:
    # A codec declared as contributing.md says: its package must reach RRECOMMENDS.
    added = codecs.Codec(
        "scratch", "evbench_scratch", "scratch", codecs.PLAIN, "", None, yocto="python3-scratch"
    )
    monkeypatch.setitem(codecs.CODECS, "scratch", added)
    problems = rdepends_problems(AGENT_PACKAGE, manifest_path)
    assert problems == ["RRECOMMENDS:${PN} lacks python3-scratch"]
    # Declared without a scarthgap recipe, it is simply absent on the board.
    monkeypatch.setitem(codecs.CODECS, "scratch", replace(added, yocto=None))
    assert rdepends_problems(AGENT_PACKAGE, manifest_path) == []


# -- the kernel: the CAN fragment, its appends, the image's module check ------------------

KERNEL_DATA = ROOT / "tests" / "data" / "kernel"
KERNEL_RECIPES = ROOT / "tests" / "data" / "yocto" / "kernel-recipes.txt"
FRAGMENT = LAYER / "recipes-kernel" / "linux" / "files" / "can-isotp.cfg"
#: What the issue asks the fragment to build, by Kconfig symbol (M_CAN is CAN_M_CAN).
WANTED_SYMBOLS = {
    "CAN", "CAN_RAW", "CAN_ISOTP", "CAN_VCAN", "CAN_DEV", "CAN_M_CAN", "CAN_M_CAN_PLATFORM",
}  # fmt: skip


def _data_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("release", ["6.1", "6.12"])
def test_the_fragment_builds_every_can_module_the_issue_names_by_the_kernels_symbols(release):
    # Linux 6.1 and 6.12 bracket the kernels at the pins (linux-yocto 6.6,
    # linux-ti-staging and linux-bb.org 6.6 and 6.12): a symbol in both is in 6.6.
    settings = {}
    for line in _data_lines(FRAGMENT):
        name, equals, value = line.partition("=")
        assert equals and name.startswith("CONFIG_"), line
        settings[name.removeprefix("CONFIG_")] = value
    assert {name for name, value in settings.items() if value == "m"} == WANTED_SYMBOLS
    # symbol -> type, from a recorded Kconfig symbol list
    recorded = KERNEL_DATA / f"can-kconfig-{release}.txt"
    header = recorded.read_text().splitlines()[0]
    assert header.startswith("# CAN Kconfig symbols of Linux ") and "linux-source" in header
    kconfig = dict(line.split()[:2] for line in _data_lines(recorded))
    # A misspelt symbol would be caught below: the issue's short names are not Kconfig's.
    assert "M_CAN" not in kconfig and "CAN_M_CAN" in kconfig
    assert kconfig["CAN_NETLINK"] == "bool"
    for name, value in settings.items():
        assert name in kconfig, f"CONFIG_{name} is no Kconfig symbol of Linux {release}"
        allowed = {"m": {"tristate"}, "y": {"bool", "tristate"}}[value]
        assert kconfig[name] in allowed, f"CONFIG_{name}={value}, but it is a {kconfig[name]}"


def test_each_kernel_append_matches_a_recipe_of_its_layer_at_the_kas_pins() -> None:
    recipes = [line.split() for line in _data_lines(KERNEL_RECIPES)]
    kas = yaml.safe_load((ROOT / "kas.yml").read_text())["repos"]
    pins = {repository: commit for repository, commit, _, _ in recipes}
    assert pins == {name: kas[name]["commit"] for name in pins}  # recorded at the pins
    layer_conf = (LAYER / "conf" / "layer.conf").read_text()
    appends = {}  # each kernel bbappend, and the layer collection whose recipe it appends
    for append in LAYER.rglob("*.bbappend"):
        relative = append.relative_to(LAYER).parts
        appends[append] = relative[1] if relative[0] == "dynamic-layers" else "meta"
    assert {a.name for a in appends} == {
        "linux-yocto_%.bbappend", "linux-ti-staging_%.bbappend", "linux-bb.org_%.bbappend",
    }  # fmt: skip
    for append, layer in appends.items():
        pattern = append.name.removesuffix(".bbappend").replace("%", "*")
        matched = [
            recipe for _, _, recipe_layer, recipe in recipes
            if recipe_layer == layer and fnmatch.fnmatch(recipe.removesuffix(".bb"), pattern)
        ]  # fmt: skip
        assert matched, f"{append.name} appends no recipe of {layer} at the pins"
        # `%` stands for a version: linux-ti-staging_% must not reach the -rt kernel.
        assert all(m.startswith(pattern.split("_")[0] + "_") for m in matched)
        text = append.read_text()
        assert (
            "can-isotp.cfg" in text and "bb.utils.contains('EVBENCH_BUSES', 'evbench-can'" in text
        )
        # An append whose recipe's layer is not in the build stops bitbake's parse: the
        # BSP kernels' appends load only with their layer (BBFILES_DYNAMIC).
        if layer != "meta":
            assert f"{layer}:${{LAYERDIR}}/dynamic-layers/{layer}/" in layer_conf, append


def _can_modules():
    sys.path.insert(0, str(LAYER / "lib"))
    try:
        return importlib.import_module("evbench_layer.can_modules")
    finally:
        sys.path.remove(str(LAYER / "lib"))


def test_evbench_can_recommends_exactly_the_modules_the_image_checks() -> None:
    can_modules = _can_modules()
    wanted = {can_modules.package_of(m) for m in can_modules.NEEDED}
    assert recipe_values(CAN_RECIPE.read_text(), "RRECOMMENDS:${PN}") == wanted
    # Written out by hand: the packages the kernel's module files become.
    assert "kernel-module-m-can-platform" in wanted and "kernel-module-can-isotp" in wanted


def _rootfs(root: Path, modules: list[str], builtin: list[str], with_can: bool) -> str:
    base = root / "usr" / "lib" / "modules" / "6.12.17-ti"
    (base / "kernel" / "net" / "can").mkdir(parents=True)
    for name in modules:
        (base / "kernel" / "net" / "can" / f"{name}.ko.xz").write_bytes(b"")
    (base / "modules.builtin").write_text("".join(f"kernel/net/can/{n}.ko\n" for n in builtin))
    if with_can:
        network = root / "usr" / "lib" / "systemd" / "network"
        network.mkdir(parents=True)
        (network / "80-evbench-can0.network").write_text("[Match]\nName=can0\n")
    return str(root)


def test_the_image_check_names_a_missing_module_and_leaves_other_images_alone(tmp_path):
    can_modules = _can_modules()
    # m_can built in, the rest as modules (with '_' and '-' as the kernel treats them),
    # but no can-isotp: the check names it and its package.
    modules = ["can", "can_raw", "can-dev", "vcan", "m_can_platform"]
    root = _rootfs(tmp_path / "can", modules, ["m_can"], with_can=True)
    assert can_modules.missing(root) == [
        "kernel 6.12.17-ti has no can-isotp (neither kernel-module-can-isotp nor built in)"
    ]
    (tmp_path / "can/usr/lib/modules/6.12.17-ti/kernel/net/can/can-isotp.ko.xz").write_bytes(b"")
    assert can_modules.missing(root) == []
    # An image without evbench-can is none of the check's business.
    assert can_modules.missing(_rootfs(tmp_path / "plain", [], [], with_can=False)) == []
