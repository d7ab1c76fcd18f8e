"""loopdyn's cache folders: ``$LOOPDYN_CACHE_DIR/<kind>``, else ``$XDG_CACHE_HOME/loopdyn/<kind>``
(``~/.cache/loopdyn/<kind>``), else a private folder in the temporary directory; a folder is used only
if it is (or can be made) private to this user and writable. The kinds: ``programs``
(:mod:`loopdyn.constraints.native`) and ``symbolic`` (:mod:`loopdyn.constraints.symbolic_cache`)."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

__all__ = ["cache_dir"]

_LOCK = threading.Lock()


def _candidates(kind: str) -> list[Path]:
    env = os.environ.get("LOOPDYN_CACHE_DIR")
    if env:
        return [Path(env).expanduser() / kind]
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return [Path(xdg) / "loopdyn" / kind, Path(tempfile.gettempdir()) / f"loopdyn-{uid}" / kind]


_DIRS: dict[tuple[Path, ...], Path | None] = {}  # cache_dir() per list of candidates (environment)


def cache_dir(kind: str = "programs") -> Path | None:
    """The writable folder of loopdyn's cache for ``kind`` (``"programs"``: generated programs, the
    module docstring; ``"symbolic"``: :mod:`loopdyn.constraints.symbolic_cache`), or None if there is
    none."""
    candidates = tuple(_candidates(kind))
    with _LOCK:
        if candidates not in _DIRS:
            _DIRS[candidates] = next((d for d in candidates if _writable(d)), None)
        return _DIRS[candidates]


def _writable(folder: Path) -> bool:
    """Whether ``folder`` can hold generated programs: made if missing (private), writable, and — as
    its modules are imported — owned by this user and writable by no one else (a folder another user
    made in the shared temporary directory is refused)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if hasattr(os, "getuid"):
            st = folder.stat()
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return False
        probe = folder / f".probe-{os.getpid()}-{threading.get_ident()}"
        probe.write_text("")
        probe.unlink()
    except OSError:
        return False
    return True
