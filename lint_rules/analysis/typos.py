"""Running the `typos` spell checker: found once, run per configuration, read as JSON."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from lint_rules.rule import ConfigError

if TYPE_CHECKING:  # subprocess is imported when typos runs, not on a run the cache answers
    import subprocess

TYPOS_CONFIG_NAMES = ("typos.toml", "_typos.toml", ".typos.toml")
"""typos' own configuration files, besides ``[tool.typos]`` in pyproject.toml."""
_Key = TypeVar("_Key")

PIPE_INPUT_LIMIT = 4096
"""The longest file list written to typos' standard input: one a pipe holds whole on
every platform (see ``_start_typos``); a longer one goes through a temporary file."""


@dataclass(frozen=True)
class Misspelling:
    """One typos finding: 1-based line, UTF-8 byte offset in that line, the word."""

    line: int
    byte_offset: int
    typo: str
    corrections: tuple[str, ...]


def find_typos() -> Path | None:
    """The typos executable beside the running Python (its venv), else on PATH."""
    name = "typos.exe" if os.name == "nt" else "typos"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    import shutil  # not imported by a run typos does not start for

    found = shutil.which("typos")
    return Path(found) if found is not None else None


def typos_candidates() -> list[Path]:
    """Every path ``find_typos`` may answer with, in its order: beside the running Python,
    then each directory of PATH (what decides which typos runs, for a cache)."""
    name = "typos.exe" if os.name == "nt" else "typos"
    found = [Path(sys.executable).parent / name]
    path = os.environ.get("PATH")
    if path is None:  # as shutil.which: the system's default (both spellings of it)
        path = os.defpath
        if sys.platform != "win32":
            path += os.pathsep + (os.confstr("CS_PATH") or "")
    found.extend(Path(directory) / name for directory in path.split(os.pathsep))
    return found


def typos_config_candidates(directory: Path) -> list[Path]:
    """Every file ``typos_root`` and ``typos_config`` read for ``directory``, at or above it."""
    start = Path(os.path.abspath(directory))
    return [
        candidate / name
        for candidate in (start, *start.parents)
        for name in (*TYPOS_CONFIG_NAMES, "pyproject.toml")
    ]


def run_typos_on_files(paths: Sequence[Path]) -> dict[Path, list[Misspelling]]:
    """typos' findings for ``paths``, one typos run per typos configuration directory.

    typos runs in the directory of the configuration that governs the files with
    paths relative to it, so that its excludes apply (``--force-exclude``); files
    no configuration governs are checked together, from their common directory.
    """
    return start_typos_on_files(paths).result()


class _PendingRuns(Generic[_Key]):
    """typos processes running in the background, each over the files of one folder.

    Each run is ``(process, folder, by_name)``: ``by_name`` maps the names typos reports
    (relative to ``folder``) to the key its findings are filed under. ``result`` reads
    every run once; a run not read (an error, ``cancel``) is killed, never left behind.
    """

    def __init__(self) -> None:
        self._runs: list[tuple[subprocess.Popen[bytes], Path, dict[str, _Key]]] = []
        self._found: dict[_Key, list[Misspelling]] | None = None

    def _cleanup(self) -> None:
        """Remove what the runs read (file lists, copies); called once they are done."""

    def _collect(self, found: dict[_Key, list[Misspelling]]) -> dict[_Key, list[Misspelling]]:
        """The runs' findings added to ``found``; raises ``ConfigError`` if typos failed."""
        if self._found is None:
            runs, self._runs = self._runs, []
            try:
                for process, folder, by_name in runs:
                    stdout, stderr = process.communicate()
                    for name, misspelling in _parse_output(
                        process.returncode, stdout, stderr, folder
                    ):
                        if name in by_name:
                            found.setdefault(by_name[name], []).append(misspelling)
            finally:
                for process, _, _ in runs:
                    if process.poll() is None:
                        process.kill()
                        process.wait()
                self._cleanup()
            self._found = found
        return self._found

    def cancel(self) -> None:
        """Stop the runs not yet read (a batch whose files were all skipped)."""
        for process, _, _ in self._runs:
            if process.poll() is None:
                process.kill()
            process.communicate()
        self._runs = []
        self._cleanup()


