"""Released checkpoints' position settings, kept as data with where each was read.

Each ``configs/<name>.json`` holds the position-related keys of one released checkpoint's
``config.json``, exactly as they stand in a public copy of that file (the ``source``), with the
report or model card that states the same values (``stated_by``, ``None`` where none was found
yet) and the release month. A key the released file does not contain is not stored: the value
then in effect is the config class's default, which :mod:`course_utils.explain` looks up and
labels as such.

:func:`released_config` loads one file; its ``witness`` is the text a check prints.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

__all__ = ["ReleasedConfig", "released_config", "released_config_names", "CONFIG_DIR"]

CONFIG_DIR = pathlib.Path(__file__).resolve().parent / "configs"
_FIELDS = ("checkpoint", "name", "released", "released_source", "stated_by", "source", "config")
_SOURCE_FIELDS = ("repo", "path", "commit")


@dataclasses.dataclass(frozen=True)
class ReleasedConfig:
    """One stored released configuration.

    Attributes
    ----------
    key : str
        The file's stem, ``configs/<key>.json``.
    checkpoint : str
        The checkpoint's hub id, e.g. ``"meta-llama/Llama-3.1-8B"``.
    name : str
        A short display name, e.g. ``"Llama 3.1 8B"``.
    released : str or None
        Month of release, ``"YYYY-MM"`` (``None`` where no document giving it was found yet).
    released_source, stated_by : str or None
        Where the release date and the values are stated (report, model card); ``None`` where
        no such document has been found yet.
    source : dict
        The public copy the values were read from: ``repo``, ``path``, ``commit`` (a git
        commit, or a branch for a Hugging Face hub page, then with its ``url``) and an optional
        ``note``.
    config : dict
        The position-related keys of the released ``config.json``, values verbatim.
    """

    key: str
    checkpoint: str
    name: str
    released: str | None
    released_source: str | None
    stated_by: str | None
    source: dict
    config: dict

    @property
    def witness(self) -> str:
        """``"config: <checkpoint>, data/configs/<key>.json"``."""
        return f"config: {self.checkpoint}, data/configs/{self.key}.json"


def released_config_names() -> list[str]:
    """The keys of every stored configuration, sorted."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def _check_record(key: str, raw: object) -> None:
    where = f"data/configs/{key}.json"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: the file must hold a JSON object")
    missing = [f for f in _FIELDS if f not in raw]
    if missing:
        raise ValueError(f"{where}: missing field(s) {missing}")
    extra = sorted(set(raw) - set(_FIELDS))
    if extra:
        raise ValueError(f"{where}: unknown field(s) {extra}")
    for field in ("checkpoint", "name"):
        if not isinstance(raw[field], str) or not raw[field]:
            raise ValueError(f"{where}: {field} must be a non-empty string")
    if raw["released"] is not None and not re.fullmatch(r"\d{4}-\d{2}", str(raw["released"])):
        raise ValueError(f"{where}: released must be 'YYYY-MM' or null")
    for field in ("released_source", "stated_by"):
        if raw[field] is not None and not isinstance(raw[field], str):
            raise ValueError(f"{where}: {field} must be a string or null")
    source = raw["source"]
    if not isinstance(source, dict) or any(not isinstance(source.get(f), str) for f in _SOURCE_FIELDS):
        raise ValueError(f"{where}: source must give repo, path and commit as strings")
    if not re.fullmatch(r"[0-9a-f]{40}", source["commit"]) and not str(
            source.get("url", "")).startswith("https://huggingface.co/"):
        raise ValueError(f"{where}: source commit must be a 40-hex git commit, or the source a "
                         "hub page with its url")
    if not isinstance(raw["config"], dict) or "model_type" not in raw["config"]:
        raise ValueError(f"{where}: config must be an object with a model_type")


def released_config(key: str) -> ReleasedConfig:
    """Load ``course_utils/data/configs/<key>.json``.

    Raises
    ------
    TypeError
        If ``key`` is not a string.
    ValueError
        If no configuration has that key (the message lists the keys there are), or the file
        lacks a field.
    """
    if not isinstance(key, str) or not key:
        raise TypeError(f"key must be a configuration name (a string), got {key!r:.60}")
    path = CONFIG_DIR / f"{key}.json"
    if not path.is_file():
        raise ValueError(f"key must be one of the stored configurations "
                         f"{released_config_names()}, got {key!r}")
    raw = json.loads(path.read_text())
    _check_record(key, raw)
    return ReleasedConfig(key=key, **{f: raw[f] for f in _FIELDS})
