"""The import graph (grimp's, counting lazy and TYPE_CHECKING imports: a lazy import that dodges
a circle is still one): no circles of modules or packages, the core imports neither agent nor
host, the agent never the host, the host only the public APIs, a transport (evbench.boards)
nothing else of the host. Each check is also run on small hand-built graphs, to fail.
"""

import ast
import importlib.util
import re
from pathlib import Path

import grimp
import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (ROOT / "agent" / "src", ROOT / "host_tools" / "src")
AGENT, HOST, CORE = "evbench_agent", "evbench", "evbench_core"
TRANSPORTS = "evbench.boards"

Graph = dict[str, set[str]]


def _modules(source: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((source / package).rglob("*.py")):
        parts = path.relative_to(source).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(*packages: str) -> Graph:
    """module -> the modules of ours it imports, for the installed packages named."""
    found = grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)
    return {name: set(found.find_modules_directly_imported_by(name)) for name in found.modules}


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module, as scipy finds them."""
    nodes = sorted(set(graph).union(*graph.values()))
    index = {node: number for number, node in enumerate(nodes)}
    edges = [(index[a], index[b]) for a, imported in graph.items() for b in imported]
    rows, columns = [a for a, _ in edges], [b for _, b in edges]
    matrix = csr_array(([1] * len(edges), (rows, columns)), shape=(len(nodes), len(nodes)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for node, label in zip(nodes, labels, strict=True):
        groups.setdefault(int(label), []).append(node)
    return sorted(group for group in groups.values() if len(group) > 1)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crossings(graph: Graph, importer: str, forbidden: str, allowed: str = "") -> list[str]:
    """`a -> b` for each `importer` module importing one in `forbidden` (not in `allowed`)."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if _within(module, importer)
        for target in targets
        if _within(target, forbidden) and not (allowed and _within(target, allowed))
    )


def package_circles(graph: Graph) -> list[list[str]]:
    """Circles of sibling packages (or modules) at every level, each child with all it holds as
    one node: `a.x.m -> a.y.n` and `a.y.k -> a.x.j` make one of `a.x` and `a.y`."""
    packages = {module.rsplit(".", 1)[0] for module in graph if "." in module}
    found: list[list[str]] = []
    for package in sorted(packages):
        prefix = package + "."

        def child(module: str, prefix: str = prefix) -> str | None:
            if not module.startswith(prefix):
                return None
            return prefix + module[len(prefix) :].split(".")[0]

        children: Graph = {}
        for module, targets in graph.items():
            if (source := child(module)) is None:
                continue
            children.setdefault(source, set()).update(
                target for target in map(child, targets) if target and target != source
            )
        found += circles(children)
    return found


def _declared_all(path: Path) -> list[str] | None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, (list, tuple)), f"{path}: __all__ is not a list"
            return list(value)
    return None


def public_api(source: Path, package: str) -> dict[str, set[str]]:
    """The public modules of `package` (each step from the top listed in its parent's
    `__all__`), each with the names its `__all__` exports."""
    paths = _modules(source, package)
    exports = {module: set(_declared_all(path) or ()) for module, path in paths.items()}
    public: dict[str, set[str]] = {}
    todo = [package]
    while todo:
        module = todo.pop()
        public[module] = exports[module]
        todo += [f"{module}.{name}" for name in exports[module] if f"{module}.{name}" in paths]
    return public


