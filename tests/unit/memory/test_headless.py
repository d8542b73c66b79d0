"""The memory core never imports Textual: the memory core runs headless, under any face."""

import subprocess
import sys


def test_importing_memory_loads_no_textual() -> None:
    code = (
        "import sys, pkgutil, importlib, memory\n"
        "for m in pkgutil.walk_packages(memory.__path__, 'memory.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [n for n in sys.modules if n == 'textual' or n.startswith('textual.')]\n"
        "print(len([n for n in sys.modules if n.startswith('memory.')]))\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 8