class PendingTypos(_PendingRuns[Path]):
    """typos running over a batch of files in the background; ``result`` waits for it.

    Starting it before the rest of the batch's setup lets typos (a separate process)
    run while this one goes on; a missing executable is reported at once.
    """

    def __init__(self) -> None:
        super().__init__()
        self.files: list[Path] = []
        """Temporary file lists to remove once typos is done."""

    def _cleanup(self) -> None:
        self.remove_files()

    def remove_files(self) -> None:
        for file in self.files:
            file.unlink(missing_ok=True)
        self.files = []

    def result(self) -> dict[Path, list[Misspelling]]:
        """The misspellings by path; raises ``ConfigError`` if typos failed."""
        return self._collect({})


def start_typos_on_files(paths: Sequence[Path], early: bool = False) -> PendingTypos:
    """Start typos over ``paths`` (as ``run_typos_on_files``) without waiting for it
    (``early``: for ``start_early``)."""
    roots: dict[Path, Path | None] = {}  # directory -> its typos root, looked up once
    groups: dict[Path | None, list[Path]] = {}
    for path in paths:
        if path.parent not in roots:
            roots[path.parent] = typos_root(path.parent)
        groups.setdefault(roots[path.parent], []).append(path)
    pending = PendingTypos()
    try:
        for root, group in groups.items():
            if root is None:
                root = Path(os.path.commonpath([os.path.abspath(path.parent) for path in group]))
            # In name order: the same files make the same run (``start_early``).
            by_name = dict(sorted((_relative_to(path, root), path) for path in group))
            listing = "".join(name + "\n" for name in by_name)
            if len(listing.encode()) <= PIPE_INPUT_LIMIT:
                process = _start_typos(["--file-list", "-"], root, listing, early)
            else:  # a long list goes through a file: see _start_typos
                list_file = _file_list(listing)
                pending.files.append(list_file)
                process = _start_typos(["--file-list", str(list_file)], root, "", early)
            pending._runs.append((process, root, by_name))
    except BaseException:
        pending.cancel()
        raise
    return pending


def _file_list(listing: str) -> Path:
    import tempfile

    descriptor, name = tempfile.mkstemp(prefix="lint_rules-typos-", suffix=".txt")
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(listing)
    return Path(name)


def run_typos_on_text(path: Path, text: str) -> list[Misspelling]:
    """typos' findings for ``text`` as if it were the file ``path``, with its configuration."""
    return start_typos_on_text(path, text).result()


