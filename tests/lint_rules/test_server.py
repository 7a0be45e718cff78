"""``lint-rules server`` end to end: a real LSP client (pytest-lsp) drives the server in a
subprocess over stdio, as an editor does."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = pytest.mark.slow

PYPROJECT = '[tool.lint_rules.renames]\nold_name = "new_name"\n'
APP = "old_name = 1\nprint(old_name)\n"
FIXED = "new_name = 1\nprint(new_name)\n"
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
FIX_ALL = "source.fixAll.lint-rules"
# A misspelling, built from parts so that this repository's own typos run does not see it.
OUTSIDE = "# A comment with a " + "misp" + "elled word.\nold_name = 1\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "app.py").write_text(APP)
    return root


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]  # pytest-lsp's is untyped
    config=ClientServerConfig(server_command=[sys.executable, "-m", "lint_rules", "server"]),
)
async def client(lsp_client: LanguageClient, project: Path) -> AsyncIterator[None]:
    await _initialize(lsp_client, project)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]  # pytest-lsp's is untyped
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lint_rules", "server", "--no-cache"]
    ),
)
async def uncached(lsp_client: LanguageClient, project: Path) -> AsyncIterator[None]:
    await _initialize(lsp_client, project)
    yield
    await lsp_client.shutdown_session()


async def _initialize(lsp_client: LanguageClient, project: Path) -> None:
    registered: list[types.Registration] = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)  # type: ignore[untyped-decorator]
    def register(params: types.RegistrationParams) -> None:
        registered.extend(params.registrations)

    lsp_client.registered = registered  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=from_fs_path(str(project)),
            # mypy's daemon has tests of its own (test_protocols_daemon.py).
            initialization_options={"protocols": False},
        )
    )


def _uri(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert isinstance(uri, str)
    return uri


async def _open(client: LanguageClient, path: Path, text: str) -> list[types.Diagnostic]:
    """Open ``path`` (its text in the editor: ``text``) and wait for its diagnostics."""
    uri = _uri(path)
    waiting = client.wait_for_notification(PUBLISH)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=1,
                text=text,
            )
        )
    )
    await waiting
    return list(client.diagnostics[uri])


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """``text`` with LSP edits applied (ASCII text: a column is a character)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character

    for edit in sorted(edits, key=lambda item: offset(item.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def _edits(action: types.CodeAction) -> list[types.TextEdit]:
    assert action.edit is not None
    assert action.edit.document_changes is not None
    (change,) = action.edit.document_changes
    assert isinstance(change, types.TextDocumentEdit)
    return [edit for edit in change.edits if isinstance(edit, types.TextEdit)]


async def _actions(
    client: LanguageClient, path: Path, diagnostics: list[types.Diagnostic], only: list[str]
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(_uri(path)),
            diagnostics[0].range
            if diagnostics
            else types.Range(types.Position(0, 0), types.Position(0, 0)),
            types.CodeActionContext(diagnostics, only=list(only)),
        )
    )
    return [action for action in result or [] if isinstance(action, types.CodeAction)]


async def test_open_reports_each_finding_with_code_severity_and_docs_link(
    client: LanguageClient, project: Path
) -> None:
    diagnostics = await _open(client, project / "app.py", APP)

    assert [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics] == [
        ("LR001", 0, 0),
        ("LR001", 1, 6),
    ]
    first = diagnostics[0]
    assert first.range.end == types.Position(0, 8)
    assert first.severity == types.DiagnosticSeverity.Error
    assert first.source == "lint-rules"
    assert "`old_name` was renamed to `new_name`" in first.message
    assert first.code_description is not None
    assert first.code_description.href.endswith("rules.md#lr001-stale-name")


async def test_change_reports_the_new_text(client: LanguageClient, project: Path) -> None:
    path = project / "app.py"
    await _open(client, path, APP)

    waiting = client.wait_for_notification(PUBLISH)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=_uri(path), version=2),
            [types.TextDocumentContentChangeWholeDocument(FIXED + "old_name\n")],
        )
    )
    params = await waiting

    assert params.version == 2
    assert [(d.code, d.range.start.line) for d in params.diagnostics] == [("LR001", 2)]