def uses_of(path: Path, module: str, agent: dict[str, Path]) -> set[tuple[str, str | None]]:
    """(agent module, None) for each agent module `module` imports, (agent module, name) for a
    name it imports from or reads off one (`m.name` after `from a import m`, or `a.m.name`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    bound: dict[str, str] = {}  # local name -> the agent module it is
    used: set[tuple[str, str | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in agent:
                    used.add((alias.name, None))
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            origin = _absolute(node, module, is_package)
            if origin not in agent:
                continue
            for alias in node.names:
                name = f"{origin}.{alias.name}"
                if name in agent:
                    used.add((name, None))
                    bound[alias.asname or alias.name] = name
                else:
                    used.add((origin, alias.name))

    def resolve(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Attribute) and (outer := resolve(node.value)):
            inner = f"{outer}.{node.attr}"
            return inner if inner in agent else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (owner := resolve(node.value)):
            inner = f"{owner}.{node.attr}"
            used.add((inner, None) if inner in agent else (owner, node.attr))
    return used


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def missing_exports(source: Path, package: str) -> list[str]:
    """`module.name` for each name in a public `__all__` that is not defined, imported or a
    submodule (ruff checks modules, not packages' `__init__`)."""
    paths = _modules(source, package)
    missing = []
    for module, names in public_api(source, package).items():
        defined = _defined(paths[module])  # parsed once per module, not once per name
        missing += [f"{module}.{name}" for name in names if name not in defined]
    return sorted(name for name in missing if name not in paths)


def private_uses(agent_source: Path, agent: str, host_source: Path, host: str) -> list[str]:
    """`host module -> agent.module[.name]` for each use of the agent outside its public API."""
    agent_paths = _modules(agent_source, agent)
    public = public_api(agent_source, agent)
    found = set()
    for module, path in _modules(host_source, host).items():
        for target, name in uses_of(path, module, agent_paths):
            if target not in public:
                found.add(f"{module} -> {target}")
            elif name is not None and name not in public[target] and not name.startswith("__"):
                found.add(f"{module} -> {target}.{name}")
    return sorted(found)


# -- the project ---------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    # from this checkout's editable installs
    for package, source in ((CORE, SOURCES[0]), (AGENT, SOURCES[0]), (HOST, SOURCES[1])):
        spec = importlib.util.find_spec(package)
        assert spec and spec.origin == str(source / package / "__init__.py"), spec
    return import_graph(CORE, AGENT, HOST)


def test_the_checker_sees_both_packages_and_their_lazy_imports(graph):
    assert {f"{CORE}.results", f"{AGENT}.cli", f"{HOST}.boards.base"} <= set(graph)
    # run.py imports deploy inside a function (_run_remote): a lazy edge, and it counts.
    assert f"{HOST}.usecases.deploy" in graph[f"{HOST}.commands.run"]


@pytest.mark.parametrize("find", [circles, package_circles], ids=["modules", "packages"])
def test_no_import_circles(graph, find):
    found = find(graph)
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("importer", "forbidden", "allowed"),
    [
        pytest.param(AGENT, HOST, "", id="agent-host"),
        # The core is below both (the board installs it with the agent, the host reads
        # results with it): neither may be needed to import it.
        pytest.param(CORE, AGENT, "", id="core-agent"),
        pytest.param(CORE, HOST, "", id="core-host"),
        # Not a command, the CLI, nor a use case: commands -> domain -> transports.
        pytest.param(TRANSPORTS, HOST, TRANSPORTS, id="transports-host"),
    ],
)
def test_no_import_crosses_a_layer_upwards(graph, importer, forbidden, allowed):
    assert crossings(graph, importer, forbidden, allowed) == []


def test_the_host_uses_only_the_core_s_and_the_agent_s_public_api_whose_names_exist():
    # The agent's public API is what the host cannot do without (agent/README.md says why);
    # everything shared belongs in the core.
    found = private_uses(SOURCES[0], AGENT, SOURCES[1], HOST)
    found += private_uses(SOURCES[0], CORE, SOURCES[1], HOST)
    assert found == [], (
        "the host uses the core or the agent outside its public API (add the name to the "
        "module's __all__ and the module to agent/README.md's table, or keep it inside): "
        + "; ".join(found)
    )
    # and every name the public API lists exists
    assert missing_exports(SOURCES[0], AGENT) == []
    assert missing_exports(SOURCES[0], CORE) == []


@pytest.mark.parametrize(
    ("package", "heading", "known"),
    [
        pytest.param(AGENT, "Public API", {"command_line.py", "link/framing.py"}, id="agent"),
        pytest.param(CORE, "The core", {"errors.py", "analysis/stats.py"}, id="core"),
    ],
)
def test_the_public_api_is_the_one_agent_readme_lists(package, heading, known):
    readme = (ROOT / "agent" / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {path for row in rows for path in re.findall(r"`([\w/]+(?:\.py|/))`", row)}
    paths = {
        module.removeprefix(package + ".").replace(".", "/")
        + ("/" if (SOURCES[0] / module.replace(".", "/")).is_dir() else ".py")
        for module in public_api(SOURCES[0], package)
        if module != package
    }
    assert known <= paths
    assert listed == paths, f"README only: {listed - paths}; __all__ only: {paths - listed}"


# -- the checker on small hand-built packages ----------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_every_kind_of_import_between_our_modules_is_an_edge(tmp_path, monkeypatch):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\n",
            "pkg/a.py": "import json\nfrom pkg import b\nA = 1\n",
            "pkg/b.py": "def later():\n    from pkg.a import A\n    return A\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n",
            "pkg/sub/__init__.py": "from .x import X\n",
            "pkg/sub/x.py": "from ..c import TYPE_CHECKING\nX = 1\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # By hand: a submodule imported by name, a name from a module (an edge to the module),
    # a function's import, a type checker's, relative ones; json is not ours.
    assert import_graph("pkg") == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.a"},
        "pkg.c": {"pkg.a"},
        "pkg.sub": {"pkg.sub.x"},
        "pkg.sub.x": {"pkg.c"},
    }


