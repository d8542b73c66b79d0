"""No import cycle among memory's modules, imports under TYPE_CHECKING and inside functions included.

A cycle hidden behind ``TYPE_CHECKING`` is still a knot: the two modules can only be understood,
tested and changed together. import-linter's layers contracts (.importlinter) keep the order of
the sub-packages and of the modules inside memory.store and memory.jobs; this test catches any
cycle those contracts do not name.
"""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Every strongly connected set of more than one module (or a module importing itself),
    each as a cycle through its members (Tarjan's algorithm, iterative)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & modules) for m in sorted(modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(_cycle_through(sorted(component), edges))
    return found


def _cycle_through(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """One cycle inside a strongly connected component, for the failure message."""
    members = set(component)
    path = [component[0]]
    seen = {component[0]}
    while True:
        nxt = next(n for n in edges[path[-1]] if n in members)
        if nxt in seen:
            return [*path[path.index(nxt) :], nxt]
        path.append(nxt)
        seen.add(nxt)


def test_no_import_cycle_among_memory_modules() -> None:
    graph = grimp.build_graph("memory", cache_dir=None)
    assert graph.find_modules_directly_imported_by("memory.store.stores"), (
        "the graph must hold memory's imports"
    )
    cycles = _cycles(graph, set(graph.modules))
    assert not cycles, "import cycles in memory/:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert _cycles(graph, {"pkg", "pkg.a", "pkg.b", "pkg.c"}) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