class PendingText:
    """typos running over one text (a copy in a scratch folder) in the background."""

    def __init__(self, path: Path, text: str) -> None:
        import tempfile  # only for text that is not a file on disk (stdin, an editor, a fix)

        directory = Path(os.path.abspath(path)).parent
        root = typos_root(directory)
        config = typos_config(root) if root is not None else None
        self._scratch = tempfile.TemporaryDirectory(prefix="lint_rules-typos-")
        scratch = Path(self._scratch.name)
        try:
            copy = scratch / (path.name if path.suffix in (".py", ".pyi") else "stdin.py")
            copy.write_bytes(text.encode("utf-8", errors="surrogateescape"))
            arguments = [copy.name] if config is None else ["--config", str(config), copy.name]
            self._process: subprocess.Popen[bytes] | None = _start_typos(arguments, scratch, "")
        except BaseException:
            self._scratch.cleanup()
            raise

    def result(self) -> list[Misspelling]:
        """The misspellings; raises ``ConfigError`` if typos failed."""
        process, self._process = self._process, None
        assert process is not None, "the result was read already"
        try:
            stdout, stderr = process.communicate()
            cwd = Path(self._scratch.name)
            return [found for _, found in _parse_output(process.returncode, stdout, stderr, cwd)]
        finally:
            self._scratch.cleanup()

    def cancel(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.communicate()
        self._scratch.cleanup()


def start_typos_on_text(path: Path, text: str) -> PendingText:
    """typos started on ``text`` as if it were the file ``path``; ``result`` waits for it."""
    return PendingText(path, text)


class PendingTexts(_PendingRuns[int]):
    """typos running once over many texts (copies in one scratch folder) in the background.

    Each text is written where the file it stands for lies relative to the directory of
    its typos configuration (or, without one, as ``PendingText`` names it), so that one
    process per configuration checks every text of a fix pass instead of one each.
    """

    def __init__(self, items: Sequence[tuple[Path, str]]) -> None:
        import tempfile  # only when a fix pass changed texts

        super().__init__()
        self._scratch = tempfile.TemporaryDirectory(prefix="lint_rules-typos-")
        scratch = Path(self._scratch.name)
        self.included: set[int] = set()
        """The indexes of the items checked here (a path given twice is checked once)."""
        roots: dict[Path, Path | None] = {}
        groups: dict[Path | None, list[int]] = {}
        for index, (path, _) in enumerate(items):
            directory = Path(os.path.abspath(path)).parent
            if directory not in roots:
                roots[directory] = typos_root(directory)
            groups.setdefault(roots[directory], []).append(index)
        try:
            for number, (root, indexes) in enumerate(groups.items()):
                config = typos_config(root) if root is not None else None
                folder = scratch / str(number)
                by_name: dict[str, int] = {}
                for index in indexes:
                    path, text = items[index]
                    if root is not None:
                        name = _relative_to(path, root)
                        if os.path.isabs(name):
                            continue  # not below its root (cannot be): checked alone
                    else:
                        name = path.name if path.suffix in (".py", ".pyi") else "stdin.py"
                    if name in by_name:
                        continue
                    copy = folder / name
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    copy.write_bytes(text.encode("utf-8", errors="surrogateescape"))
                    by_name[name] = index
                if not by_name:
                    continue
                listing = scratch / f"{number}.txt"
                listing.write_text("".join(name + "\n" for name in by_name), encoding="utf-8")
                arguments = ["--file-list", str(listing)]
                if config is not None:
                    arguments = ["--config", str(config), *arguments]
                self._runs.append((_start_typos(arguments, folder, ""), folder, by_name))
                self.included.update(by_name.values())
        except BaseException:
            self.cancel()
            raise

    def _cleanup(self) -> None:
        self._scratch.cleanup()

    def result(self) -> dict[int, list[Misspelling]]:
        """The misspellings by item index (those of ``included``); raises ``ConfigError``
        if typos failed."""
        return self._collect({index: [] for index in self.included})


def start_typos_on_texts(items: Sequence[tuple[Path, str]]) -> PendingTexts:
    """typos started once (per typos configuration) on every ``(path, text)`` of ``items``,
    each as if it were the file ``path``; ``result`` waits for it."""
    return PendingTexts(items)


def _run_typos(arguments: list[str], cwd: Path, stdin: str) -> Iterator[tuple[str, Misspelling]]:
    process = _start_typos(arguments, cwd, stdin)
    stdout, stderr = process.communicate()
    return _parse_output(process.returncode, stdout, stderr, cwd)


_EARLY: dict[tuple[tuple[str, ...], str, str], subprocess.Popen[bytes]] = {}
"""typos runs started by ``start_early``, by their arguments, directory and input."""
EARLY_LIMIT = 32
"""At most this many files are handed to typos before the command line is read."""


def start_early(paths: Sequence[Path]) -> None:
    """Start typos on ``paths`` now, as a ``check`` of them will (``start_typos_on_files``),
    before the command line, the configuration and the rules are imported: the run that
    then asks for the same typos run (same files, configuration directory and input)
    takes this one, which has been running meanwhile. ``discard_early`` stops the runs
    nothing took (a file the cache answers, LR004 not selected, a file excluded).
    Nothing is started when anything is unusual: the run itself then starts typos."""
    if not paths or len(paths) > EARLY_LIMIT:
        return
    try:
        pending = start_typos_on_files(paths, early=True)
    except Exception:  # the run reports it (missing typos, an unreadable file...)
        discard_early()
        return
    if pending.files:  # a list long enough for a file: not worth keeping
        discard_early()
        pending.remove_files()


def discard_early() -> None:
    """Stop every run ``start_early`` started that no check took."""
    while _EARLY:
        _, process = _EARLY.popitem()
        if process.poll() is None:
            process.kill()
        process.communicate()


def _start_typos(
    arguments: list[str], cwd: Path, stdin: str, early: bool = False
) -> subprocess.Popen[bytes]:
    """typos started on ``arguments`` in ``cwd``, with ``stdin`` written to it (or the same
    run, if ``start_early`` started it); ``early``: kept for the run that will ask."""
    import subprocess

    key = (tuple(arguments), str(cwd), stdin)
    if not early:
        early_run = _EARLY.pop(key, None)
        if early_run is not None:
            return early_run
    executable = find_typos()
    if executable is None:
        raise ConfigError(
            "LR004 needs the `typos` executable (PyPI package `typos`): not found beside"
            f" {sys.executable} nor on PATH; install it or deselect LR004"
        )
    command = [str(executable), "--format", "json", "--force-exclude", "--no-check-filenames"]
    # The input goes into a pipe before typos starts: callers pass at most PIPE_INPUT_LIMIT
    # bytes, which a pipe holds whole, so nothing waits for typos to read it.
    data = stdin.encode()
    assert len(data) <= PIPE_INPUT_LIMIT, "a longer input would wait for typos to read it"
    reader, writer = os.pipe()
    try:
        written = 0
        while written < len(data):
            written += os.write(writer, data[written:])
        os.close(writer)
        writer = -1
        process = subprocess.Popen(
            [*command, *arguments],
            cwd=cwd,
            stdin=reader,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as error:
        raise ConfigError(f"LR004 cannot run typos ({executable}): {error}") from error
    finally:
        os.close(reader)
        if writer != -1:
            os.close(writer)
    if early:
        _EARLY[key] = process
    return process


def _parse_output(
    returncode: int | None, stdout: bytes, stderr: bytes, cwd: Path
) -> Iterator[tuple[str, Misspelling]]:
    if returncode not in (0, 2):  # 2: misspellings found
        problem = stderr.decode(errors="replace").strip() or "no message"
        raise ConfigError(f"typos failed in {cwd} (exit {returncode}): {problem}")
    lines = stdout.decode(errors="replace").splitlines()
    if lines:
        import json  # typos prints nothing for clean files

    for raw in lines:
        try:
            entry = json.loads(raw)
        except ValueError as error:
            raise ConfigError(f"typos printed something that is not JSON: {raw!r}") from error
        if entry.get("type") == "typo" and "line_num" in entry:  # not a file name
            corrections = tuple(str(word) for word in entry.get("corrections") or ())
            yield (
                str(entry["path"]),
                Misspelling(
                    int(entry["line_num"]), int(entry["byte_offset"]), entry["typo"], corrections
                ),
            )


def typos_root(directory: Path) -> Path | None:
    """The nearest directory at or above ``directory`` holding a typos configuration."""
    start = Path(os.path.abspath(directory))
    for candidate in (start, *start.parents):
        if typos_config(candidate) is not None:
            return candidate
    return None


def typos_config(directory: Path) -> Path | None:
    for name in TYPOS_CONFIG_NAMES:
        if (directory / name).is_file():
            return directory / name
    pyproject = directory / "pyproject.toml"
    try:
        if "[tool.typos" in pyproject.read_text(encoding="utf-8", errors="replace"):
            return pyproject
    except OSError:
        pass
    return None


def _relative_to(path: Path, root: Path) -> str:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    return absolute if relative.startswith("..") else Path(relative).as_posix()