def test_circles_of_modules_and_of_packages_are_found():
    # Worked by hand: a <-> b (two modules), and sub.x -> y -> z -> sub.x (three).
    graph = {
        "pkg": set(),
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.a"},
        "pkg.c": {"pkg.a"},
        "pkg.sub.x": {"pkg.y"},
        "pkg.y": {"pkg.z"},
        "pkg.z": {"pkg.sub.x"},
    }
    assert circles(graph) == [["pkg.a", "pkg.b"], ["pkg.sub.x", "pkg.y", "pkg.z"]]
    assert circles({"pkg.a": {"pkg.b"}, "pkg.b": set(), "pkg.c": {"pkg.a"}}) == []
    # buses.budget -> link.framing, link.connection -> buses.cost: no module circle, but
    # the packages buses and link need each other.
    graph = {
        "pkg.errors": set(),
        "pkg.buses.budget": {"pkg.link.framing", "pkg.errors"},
        "pkg.buses.cost": {"pkg.errors"},
        "pkg.link.framing": {"pkg.errors"},
        "pkg.link.connection": {"pkg.buses.cost"},
    }
    assert circles(graph) == []
    assert package_circles(graph) == [["pkg.buses", "pkg.link"]]
    # With the shared piece moved (the connection no longer needs buses), none is left.
    graph["pkg.link.connection"] = {"pkg.link.framing"}
    assert package_circles(graph) == []


def test_an_upward_import_and_a_transport_importing_a_command_are_found():
    graph = {
        "agentpkg.core": {"hostpkg.boards.link"},
        "hostpkg.commands.run": {"hostpkg.boards.link"},
        "hostpkg.boards.link": {"hostpkg.commands.run", "hostpkg.boards"},
    }
    assert crossings(graph, "agentpkg", "hostpkg") == ["agentpkg.core -> hostpkg.boards.link"]
    assert crossings(graph, "hostpkg.boards", "hostpkg", allowed="hostpkg.boards") == [
        "hostpkg.boards.link -> hostpkg.commands.run"
    ]


def test_a_use_outside_the_public_api_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "agentpkg/__init__.py": '__all__ = ["pub", "sub"]\n',
            "agentpkg/pub.py": 'A = B = C = 1\n__all__ = ["A"]\n',
            "agentpkg/priv.py": "",
            "agentpkg/sub/__init__.py": '__all__ = ["shown"]\n',
            "agentpkg/sub/shown.py": 'X = Y = Z = 1\n__all__ = ["X"]\n',
            "agentpkg/sub/hidden.py": "",
            "hostpkg/__init__.py": "",
            "hostpkg/fine.py": (
                "import agentpkg\n"
                "from agentpkg import pub\n"
                "from agentpkg.pub import A\n"
                "from agentpkg.sub.shown import X\n"
                "print(agentpkg.__file__, pub.A, agentpkg.sub.shown.X)\n"
            ),
            "hostpkg/bad.py": (
                "from agentpkg import priv, pub\n"
                "from agentpkg.pub import A, B\n"
                "import agentpkg.sub.shown as shown\n"
                "def later():\n"
                "    import agentpkg\n"
                "    from agentpkg.sub import hidden\n"
                "    return pub.C, shown.X, shown.Y, agentpkg.sub.shown.Z\n"
            ),
        },
    )
    assert public_api(tmp_path, "agentpkg") == {
        "agentpkg": {"pub", "sub"},
        "agentpkg.pub": {"A"},
        "agentpkg.sub": {"shown"},
        "agentpkg.sub.shown": {"X"},
    }
    # By hand: private modules (priv; sub.hidden, inside a function), names left out of
    # __all__ (B imported; C, Y, Z read as attributes); pub.A, shown.X, agentpkg.__file__ fine.
    assert private_uses(tmp_path, "agentpkg", tmp_path, "hostpkg") == [
        "hostpkg.bad -> agentpkg.priv",
        "hostpkg.bad -> agentpkg.pub.B",
        "hostpkg.bad -> agentpkg.pub.C",
        "hostpkg.bad -> agentpkg.sub.hidden",
        "hostpkg.bad -> agentpkg.sub.shown.Y",
        "hostpkg.bad -> agentpkg.sub.shown.Z",
    ]
    assert missing_exports(tmp_path, "agentpkg") == []
    (tmp_path / "agentpkg/__init__.py").write_text('__all__ = ["pub", "sub", "gone"]\n')
    (tmp_path / "agentpkg/pub.py").write_text('A = 1\n__all__ = ["A", "B"]\n')
    assert missing_exports(tmp_path, "agentpkg") == ["agentpkg.gone", "agentpkg.pub.B"]