async def test_each_safe_fix_is_a_quick_fix(client: LanguageClient, project: Path) -> None:
    path = project / "app.py"
    diagnostics = await _open(client, path, APP)

    (action,) = await _actions(client, path, diagnostics[:1], [types.CodeActionKind.QuickFix])

    assert action.kind == types.CodeActionKind.QuickFix
    assert action.title.startswith("Fix LR001: ")
    assert action.is_preferred
    assert _apply(APP, _edits(action)) == "new_name = 1\nprint(old_name)\n"


async def test_fix_all_applies_every_safe_fix(client: LanguageClient, project: Path) -> None:
    path = project / "app.py"
    diagnostics = await _open(client, path, APP)

    (action,) = await _actions(client, path, diagnostics, [FIX_ALL])

    assert action.kind == FIX_ALL
    assert _apply(APP, _edits(action)) == FIXED


async def test_fix_all_is_not_offered_for_a_clean_file(
    client: LanguageClient, project: Path
) -> None:
    path = project / "clean.py"
    path.write_text(FIXED)
    assert await _open(client, path, FIXED) == []

    assert await _actions(client, path, [], [FIX_ALL]) == []


async def test_hover_on_a_finding_shows_the_rules_explanation(
    client: LanguageClient, project: Path
) -> None:
    path = project / "app.py"
    await _open(client, path, APP)

    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(_uri(path)), types.Position(1, 8))
    )
    elsewhere = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(_uri(path)), types.Position(1, 1))
    )

    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "# LR001 stale-name" in hover.contents.value
    assert "## What it does" in hover.contents.value
    assert hover.range == types.Range(types.Position(1, 6), types.Position(1, 14))
    assert elsewhere is None


async def test_changed_pyproject_is_read_again(client: LanguageClient, project: Path) -> None:
    path = project / "app.py"
    assert len(await _open(client, path, APP)) == 2
    registered = client.registered  # type: ignore[attr-defined]
    assert [item.method for item in registered] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]

    (project / "pyproject.toml").write_text('[tool.lint_rules.renames]\nold_name = "other"\n')
    waiting = client.wait_for_notification(PUBLISH)
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [
                types.FileEvent(
                    uri=_uri(project / "pyproject.toml"), type=types.FileChangeType.Changed
                )
            ]
        )
    )
    params = await waiting

    assert len(params.diagnostics) == 2
    assert all("renamed to `other`" in d.message for d in params.diagnostics)


async def test_file_with_a_syntax_error_gets_lr000_and_the_server_goes_on(
    client: LanguageClient, project: Path
) -> None:
    broken = await _open(client, project / "broken.py", "def f(:\n    pass\n")
    after = await _open(client, project / "app.py", APP)

    assert [(d.code, d.severity) for d in broken] == [("LR000", types.DiagnosticSeverity.Error)]
    assert broken[0].range.start.line == 0
    assert len(after) == 2


async def test_file_outside_any_project_is_checked_as_the_command_line_does(
    client: LanguageClient, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere" / "note.py"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE)

    diagnostics = await _open(client, outside, OUTSIDE)

    # No pyproject.toml governs it: the workspace root's does, as for `lint-rules check`
    # run there.
    command = ["-m", "lint_rules", "check", "--format", "json", str(outside)]
    done = await asyncio.create_subprocess_exec(
        sys.executable, *command, cwd=project, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await done.communicate()
    expected = [(item["code"], item["line"] - 1, item["column"] - 1) for item in json.loads(out)]
    found = [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics]
    assert found == expected
    assert [code for code, _, _ in found] == ["LR004", "LR001"]


async def test_saved_file_is_shared_with_the_command_lines_cache(
    client: LanguageClient, project: Path
) -> None:
    await _open(client, project / "app.py", APP)

    (cache_file,) = (project / ".lint_rules_cache").glob("*.json")
    entries = json.loads(cache_file.read_text())
    assert [Path(path).name for path in entries] == ["app.py"]
    codes = [row[0] for row in entries[str(project / "app.py")][1]]
    assert codes == ["LR001", "LR001"]


async def test_closed_file_has_its_diagnostics_cleared(
    client: LanguageClient, project: Path
) -> None:
    path = project / "app.py"
    await _open(client, path, APP)

    waiting = client.wait_for_notification(PUBLISH)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(_uri(path)))
    )
    params = await waiting

    assert list(params.diagnostics) == []


