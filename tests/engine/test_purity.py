import subprocess
import sys


def test_engine_never_imports_a_terminal_package():
    code = (
        "import importlib, pkgutil, sys, engine\n"
        "for m in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [m for m in ('textual', 'rich', 'plotext', 'textual_plotext', 'spectui', "
        "'matplotlib') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_purity_check_reaches_subpackages():
    code = (
        "import pkgutil, engine\n"
        "print(sorted(m.name for m in pkgutil.walk_packages(engine.__path__, 'engine.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "engine.cost.roofline" in out.stdout


def test_presets_and_exact_load_without_pandas():
    code = "import sys, engine.presets, engine.simulate.exact; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
