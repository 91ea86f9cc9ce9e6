"""Import a bench script as a module, as it runs: its folder first on the path while it loads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path) -> ModuleType:
    """``path`` imported under its stem; its sibling modules (``words``) shadow the package's meanwhile."""
    name, folder = path.stem, str(path.parent)
    saved = {n: sys.modules.pop(n) for n in [p.stem for p in path.parent.glob("*.py")] if n in sys.modules}
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
        for sibling in [p.stem for p in path.parent.glob("*.py")]:
            sys.modules.pop(sibling, None)
        sys.modules.update(saved)
    return module