def _save(client: LanguageClient, path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as an editor does, and say so."""
    path.write_text(text)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(_uri(path)))
    )


def _change(client: LanguageClient, path: Path, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=_uri(path), version=version),
            [types.TextDocumentContentChangeWholeDocument(text)],
        )
    )


async def _published(client: LanguageClient, path: Path) -> types.PublishDiagnosticsParams:
    """The next diagnostics published for ``path`` (others' are skipped)."""
    while True:
        params: types.PublishDiagnosticsParams = await client.wait_for_notification(PUBLISH)
        if params.uri == _uri(path):
            return params


async def test_save_reports_the_saved_text(client: LanguageClient, project: Path) -> None:
    path = project / "app.py"
    await _open(client, path, APP)
    edited = FIXED + "old_name\n"
    _change(client, path, edited, 2)
    await _published(client, path)

    waiting = _published(client, path)
    _save(client, path, edited)
    params = await waiting

    assert [(d.code, d.range.start.line) for d in params.diagnostics] == [("LR001", 2)]
    # The saved text is the file's: its findings are in the command line's cache now.
    (cache_file,) = (project / ".lint_rules_cache").glob("*.json")
    assert json.loads(cache_file.read_text())[str(path)][1][0][0] == "LR001"


LITERALS = '[tool.lint_rules.literals]\n"Event.name" = "events:EventName"\n'
EVENTS = (
    "from typing import Literal\n\n"
    'EventName = Literal["tool_called", "tool_output"]\n\n\n'
    "class Event:\n    name: EventName\n"
)
HANDLER = (
    "from events import Event\n\n\n"
    "def on(event: Event) -> None:\n"
    '    if event.name == "tool_call":\n'
    "        pass\n"
)


async def test_unsafe_fixes_are_offered_only_when_configured(
    client: LanguageClient, project: Path
) -> None:
    (project / "pyproject.toml").write_text(LITERALS)
    (project / "events.py").write_text(EVENTS)
    path = project / "handler.py"
    path.write_text(HANDLER)
    diagnostics = await _open(client, path, HANDLER)
    assert [d.code for d in diagnostics] == ["LR002"]
    assert diagnostics[0].data == {"fix": "unsafe"}
    kinds = [types.CodeActionKind.QuickFix, FIX_ALL]

    assert await _actions(client, path, diagnostics, kinds) == []

    waiting = _published(client, path)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams({"lint-rules": {"unsafeFixes": True}})
    )
    await waiting
    quick, fix_all = await _actions(client, path, diagnostics, kinds)

    assert quick.title.startswith("Fix LR002 (unsafe): ")
    assert not quick.is_preferred
    assert fix_all.title == "lint-rules: fix all (safe and unsafe)"
    expected = HANDLER.replace('"tool_call"', '"tool_called"')
    assert _apply(HANDLER, _edits(quick)) == expected
    assert _apply(HANDLER, _edits(fix_all)) == expected


async def test_each_file_gets_the_configuration_the_command_line_gives_it(
    client: LanguageClient, project: Path
) -> None:
    nested = project / "nested"
    nested.mkdir()
    (nested / "pyproject.toml").write_text('[tool.lint_rules.renames]\nold_name = "nested_name"\n')
    inner = nested / "inner.py"
    inner.write_text(APP)

    outer_found = await _open(client, project / "app.py", APP)
    inner_found = await _open(client, inner, APP)

    assert all("renamed to `new_name`" in d.message for d in outer_found)
    assert all("renamed to `nested_name`" in d.message for d in inner_found)
    command = ["-m", "lint_rules", "check", "--no-cache", "--format", "json", str(inner)]
    done = await asyncio.create_subprocess_exec(
        sys.executable, *command, cwd=project, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await done.communicate()
    expected = [(item["code"], item["line"] - 1, item["message"]) for item in json.loads(out)]
    assert [(d.code, d.range.start.line, d.message) for d in inner_found] == expected


async def test_a_pyproject_changed_unannounced_is_read_before_the_next_check(
    client: LanguageClient, project: Path
) -> None:
    path = project / "app.py"
    await _open(client, path, APP)

    # No watched-files event, no save in the editor: the file's modification time tells.
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules.renames]\nold_name = "changed_name"\n# a longer file\n'
    )
    waiting = _published(client, path)
    _change(client, path, APP + "\n", 2)
    params = await waiting

    assert len(params.diagnostics) == 2
    assert all("renamed to `changed_name`" in d.message for d in params.diagnostics)


