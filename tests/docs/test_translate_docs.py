"""docs/scripts/translate_docs.py against a loopback server that speaks Chat Completions
(model_server.py).

The server "translates" by upper-casing the page it receives: placeholders (@@P0@@) survive
that, and any lower-case text in a translated page proves it never went to the model.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import translate_docs
import yaml  # type: ignore[import-untyped, import-not-found, unused-ignore]
from model_server import FakeChatCompletions, reverse_every_word

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "docs" / "scripts" / "translate_docs.py"

CODE_BLOCK = """\
```python
session = SQLiteSession("user_123", "conversations.db")  # kept as is
print(session.session_id)
```"""

SESSIONS_PAGE = f"""\
---
title: Sessions
---
# Sessions

A session keeps `get_items()` history; see [the protocol](guide/protocol.md#session)
and [its reference](ref/api.md#session).

!!! note "Why a protocol?"
    Any storage can implement it.

{CODE_BLOCK}
"""

PAGES = {
    "index.md": "# Welcome\n\nStart with [sessions](sessions.md).\n",
    "sessions.md": SESSIONS_PAGE,
    "guide/protocol.md": "# Protocol\n\n::: agent_sessions.protocol\n",
}
REFERENCE_PAGE = "ref/api.md"  # the API reference stays English-only


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    docs_dir = tmp_path / "docs"
    for path, text in PAGES.items():
        write(docs_dir / path, text)
    write(docs_dir / REFERENCE_PAGE, "# API\n\n::: agent_sessions.protocol\n")
    write(docs_dir / "scripts" / "notes.md", "scripts are not pages\n")
    return docs_dir


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run(docs_dir: Path, *args: str) -> int:
    """The script on ``docs_dir``, Japanese only unless ``args`` choose (``--lang``)."""
    languages = () if "--lang" in args or "--every-language" in args else ("--lang", "ja")
    args = tuple(arg for arg in args if arg != "--every-language")
    return translate_docs.main(["--docs-dir", str(docs_dir), *languages, *args])


def manifest(docs_dir: Path, code: str = "ja") -> dict[str, str]:
    data = json.loads((docs_dir / code / ".translation-manifest.json").read_text())
    pages: dict[str, str] = data["pages"]
    return pages


def source_hash(docs_dir: Path, path: str) -> str:
    import hashlib

    return hashlib.sha256((docs_dir / path).read_bytes()).hexdigest()


def first_heading(page: str) -> str:
    """The first ``#`` line of a page sent, without its anchor's placeholder."""
    line = next(line for line in page.splitlines() if line.startswith("#"))
    return translate_docs.PLACEHOLDER.sub("", line).strip()


def sent_markers(server: FakeChatCompletions) -> list[str]:
    """The first heading of every page sent, to tell which pages were sent."""
    return sorted(first_heading(page) for page in server.pages_sent())


# --- incremental --------------------------------------------------------------------------


def test_first_run_translates_every_page_and_records_its_source_hash(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    assert run(docs) == 0

    assert sent_markers(server) == ["# Protocol", "# Sessions", "# Welcome"]
    assert "# WELCOME" in (docs / "ja" / "index.md").read_text()
    assert manifest(docs) == {path: source_hash(docs, path) for path in PAGES}
    assert not (docs / "ja" / "scripts").exists()
    assert not (docs / "ja" / "ref").exists()


def test_second_run_sends_nothing_when_no_page_changed(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)
    server.requests.clear()

    assert run(docs) == 0

    assert server.requests == []


def test_only_new_and_changed_pages_are_sent(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)
    server.requests.clear()
    write(docs / "index.md", "# Welcome back\n\nChanged.\n")
    write(docs / "running.md", "# Running agents\n")

    assert run(docs) == 0

    assert sent_markers(server) == ["# Running agents", "# Welcome back"]
    assert "# WELCOME BACK" in (docs / "ja" / "index.md").read_text()
    assert manifest(docs)["running.md"] == source_hash(docs, "running.md")


def test_missing_translation_is_sent_again_even_if_the_manifest_is_current(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)
    server.requests.clear()
    (docs / "ja" / "index.md").unlink()

    assert run(docs) == 0

    assert sent_markers(server) == ["# Welcome"]
    assert (docs / "ja" / "index.md").is_file()


def test_deleted_page_removes_its_translation_and_manifest_entry(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)
    server.requests.clear()
    (docs / "guide" / "protocol.md").unlink()

    assert run(docs) == 0

    assert server.requests == []
    assert not (docs / "ja" / "guide").exists()
    assert set(manifest(docs)) == {"index.md", "sessions.md"}


def test_all_flag_sends_unchanged_pages_again(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)
    server.requests.clear()

    assert run(docs, "--all") == 0

    assert len(server.requests) == len(PAGES)


def test_dry_run_lists_what_would_be_sent_and_needs_no_key(
    docs: Path,
    server: FakeChatCompletions,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    assert run(docs, "--dry-run") == 0

    out = capsys.readouterr().out.splitlines()
    assert out == [
        "ja: translate guide/protocol.md (new)",
        "ja: translate index.md (new)",
        "ja: translate sessions.md (new)",
    ]
    assert server.requests == []
    assert not (docs / "ja").exists()


def test_missing_key_is_a_clear_error_and_nothing_is_written(
    docs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    assert run(docs) == 2

    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    assert not (docs / "ja").exists()


def test_deletions_need_no_key(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(docs)
    (docs / "index.md").unlink()
    monkeypatch.delenv("OPENAI_API_KEY")

    assert run(docs) == 0

    assert not (docs / "ja" / "index.md").exists()


def test_corrupt_manifest_is_a_clear_error(
    docs: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    write(docs / "ja" / ".translation-manifest.json", "{not json")

    assert run(docs) == 2

    assert "is not a translation manifest" in capsys.readouterr().err


# --- faithful -----------------------------------------------------------------------------


def test_code_blocks_survive_byte_for_byte_and_never_reach_the_model(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)

    assert CODE_BLOCK in (docs / "ja" / "sessions.md").read_text()
    assert not any("SQLiteSession" in page for page in server.pages_sent())


def test_inline_code_links_markers_and_directives_never_reach_the_model(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)

    sent = "\n".join(server.pages_sent())
    for markup in ("get_items", "guide/protocol.md", "!!! note", "agent_sessions.protocol"):
        assert markup not in sent
    translated = (docs / "ja" / "sessions.md").read_text()
    assert "[THE PROTOCOL](guide/protocol.md#session)" in translated
    assert '!!! note "WHY A PROTOCOL?"\n    ANY STORAGE CAN IMPLEMENT IT.' in translated
    assert "::: agent_sessions.protocol" in (docs / "ja" / "guide" / "protocol.md").read_text()


def test_links_to_the_untranslated_reference_are_kept_for_the_site_to_resolve(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    # The site's i18n plugin serves the English reference under every language: the
    # link resolves there (the site test checks every link of every language).
    run(docs)

    translated = (docs / "ja" / "sessions.md").read_text()
    assert "[ITS REFERENCE](ref/api.md#session)" in translated


def test_headings_keep_their_english_anchors(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    write(
        docs / "index.md", "# Welcome\n\n## The `Session` protocol\n\n## Overview\n\n## Overview\n"
    )
    server.respond = reverse_every_word

    assert run(docs) == 0

    translated = (docs / "ja" / "index.md").read_text()
    for anchor in ("welcome", "the-session-protocol", "overview", "overview_1"):
        assert f"{{ #{anchor} }}" in translated


def test_front_matter_is_kept_with_its_title_translated_and_out_of_search(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)

    assert not any("title:" in page for page in server.pages_sent())
    front_matter, _ = translate_docs.split_front_matter((docs / "ja" / "sessions.md").read_text())
    page_data = yaml.safe_load(front_matter)
    assert page_data == {"title": "SESSIONS", "search": {"exclude": True}}


def test_requests_name_the_model_and_carry_glossary_and_style_rules(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)

    request = server.requests[0]
    assert request["model"] == "test-model"
    system = request["messages"][0]["content"]
    assert "Japanese" in system
    assert "SQLiteSession" in system  # kept in English
    assert "session -> セッション" in system  # a term mapping
    assert "です/ます" in system  # a style rule


def test_dropped_placeholder_is_rejected_and_the_old_translation_kept(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run(docs)
    old_translation = (docs / "ja" / "sessions.md").read_bytes()
    old_manifest = manifest(docs)
    write(docs / "sessions.md", SESSIONS_PAGE + "\nOne more `line`.\n")
    server.respond = lambda text: text.upper().replace("@@P0@@", "")

    assert run(docs) == 1

    assert "placeholders missing @@P0@@" in capsys.readouterr().err
    assert (docs / "ja" / "sessions.md").read_bytes() == old_translation
    assert manifest(docs) == old_manifest


def test_repeated_placeholder_is_rejected(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    server.respond = lambda text: text.upper() + ("\n@@P0@@" if "# Sessions" in text else "")

    assert run(docs) == 0  # the other pages were written

    assert "repeated @@P0@@" in capsys.readouterr().err
    assert not (docs / "ja" / "sessions.md").exists()
    assert "sessions.md" not in manifest(docs)


def test_reply_wrapped_in_a_code_fence_is_unwrapped(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    server.respond = lambda text: "```markdown\n" + text.upper() + "\n```"

    assert run(docs) == 0

    assert (
        (docs / "ja" / "index.md")
        .read_text()
        .endswith("# WELCOME { #welcome }\n\nSTART WITH [SESSIONS](sessions.md).\n")
    )


def test_page_with_placeholder_like_text_is_refused(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    write(docs / "index.md", "# Welcome\n\nTokens look like @@P3@@.\n")

    assert run(docs) == 0  # the other pages were written

    assert "placeholder-like text '@@P3@@'" in capsys.readouterr().err
    assert not (docs / "ja" / "index.md").exists()


# --- replies that do not check are retried, a failed page costs only itself -----------------


def test_reply_that_loses_a_placeholder_is_retried_with_the_reason(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    replies: list[str] = []

    def drop_a_token_once(text: str) -> str:
        replies.append(text)
        if "# Sessions" in text and replies.count(text) == 1:
            return text.upper().replace("@@P2@@", "")
        return text.upper()

    server.respond = drop_a_token_once

    assert run(docs) == 0

    retry = [r for r in server.requests if "# Sessions" in r["messages"][1]["content"]][-1]
    roles = [message["role"] for message in retry["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "@@P2@@" not in retry["messages"][2]["content"]  # the rejected reply
    assert "placeholders missing @@P2@@" in retry["messages"][3]["content"]
    assert CODE_BLOCK in (docs / "ja" / "sessions.md").read_text()
    assert set(manifest(docs)) == set(PAGES)


def test_page_that_keeps_failing_is_given_up_after_bounded_retries_and_others_are_written(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run(docs)
    old_translation = (docs / "ja" / "sessions.md").read_bytes()
    write(docs / "sessions.md", SESSIONS_PAGE + "\nOne more `line`.\n")
    write(docs / "index.md", "# Welcome back\n")
    server.requests.clear()
    server.respond = lambda text: text.upper().replace("@@P1@@", "")

    assert run(docs) == 0

    sessions_requests = [p for p in server.pages_sent() if "# Sessions" in p]
    assert len(sessions_requests) == translate_docs.MAX_REPLY_ATTEMPTS
    assert f"{translate_docs.MAX_REPLY_ATTEMPTS} replies rejected" in capsys.readouterr().err
    assert (docs / "ja" / "sessions.md").read_bytes() == old_translation
    assert manifest(docs)["sessions.md"] != source_hash(docs, "sessions.md")  # sent again later
    assert "# WELCOME BACK" in (docs / "ja" / "index.md").read_text()
    assert manifest(docs)["index.md"] == source_hash(docs, "index.md")


def test_failed_pages_are_reported_as_workflow_annotations(
    docs: Path,
    server: FakeChatCompletions,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    server.respond = lambda text: 400 if "# Sessions" in text else text.upper()

    assert run(docs) == 0

    annotations = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::")]
    assert len(annotations) == 1
    assert annotations[0].startswith(
        "::error file=docs/sessions.md,title=translation failed (ja)::"
    )
    assert "answered 400" in annotations[0]


def test_link_target_moved_away_from_its_text_is_rejected(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    write(docs / "index.md", "# Welcome\n\nRead [below](#usage) first.\n\n## Usage\n")

    def move_the_target(text: str) -> str:
        # "[BELOW]@@P2@@ FIRST." -> "[BELOW] FIRST @@P2@@.": the target leaves its text.
        return re.sub(r"\[(\w+)\](@@P\d+@@) (\w+)", r"[\1] \3 \2", text.upper())

    server.respond = move_the_target

    run(docs)

    err = capsys.readouterr().err
    assert "index.md" in err
    assert "out of place" in err
    assert "right after the closing bracket" in err
    assert not (docs / "ja" / "index.md").exists()


def test_blocks_swapped_by_the_reply_are_rejected(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    write(docs / "index.md", "# Welcome\n\n```sh\nfirst\n```\n\nThen:\n\n```sh\nsecond\n```\n")

    def swap_blocks(text: str) -> str:
        return (
            text.upper()
            .replace("@@P1@@", "@@TMP@@")
            .replace("@@P2@@", "@@P1@@")
            .replace("@@TMP@@", "@@P2@@")
        )

    server.respond = swap_blocks

    run(docs)

    assert "placeholders out of order" in capsys.readouterr().err
    assert not (docs / "ja" / "index.md").exists()


def test_code_block_that_leaves_its_admonition_is_rejected(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    write(docs / "index.md", "# Welcome\n\n!!! note\n    Run:\n\n    ```sh\n    go\n    ```\n")
    server.respond = lambda text: re.sub(r"(?m)^    (@@P\d+@@)$", r"\1", text.upper())

    run(docs)

    assert "(a block (code, directive) alone on its line)" in capsys.readouterr().err
    assert not (docs / "ja" / "index.md").exists()


def test_title_must_stay_on_the_first_line(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    def title_after_heading(text: str) -> str:
        title, _, rest = text.upper().partition("\n\n")
        heading, _, body = rest.partition("\n")
        return f"{heading}\n{title}\n{body}"

    server.respond = title_after_heading

    run(docs)

    assert "sessions.md" in capsys.readouterr().err
    assert not (docs / "ja" / "sessions.md").exists()
    assert (docs / "ja" / "index.md").exists()  # no title: nothing to move


def test_inline_code_may_change_order_within_a_sentence(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    write(docs / "index.md", "# Welcome\n\nCall `first()` before `second()`.\n")

    def reorder(text: str) -> str:
        # As Japanese word order might: "`second()` ... `first()` ...".
        return re.sub(r"CALL (@@P\d+@@) BEFORE (@@P\d+@@)", r"\2 AFTER \1", text.upper())

    server.respond = reorder

    assert run(docs) == 0

    assert "`second()` AFTER `first()`" in (docs / "ja" / "index.md").read_text()


def test_translations_are_created_readable_by_everyone(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    old_umask = os.umask(0o022)
    try:
        assert run(docs) == 0
    finally:
        os.umask(old_umask)

    for path in [*PAGES, ".translation-manifest.json"]:
        assert (docs / "ja" / path).stat().st_mode & 0o777 == 0o644, path


def test_an_edited_translation_keeps_its_mode(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    run(docs)
    (docs / "ja" / "index.md").chmod(0o664)
    write(docs / "index.md", "# Welcome back\n")

    assert run(docs) == 0

    assert (docs / "ja" / "index.md").stat().st_mode & 0o777 == 0o664


# --- three languages, models and the navigation ----------------------------------------------


def test_every_language_is_translated_with_its_own_glossary_and_style(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    assert run(docs, "--every-language") == 0

    systems = {request["messages"][0]["content"] for request in server.requests}
    expected = {
        "ja": ("Japanese", "session -> セッション", "です/ます"),
        "ko": ("Korean", "session -> 세션", "합니다체"),
        "zh": ("Chinese (Simplified", "session -> 会话", "Simplified Chinese characters only"),
    }
    for code, markers in expected.items():
        assert [s for s in systems if all(marker in s for marker in markers)], code
        assert manifest(docs, code) == {path: source_hash(docs, path) for path in PAGES}
    assert len(systems) == 3


def test_prompt_asks_for_a_self_review_before_replying() -> None:
    prompt = translate_docs.system_prompt(translate_docs.LANGUAGES["ko"])

    workflow = prompt[prompt.index("# Workflow") :]
    for step in ("first draft", "Review the draft", "meaning", "tokens", "terms", "Fix every"):
        assert step in workflow


def test_reasoning_models_get_no_sampling_settings(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_MODEL")
    monkeypatch.setenv("OPENAI_REASONING_EFFORT", "high")

    assert run(docs) == 0

    for request in server.requests:
        assert request["model"] == "o3"
        assert request["reasoning_effort"] == "high"
        assert not {"temperature", "top_p"} & request.keys()


def test_other_models_translate_at_temperature_zero_and_each_language_may_have_its_own(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4.1")
    monkeypatch.setenv("OPENAI_MODEL_ZH", "o4-mini")

    assert run(docs, "--lang", "ja", "--lang", "zh") == 0

    models = {
        ("Japanese" in r["messages"][0]["content"], r["model"], r.get("temperature"))
        for r in server.requests
    }
    assert models == {(True, "gpt-4.1", 0.0), (False, "o4-mini", None)}


NAV_CONFIG = """\
site_name: test
nav:
  - Home: index.md
  - Guide:
      - Sessions: sessions.md
      - Protocol: guide/protocol.md
"""


def test_navigation_titles_are_translated_once_and_kept_in_the_manifest(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    write(docs.parent / "mkdocs.yml", NAV_CONFIG)

    assert run(docs) == 0

    data = json.loads((docs / "ja" / translate_docs.MANIFEST_NAME).read_text())
    assert data["nav"] == {
        "Home": "HOME",
        "Guide": "GUIDE",
        "Sessions": "SESSIONS",
        "Protocol": "PROTOCOL",
    }
    server.requests.clear()
    write(docs.parent / "mkdocs.yml", NAV_CONFIG.replace("Guide:", "User guide:"))

    assert run(docs) == 0

    assert server.pages_sent() == ["@@P0@@ User guide\n"]
    data = json.loads((docs / "ja" / translate_docs.MANIFEST_NAME).read_text())
    assert set(data["nav"]) == {"Home", "User guide", "Sessions", "Protocol"}


def test_unreadable_mkdocs_yml_is_a_clear_error(
    docs: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    write(docs.parent / "mkdocs.yml", "nav: [unclosed\n")

    assert run(docs) == 2

    assert "cannot read" in capsys.readouterr().err
    assert not (docs / "ja").exists()


# --- robust -------------------------------------------------------------------------------


def test_rate_limit_then_success_is_retried(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    answered: list[str] = []

    def rate_limited_once(text: str) -> str | int:
        if text not in answered:
            answered.append(text)
            return 429
        return text.upper()

    server.respond = rate_limited_once

    assert run(docs) == 0

    assert len(server.requests) == 2 * len(PAGES)
    assert set(manifest(docs)) == set(PAGES)


def test_persistent_server_error_fails_only_that_page(
    docs: Path, server: FakeChatCompletions, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    server.respond = lambda text: 503 if "# Sessions" in text else text.upper()

    assert run(docs) == 0  # the other pages were written

    err = capsys.readouterr().err
    assert "ja: sessions.md: the model endpoint answered 503" in err
    attempts = [page for page in server.pages_sent() if "# Sessions" in page]
    assert len(attempts) == translate_docs.MAX_ATTEMPTS
    assert not (docs / "ja" / "sessions.md").exists()
    assert set(manifest(docs)) == {"guide/protocol.md", "index.md"}


def test_client_error_is_not_retried(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    server.respond = lambda text: 400

    assert run(docs) == 1  # nothing could be translated

    assert len(server.requests) == len(PAGES)


def test_pages_in_flight_never_exceed_jobs(
    tmp_path: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    docs_dir = tmp_path / "docs"
    for number in range(6):
        write(docs_dir / f"page{number}.md", f"# Page {number}\n")
    server.delay = 0.2

    assert run(docs_dir, "--jobs", "2") == 0

    assert server.max_in_flight == 2


def test_killed_run_leaves_whole_pages_and_a_manifest_that_describes_them(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    second_request = threading.Event()
    release = threading.Event()

    def hang_on_second_page(text: str) -> str | int:
        if len(server.requests) == 2:
            second_request.set()
            release.wait(timeout=30)
        return text.upper()

    server.respond = hang_on_second_page
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--docs-dir", str(docs), "--jobs", "1"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert second_request.wait(timeout=30)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        release.set()

    written = {p.relative_to(docs / "ja").as_posix() for p in (docs / "ja").rglob("*.md")}
    assert written == {"guide/protocol.md"}  # pages go in sorted order; the second hung
    assert manifest(docs) == {"guide/protocol.md": source_hash(docs, "guide/protocol.md")}
    server.respond = str.upper
    server.requests.clear()

    assert run(docs) == 0

    assert sent_markers(server) == ["# Sessions", "# Welcome"]


def test_leftover_temporary_files_of_a_killed_run_are_removed(
    docs: Path, server: FakeChatCompletions, env: dict[str, str]
) -> None:
    leftover = docs / "ja" / f"{translate_docs.TEMPORARY_PREFIX}abc123"
    write(leftover, "half a page")

    assert run(docs) == 0

    assert not leftover.exists()


def test_atomic_write_that_fails_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path,
) -> None:
    target = tmp_path / "page.md"
    target.mkdir()  # a rename onto a directory fails, as a full disk or a crash would
    (target / "old.md").write_text("old")

    with pytest.raises(IsADirectoryError):
        translate_docs.write_atomically(target, b"new page")

    assert (target / "old.md").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.md"]


def test_retry_delay_honours_a_small_retry_after() -> None:
    assert translate_docs.retry_delay(3, 2.5) == 2.5


def test_retry_delay_ignores_a_large_retry_after_and_backs_off_exponentially() -> None:
    delays = [translate_docs.retry_delay(attempt, 3600.0) for attempt in range(4)]

    for attempt, delay in enumerate(delays):
        base = translate_docs.RETRY_BASE_DELAY * 2**attempt
        assert 0.5 * base <= delay <= base


def test_retry_delay_is_capped() -> None:
    assert translate_docs.retry_delay(30, None) <= translate_docs.MAX_BACKOFF


def test_retry_after_is_read_in_milliseconds_or_seconds() -> None:
    assert translate_docs.parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert translate_docs.parse_retry_after({"retry-after": "3"}) == 3.0
    assert translate_docs.parse_retry_after({"retry-after": "soon"}) is None


# --- the table and the workflow -----------------------------------------------------------


def test_workflow_ignores_every_translation_folder_of_the_table() -> None:
    workflow = yaml.safe_load((REPO_ROOT / ".github/workflows/translate-docs.yml").read_text())
    # YAML 1.1 reads the key `on` as True.
    paths = (workflow.get("on") or workflow[True])["push"]["paths"]

    assert {"docs/**", "mkdocs.yml"} <= set(paths)
    for code in translate_docs.LANGUAGES:
        assert f"!docs/{code}/**" in paths


def test_site_offers_exactly_the_languages_of_the_table() -> None:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    i18n = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    locales = [language["locale"] for language in i18n["languages"]]

    assert locales == ["en", *translate_docs.LANGUAGES]


def workflow(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / name).read_text())
    data["on"] = data.pop(True, None) or data.get("on")  # YAML 1.1 reads `on` as True
    return data


def run_steps(data: dict[str, Any]) -> list[str]:
    return [step["run"] for job in data["jobs"].values() for step in job["steps"] if "run" in step]


def uses_steps(data: dict[str, Any]) -> list[str]:
    return [
        step["uses"] for job in data["jobs"].values() for step in job["steps"] if "uses" in step
    ]


def test_translation_workflow_runs_the_job_with_what_the_build_needs() -> None:
    data = workflow("translate-docs.yml")

    assert "python docs/scripts/translation_job.py" in run_steps(data)
    assert any('".[openai,docs]"' in step for step in run_steps(data))
    assert data["permissions"] == {"contents": "write"}


def test_docs_workflow_publishes_the_strict_build_on_pushes_to_main_and_after_translations() -> (
    None
):
    data = workflow("docs.yml")

    assert data["on"]["push"]["branches"] == ["main"]
    assert {"docs/**", "mkdocs.yml", "src/**"} <= set(data["on"]["push"]["paths"])
    # Pushes made with the workflow token start no workflow: the translations' own push
    # would never be published without this trigger.
    assert data["on"]["workflow_run"]["workflows"] == [workflow("translate-docs.yml")["name"]]
    build = [step for step in run_steps(data) if "mkdocs build" in step]
    assert build == ["python -m mkdocs build --strict --site-dir _site"]
    upload = next(
        step
        for step in data["jobs"]["build"]["steps"]
        if "upload-pages-artifact" in step.get("uses", "")
    )
    assert upload["with"]["path"] == "_site"
    assert any(uses.startswith("actions/deploy-pages@") for uses in uses_steps(data))
    assert data["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert data["jobs"]["deploy"]["needs"] == "build"


def test_workflows_follow_the_github_workflow_schema() -> None:
    workflows = sorted(str(path) for path in (REPO_ROOT / ".github" / "workflows").glob("*.yml"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            *workflows,
        ],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