async def test_a_saved_pyproject_is_read_again(client: LanguageClient, project: Path) -> None:
    path = project / "app.py"
    await _open(client, path, APP)

    waiting = _published(client, path)
    _save(client, project / "pyproject.toml", '[tool.lint_rules.renames]\nold_name = "saved"\n')
    params = await waiting

    assert all("renamed to `saved`" in d.message for d in params.diagnostics)


async def _doctor_the_command_lines_cache(project: Path, path: Path) -> tuple[Path, object]:
    """Check ``path`` on the command line, then change the messages its cache entry holds
    to one no check would write: a server that shows it read the cache. Returns the cache
    file and what it now holds."""
    done = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lint_rules", "check", str(path), cwd=project
    )
    assert await done.wait() == 1
    (cache_file,) = (project / ".lint_rules_cache").glob("*.json")
    entries = json.loads(cache_file.read_text())
    for row in entries[str(path)][1]:
        row[1] = "as the command line's cache holds it"
    cache_file.write_text(json.dumps(entries))
    return cache_file, entries


async def test_the_command_lines_cache_answers_the_server(
    client: LanguageClient, project: Path
) -> None:
    path = project / "app.py"
    await _doctor_the_command_lines_cache(project, path)

    diagnostics = await _open(client, path, APP)

    assert [d.message for d in diagnostics] == ["as the command line's cache holds it"] * 2


API = "def split(text):\n    return text.split(';')\n"
USES = "from pkg.api import split\n\nparts = split('a;b')\n"


async def test_a_save_rechecks_the_open_files_whose_findings_read_it(
    client: LanguageClient, project: Path
) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules.renames]\n"pkg.api:split" = "parts"\n'
    )
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    api, uses, clean = project / "pkg" / "api.py", project / "uses.py", project / "clean.py"
    api.write_text(API)
    uses.write_text(USES)
    clean.write_text(FIXED)
    before = await _open(client, uses, USES)
    assert [(d.range.start.line, d.data) for d in before] == [
        (0, {"fix": "safe"}),
        (2, {"fix": "safe"}),
    ]
    assert await _open(client, clean, FIXED) == []
    await _open(client, api, API)
    clean_before = client.diagnostics[_uri(clean)]

    # `split` is no longer pkg.api's function: the import in `uses.py` is not known to be
    # the target's any more.
    waiting = _published(client, uses)
    _save(client, api, "def parts(text):\n    return text.split(';')\n")
    params = await waiting
    await client.text_document_hover_async(  # a round trip: what the save sent has arrived
        types.HoverParams(types.TextDocumentIdentifier(_uri(clean)), types.Position(0, 0))
    )

    command = ["-m", "lint_rules", "check", "--no-cache", "--format", "json", str(uses)]
    done = await asyncio.create_subprocess_exec(
        sys.executable, *command, cwd=project, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await done.communicate()
    expected = [(item["line"] - 1, item["message"]) for item in json.loads(out)]
    assert [(d.range.start.line, d.message) for d in params.diagnostics] == expected
    assert "not renamed" in params.diagnostics[0].message
    # One file's findings never wait for the others': a file that read no other file is
    # not checked again.
    assert client.diagnostics[_uri(clean)] is clean_before


async def test_a_server_without_the_cache_neither_reads_nor_writes_it(
    uncached: LanguageClient, project: Path
) -> None:
    path = project / "app.py"
    cache_file, entries = await _doctor_the_command_lines_cache(project, path)
    (project / "other.py").write_text(APP)
    before = sorted(item.name for item in (project / ".lint_rules_cache").iterdir())

    diagnostics = await _open(uncached, path, APP)
    await _open(uncached, project / "other.py", APP)

    assert all("`old_name` was renamed to `new_name`" in d.message for d in diagnostics)
    assert json.loads(cache_file.read_text()) == entries
    assert sorted(item.name for item in (project / ".lint_rules_cache").iterdir()) == before
