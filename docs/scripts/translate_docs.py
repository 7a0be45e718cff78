"""Translate the English documentation pages into other languages, paying only for changes.

Usage (from the repository root)::

    python docs/scripts/translate_docs.py            # new and changed pages, every language
    python docs/scripts/translate_docs.py --dry-run  # list what would be sent; needs no key
    python docs/scripts/translate_docs.py --all      # re-translate every page
    python docs/scripts/translate_docs.py --lang ja  # one language of the table

English pages are the Markdown files under ``docs/`` (outside the language folders and
``docs/scripts/``). The API reference (``docs/ref/``) is rendered from English docstrings
and is not translated: the site shows the English reference in every language. Each
language's translations live in ``docs/<code>/`` beside a checked-in manifest,
``docs/<code>/.translation-manifest.json``, that maps every translated page to the SHA-256
of the English source it was made from, and holds the translated navigation titles of
``mkdocs.yml``. A run sends only pages whose source hash differs from the manifest (or whose
translation is missing) and deletes translations whose English page is gone.

The model sees prose only: front matter (except its ``title``), fenced code blocks, inline
code, link targets, admonition markers, snippet and mkdocstrings directives, HTML comments
and URLs are replaced by placeholders and restored afterwards. A reply whose placeholders
are lost, repeated, invented, out of order or out of place is sent back to the model with
the reason, a bounded number of times; a page that still fails keeps its old translation
and the other pages are written. Every file is written atomically (temporary file, then
rename) and the manifest is updated after each page, so an interrupted run leaves complete
pages and a manifest that describes them.

Environment: ``OPENAI_API_KEY`` (required unless nothing is to be sent), ``OPENAI_MODEL``
(default ``o3``), ``OPENAI_MODEL_<CODE>`` (one language's model, e.g. ``OPENAI_MODEL_ZH``),
``OPENAI_REASONING_EFFORT`` (reasoning models only), ``OPENAI_BASE_URL`` (any
OpenAI-compatible endpoint; the Chat Completions API is used). In GitHub Actions
(``GITHUB_ACTIONS=true``) failed pages are also reported as workflow annotations. Exit
codes: 0 success, or some pages failed while others were translated; 1 pages were to be
translated and none could be; 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import asyncio
import enum
import hashlib
import json
import os
import random
import re
import sys
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from openai import AsyncOpenAI


@dataclass(frozen=True)
class Language:
    """A target language: its folder name, its names and how to write it."""

    code: str
    """The folder under docs/ and the site's locale (mkdocs.yml, plugins.i18n.languages)."""
    name: str
    """The English name, used in the prompt."""
    terms: Mapping[str, str]
    """English term -> the word to use for it in this language (the glossary)."""
    style_rules: tuple[str, ...]


# The one table of target languages. Adding a language: a row here, `!docs/<code>/**` in the
# paths of .github/workflows/translate-docs.yml, and the language in plugins.i18n.languages
# of mkdocs.yml (tests check that all three agree).
LANGUAGES: Final[Mapping[str, Language]] = {
    "ja": Language(
        code="ja",
        name="Japanese",
        terms={
            "session": "セッション",
            "agent": "エージェント",
            "conversation history": "会話履歴",
            "item": "アイテム",
            "backend": "バックエンド",
            "store": "ストア",
            "tool": "ツール",
            "lint rule": "lint ルール",
            "fix": "修正",
            "conformance kit": "適合性テストキット",
            "protocol": "プロトコル",
            "concurrency": "並行性",
        },
        style_rules=(
            "Write in the polite です/ます style used by Japanese technical documentation.",
            "Use full-width Japanese punctuation (、。) in Japanese sentences; keep ASCII "
            "punctuation inside English terms and identifiers.",
            "Keep the English term in parentheses after a mapped term the first time it "
            "appears on the page, e.g. セッション (session).",
            "Prefer natural Japanese word order over a literal rendering of the English.",
            "Write katakana loanwords without a trailing long-vowel mark where the "
            "industry does (サーバー is fine, but use ユーザー and パラメーター consistently).",
        ),
    ),
    "ko": Language(
        code="ko",
        name="Korean",
        terms={
            "session": "세션",
            "agent": "에이전트",
            "conversation history": "대화 기록",
            "item": "항목",
            "backend": "백엔드",
            "store": "저장소",
            "tool": "도구",
            "lint rule": "린트 규칙",
            "fix": "수정",
            "conformance kit": "적합성 테스트 키트",
            "protocol": "프로토콜",
            "concurrency": "동시성",
        },
        style_rules=(
            "Write in the formal polite 합니다체 (-ㅂ니다/-습니다) used by Korean technical "
            "documentation; never mix in 해요체.",
            "Follow standard Korean spacing (띄어쓰기) and use ASCII punctuation.",
            "Keep the English term in parentheses after a mapped term the first time it "
            "appears on the page, e.g. 세션(session).",
            "Prefer natural Korean sentence order (the verb last) over a literal rendering "
            "of the English.",
        ),
    ),
    "zh": Language(
        code="zh",
        name="Chinese (Simplified, zh-Hans)",
        terms={
            "session": "会话",
            "agent": "智能体",
            "conversation history": "对话历史",
            "item": "条目",
            "backend": "后端",
            "store": "存储",
            "tool": "工具",
            "lint rule": "lint 规则",
            "fix": "修复",
            "conformance kit": "一致性测试套件",
            "protocol": "协议",
            "concurrency": "并发",
        },
        style_rules=(
            "Write Simplified Chinese characters only, as used in mainland China; never "
            "Traditional characters.",
            "Use full-width Chinese punctuation (，。：；（）) in Chinese sentences; keep ASCII "  # noqa: RUF001
            "punctuation inside English terms and identifiers.",
            "Put one space between Chinese characters and English words or numbers, "
            "e.g. 使用 SQLite 存储.",
            "Keep the English term in parentheses after a mapped term the first time it "
            "appears on the page, e.g. 会话 (session).",
            "Write concise, direct technical Chinese; avoid 您 and translationese such as "
            "needless 被 constructions.",
        ),
    ),
}

# Terms that stay in English in every language: product, library and API names.
GLOSSARY_KEPT_IN_ENGLISH: Final = (
    "agent-sessions",
    "agent_sessions",
    "lint_rules",
    "Session",
    "SessionABC",
    "SessionSettings",
    "SQLiteSession",
    "Agent",
    "Runner",
    "OpenAI Agents SDK",
    "SQLite",
    "Redis",
    "PostgreSQL",
    "MkDocs",
    "pre-commit",
    "ruff",
    "mypy",
    "typos",
    "libcst",
    "WAL",
    "JSON",
    "CLI",
)

DEFAULT_MODEL: Final = "o3"
DEFAULT_JOBS: Final = 4
MAX_ATTEMPTS: Final = 6
"""Requests per reply, counting retries of rate limits, server and connection errors."""
MAX_REPLY_ATTEMPTS: Final = 3
"""Replies per page: a rejected reply is sent back with the reason this many times, less one."""
# Retry-After values above this are not honoured (we fall back to our own backoff): a
# server asking for minutes is better answered by failing the page and running again later.
MAX_HONOURED_RETRY_AFTER: Final = 60.0
RETRY_BASE_DELAY: Final = 1.0
MAX_BACKOFF: Final = 60.0
REQUEST_TIMEOUT: Final = 600.0
MANIFEST_NAME: Final = ".translation-manifest.json"
NOT_PAGES: Final = ("scripts",)
# The API reference is rendered from the English docstrings: translating its pages would
# only duplicate it. The site shows the English reference in every language.
UNTRANSLATED: Final = ("ref",)
DOCS_DIR: Final = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ModelChoice:
    """The model one language is translated with, and the settings sent with it."""

    name: str
    settings: Mapping[str, object]


# Reasoning models (o1, o3, o4-mini, gpt-5...) reject sampling settings such as temperature;
# they take a reasoning effort instead. Other models translate at temperature 0.
_REASONING_MODEL: Final = re.compile(r"^(?:o\d|gpt-5)(?:$|[-.])")


def choose_model(language: Language, environ: Mapping[str, str]) -> ModelChoice:
    """The model for ``language``: ``OPENAI_MODEL_<CODE>``, else ``OPENAI_MODEL``, else o3,
    with the settings of its family."""
    name = (
        environ.get(f"OPENAI_MODEL_{language.code.upper()}", "").strip()
        or environ.get("OPENAI_MODEL", "").strip()
        or DEFAULT_MODEL
    )
    if _REASONING_MODEL.match(name):
        effort = environ.get("OPENAI_REASONING_EFFORT", "").strip()
        return ModelChoice(name, {"reasoning_effort": effort} if effort else {})
    return ModelChoice(name, {"temperature": 0.0})


class TranslationError(Exception):
    """A page could not be translated; its old translation (if any) is untouched."""


class PlaceholderMismatchError(TranslationError):
    """The model's reply lost, repeated, invented, reordered or displaced placeholders."""


class ManifestError(Exception):
    """A manifest file exists but is not one this script wrote."""


class ConfigError(Exception):
    """mkdocs.yml cannot be read for its navigation."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 nothing could be translated,
    2 usage)."""
    parser = argparse.ArgumentParser(
        description="Translate new and changed English docs pages into docs/<lang>/."
    )
    parser.add_argument("--all", action="store_true", help="re-translate every page")
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be sent; send nothing"
    )
    parser.add_argument(
        "--lang",
        action="append",
        choices=sorted(LANGUAGES),
        help="a target language (repeatable; default: every language of the table)",
    )
    parser.add_argument(
        "--jobs", type=int, default=DEFAULT_JOBS, help="pages in flight at once (default 4)"
    )
    parser.add_argument(
        "--docs-dir", type=Path, default=DOCS_DIR, help="the docs folder (default: ./docs)"
    )
    parser.add_argument(
        "--config-file",
        type=Path,
        help="the mkdocs.yml whose navigation titles are translated "
        "(default: mkdocs.yml beside the docs folder, when there is one)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    docs_dir: Path = args.docs_dir
    if not docs_dir.is_dir():
        parser.error(f"--docs-dir {docs_dir} is not a directory")
    config_file: Path | None = args.config_file
    if config_file is None and (docs_dir.parent / "mkdocs.yml").is_file():
        config_file = docs_dir.parent / "mkdocs.yml"
    elif config_file is not None and not config_file.is_file():
        parser.error(f"--config-file {config_file} is not a file")
    languages = [LANGUAGES[code] for code in (args.lang or sorted(LANGUAGES))]

    try:
        titles = nav_titles(config_file) if config_file else []
        plans = [
            plan_language(docs_dir, language, force_all=args.all, nav=titles)
            for language in languages
        ]
    except (ManifestError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for plan in plans:
        for line in plan.describe():
            print(line)
    if args.dry_run:
        return 0

    needs_model = any(plan.needs_model for plan in plans)
    api_key = os.environ.get("OPENAI_API_KEY", "").strip()
    if needs_model and not api_key:
        print(
            "error: OPENAI_API_KEY is not set; export it to translate "
            "(or use --dry-run to list what would be sent).",
            file=sys.stderr,
        )
        return 2

    translator = None
    if needs_model:
        try:
            from openai import AsyncOpenAI
        except ImportError:
            print(
                'error: the openai package is missing: pip install "agent-sessions[openai]"',
                file=sys.stderr,
            )
            return 2
        client = AsyncOpenAI(
            api_key=api_key,
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            max_retries=0,  # retries are ours: see PageTranslator.translate
            timeout=REQUEST_TIMEOUT,
        )
        models = {language.code: choose_model(language, os.environ) for language in languages}
        translator = PageTranslator(client, models=models)
    outcome = asyncio.run(run_plans(plans, translator, jobs=args.jobs))
    annotate = os.environ.get("GITHUB_ACTIONS") == "true"
    for failure in outcome.failures:
        print(f"error: {failure}", file=sys.stderr)
        if annotate:
            print(failure.annotation())
    if outcome.failures:
        print(
            f"{len(outcome.failures)} failed, {outcome.written} written: the failed pages keep "
            "their previous translation and are sent again by the next run",
            file=sys.stderr,
        )
    return 1 if outcome.failures and not outcome.written else 0


@dataclass(frozen=True)
class Failure:
    """A page (or the navigation) that could not be translated, and why."""

    language: str
    source: str
    """The English file: a page relative to the docs folder, or ``mkdocs.yml``."""
    reason: str

    def __str__(self) -> str:
        return f"{self.language}: {self.source}: {self.reason}"

    def annotation(self) -> str:
        """A GitHub Actions workflow command that shows the failure on the run's summary."""
        file = self.source if self.source == "mkdocs.yml" else f"docs/{self.source}"
        message = f"{self.language}: {self.reason}".replace("%", "%25").replace("\n", "%0A")
        return f"::error file={file},title=translation failed ({self.language})::{message}"


@dataclass
class Outcome:
    """What a run did: how many translations it wrote and what failed."""

    written: int = 0
    failures: list[Failure] = field(default_factory=list)


# --- planning -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PageChange:
    """One English page to translate, with the hash of the source being translated."""

    path: str
    """Relative to the docs folder, with forward slashes (e.g. ``guide/sessions.md``)."""
    source_hash: str
    reason: str


@dataclass
class LanguagePlan:
    """What one run does for one language."""

    language: Language
    docs_dir: Path
    to_translate: list[PageChange] = field(default_factory=list)
    to_delete: list[str] = field(default_factory=list)
    nav_to_translate: list[str] = field(default_factory=list)
    """Navigation titles of mkdocs.yml without a translation in the manifest."""
    nav_titles: list[str] | None = None
    """Every navigation title of mkdocs.yml; None when no mkdocs.yml was read."""

    @property
    def target_dir(self) -> Path:
        return self.docs_dir / self.language.code

    @property
    def needs_model(self) -> bool:
        return bool(self.to_translate or self.nav_to_translate)

    def describe(self) -> list[str]:
        """One line per page this plan would send or delete."""
        code = self.language.code
        lines = [
            f"{code}: translate {change.path} ({change.reason})" for change in self.to_translate
        ]
        lines += [f"{code}: delete {path} (source removed)" for path in self.to_delete]
        if self.nav_to_translate:
            lines.append(f"{code}: translate {len(self.nav_to_translate)} navigation titles")
        if not lines:
            lines.append(f"{code}: up to date")
        return lines


def plan_language(
    docs_dir: Path, language: Language, *, force_all: bool, nav: Sequence[str] = ()
) -> LanguagePlan:
    """Compare the English pages (and the navigation titles ``nav``) with the manifest."""
    plan = LanguagePlan(language=language, docs_dir=docs_dir)
    manifest = Manifest.load(plan.target_dir / MANIFEST_NAME)
    sources = [page for page in english_pages(docs_dir) if not is_untranslated(page)]
    for path in sources:
        source_hash = hashlib.sha256((docs_dir / path).read_bytes()).hexdigest()
        recorded = manifest.pages.get(path)
        if force_all:
            reason = "--all"
        elif recorded is None:
            reason = "new"
        elif recorded != source_hash:
            reason = "changed"
        elif not (plan.target_dir / path).is_file():
            reason = "translation missing"
        else:
            continue
        plan.to_translate.append(PageChange(path=path, source_hash=source_hash, reason=reason))
    plan.to_delete = sorted(set(manifest.pages) - set(sources))
    if nav:
        plan.nav_titles = list(nav)
        # Only pages with a translation are worth a translated navigation.
        if sources:
            plan.nav_to_translate = [
                title for title in nav if force_all or title not in manifest.nav
            ]
    return plan


def is_untranslated(page: str) -> bool:
    """Whether the page (relative to the docs folder) stays English-only."""
    return page.split("/", 1)[0] in UNTRANSLATED


def english_pages(docs_dir: Path) -> list[str]:
    """The English Markdown pages, relative to ``docs_dir``, sorted."""
    skipped = {*LANGUAGES, *NOT_PAGES}
    pages = []
    for page in docs_dir.rglob("*.md"):
        relative = page.relative_to(docs_dir)
        if relative.parts[0] in skipped or any(p.startswith(".") for p in relative.parts):
            continue
        pages.append(relative.as_posix())
    return sorted(pages)


def nav_titles(config_file: Path) -> list[str]:
    """The titles of the ``nav`` of an mkdocs.yml (sections and pages), in order, once each."""
    try:
        from mkdocs.utils.yaml import yaml_load
    except ImportError as error:
        raise ConfigError(
            f'reading {config_file} needs MkDocs: pip install "agent-sessions[docs]"'
        ) from error
    try:
        with config_file.open("rb") as file:
            config = yaml_load(file)
    except Exception as error:  # yaml and INHERIT errors alike
        raise ConfigError(f"cannot read {config_file}: {error}") from error
    titles: list[str] = []

    def walk(items: object) -> None:
        if isinstance(items, list):
            for item in items:
                walk(item)
        elif isinstance(items, dict):
            for title, value in items.items():
                if isinstance(title, str) and title not in titles:
                    titles.append(title)
                walk(value)

    walk((config or {}).get("nav"))
    return titles


# --- running ------------------------------------------------------------------------------


async def run_plans(
    plans: Iterable[LanguagePlan], translator: PageTranslator | None, *, jobs: int
) -> Outcome:
    """Carry out the plans, at most ``jobs`` pages in flight."""
    limit = asyncio.Semaphore(jobs)
    outcome = Outcome()
    await asyncio.gather(*(run_plan(plan, translator, limit, outcome) for plan in plans))
    return outcome


async def run_plan(
    plan: LanguagePlan,
    translator: PageTranslator | None,
    limit: asyncio.Semaphore,
    outcome: Outcome,
) -> None:
    """Delete, then translate, for one language; the manifest is saved after every page."""
    code = plan.language.code
    manifest_path = plan.target_dir / MANIFEST_NAME
    remove_stale_temporary_files(plan.target_dir)
    manifest = Manifest.load(manifest_path)
    for path in plan.to_delete:
        delete_translation(plan.target_dir, path)
        manifest.pages.pop(path, None)
        manifest.save(manifest_path)
        print(f"{code}: deleted {path}")
    if plan.nav_titles is not None:
        stale = set(manifest.nav) - set(plan.nav_titles)
        if stale:
            for title in stale:
                del manifest.nav[title]
            manifest.save(manifest_path)
    if plan.needs_model and translator is None:
        raise ValueError("pages to translate but no translator")

    async def one_page(change: PageChange) -> None:
        assert translator is not None
        async with limit:
            try:
                await translate_page(plan, change, translator)
            except TranslationError as error:
                outcome.failures.append(Failure(code, change.path, str(error)))
                return
        # No await between these lines: manifest updates never interleave.
        manifest.pages[change.path] = change.source_hash
        manifest.save(manifest_path)
        outcome.written += 1
        print(f"{code}: wrote {change.path}")

    async def navigation() -> None:
        assert translator is not None
        async with limit:
            try:
                titles = await translate_titles(plan.nav_to_translate, plan.language, translator)
            except TranslationError as error:
                outcome.failures.append(Failure(code, "mkdocs.yml", f"navigation: {error}"))
                return
        manifest.nav.update(titles)
        manifest.save(manifest_path)
        outcome.written += 1
        print(f"{code}: translated {len(titles)} navigation titles")

    tasks = [one_page(change) for change in plan.to_translate]
    if plan.nav_to_translate:
        tasks.append(navigation())
    await asyncio.gather(*tasks)


async def translate_page(
    plan: LanguagePlan, change: PageChange, translator: PageTranslator
) -> None:
    """Translate one page and write it atomically; raise TranslationError on any failure."""
    source_bytes = (plan.docs_dir / change.path).read_bytes()
    if hashlib.sha256(source_bytes).hexdigest() != change.source_hash:
        raise TranslationError("the English page changed during the run; run again")
    try:
        source = source_bytes.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TranslationError(f"the English page is not UTF-8 ({error})") from error
    front_matter, body = split_front_matter(source)
    title = front_matter_title(front_matter)
    protected = protect(body, title=title)
    reply = await translator.translate_checked(protected, plan.language)
    translated_title, translated_body = protected.restore(reply)
    page = translated_front_matter(front_matter, change.path, translated_title) + translated_body
    write_atomically(plan.target_dir / change.path, page.encode("utf-8"))


async def translate_titles(
    titles: Sequence[str], language: Language, translator: PageTranslator
) -> dict[str, str]:
    """``{English title: translation}`` for navigation titles, in one request."""
    originals: list[str] = []
    kinds: list[Kind] = []
    lines = []
    for title in titles:
        if PLACEHOLDER.search(title):
            raise TranslationError(f"the title {title!r} contains placeholder-like text")
        originals.append("")
        kinds.append(Kind.LINE_START)
        lines.append(f"@@P{len(originals) - 1}@@ {title}")
    protected = ProtectedText(
        text="\n".join(lines) + "\n", originals=originals, kinds=kinds, indents=[""] * len(lines)
    )
    reply = await translator.translate_checked(protected, language, what="navigation titles")
    translated: dict[str, str] = {}
    for line in strip_wrapping_fence(reply).splitlines():
        if match := re.match(r"^\s*@@P(\d+)@@[ \t]*(?P<title>.*?)\s*$", line):
            text = match["title"].strip().strip("*_").strip() or titles[int(match[1])]
            translated[titles[int(match[1])]] = text
    return translated


class PageTranslator:
    """Sends protected page text to a Chat Completions endpoint, retrying transient errors
    and, with the reason, replies whose placeholders do not check."""

    def __init__(self, client: AsyncOpenAI, *, models: Mapping[str, ModelChoice]) -> None:
        self.client = client
        self.models = models

    async def translate_checked(
        self, protected: ProtectedText, language: Language, *, what: str = "page"
    ) -> str:
        """A reply whose placeholders check (see ProtectedText.check), asking again with the
        reason up to MAX_REPLY_ATTEMPTS replies in all."""
        rejected: list[tuple[str, str]] = []
        for _ in range(MAX_REPLY_ATTEMPTS):
            reply = strip_wrapping_fence(
                await self.translate(protected.text, language, rejected=rejected, what=what)
            )
            try:
                protected.check(reply)
            except PlaceholderMismatchError as error:
                rejected.append((reply, str(error)))
                continue
            return reply
        reasons = "; ".join(f"reply {n}: {reason}" for n, (_, reason) in enumerate(rejected, 1))
        raise PlaceholderMismatchError(f"{len(rejected)} replies rejected ({reasons})")

    async def translate(
        self,
        text: str,
        language: Language,
        *,
        rejected: Sequence[tuple[str, str]] = (),
        what: str = "page",
    ) -> str:
        """The model's reply for ``text``; retries 429, 5xx and connection errors.

        ``rejected`` holds earlier replies and why they were refused: they are sent as the
        conversation so far, so that the model knows what to correct.
        """
        import openai
        from openai.types.chat import ChatCompletionMessageParam

        model = self.models.get(language.code) or ModelChoice(DEFAULT_MODEL, {})
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system_prompt(language)},
            {"role": "user", "content": text},
        ]
        for reply, reason in rejected:
            messages.append({"role": "assistant", "content": reply})
            messages.append({"role": "user", "content": rejection_message(reason, what)})
        for attempt in range(MAX_ATTEMPTS):
            try:
                completion = await self.client.chat.completions.create(
                    model=model.name,
                    messages=messages,
                    extra_body=dict(model.settings),
                )
            except openai.APIStatusError as error:
                transient = error.status_code == 429 or error.status_code >= 500
                if not transient or attempt == MAX_ATTEMPTS - 1:
                    raise TranslationError(
                        f"the model endpoint answered {error.status_code}: {error.message}"
                    ) from error
                retry_after = parse_retry_after(error.response.headers)
                await asyncio.sleep(retry_delay(attempt, retry_after))
                continue
            except openai.APIConnectionError as error:
                if attempt == MAX_ATTEMPTS - 1:
                    raise TranslationError(f"cannot reach the model endpoint: {error}") from error
                await asyncio.sleep(retry_delay(attempt, None))
                continue
            content = completion.choices[0].message.content if completion.choices else None
            if not content:
                raise TranslationError("the model returned an empty reply")
            return content
        raise AssertionError("unreachable: the last attempt returns or raises")


def rejection_message(reason: str, what: str) -> str:
    """What the model is told when its reply was refused."""
    return (
        f"Your translation was rejected: {reason}. Every token (such as @@P0@@) of the {what} must "
        "appear exactly once, in the same order as in the English for tokens that stand on "
        "their own line or start a line, alone on its line with the same indentation when "
        "it stood alone, at the end of its heading, and a link target token right after the "
        "closing bracket of its link text. Translate the whole text again from the start "
        "and reply with the complete translation only."
    )


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry number ``attempt + 1``.

    A small Retry-After from the server wins; otherwise exponential backoff from
    RETRY_BASE_DELAY (doubling per attempt, capped at MAX_BACKOFF) with jitter in
    [50%, 100%], so that parallel pages do not retry in lockstep.
    """
    if retry_after is not None and 0 <= retry_after <= MAX_HONOURED_RETRY_AFTER:
        return retry_after
    return min(RETRY_BASE_DELAY * 2.0**attempt, MAX_BACKOFF) * random.uniform(0.5, 1.0)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds form); None if absent."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None


def system_prompt(language: Language) -> str:
    """The instructions sent with every page: rules, glossary, style and a review workflow."""
    terms = "\n".join(f"- {english} -> {native}" for english, native in language.terms.items())
    style = "\n".join(f"- {rule}" for rule in language.style_rules)
    kept = ", ".join(GLOSSARY_KEPT_IN_ENGLISH)
    return f"""\
You are a professional technical translator. You translate the documentation of \
agent-sessions, a Python library that stores the conversation history of LLM agents, from \
English into {language.name}. The user message is one Markdown page (or a list of \
navigation titles, one per line). Readers are software developers.

# Rules
- Translate the prose only. Keep the Markdown structure exactly: headings and their levels, \
lists, tables, emphasis, blank lines and indentation.
- Tokens like @@P0@@ stand for code, links and markup that must not change. Copy every \
token exactly once, unchanged. Never add, drop, split, translate or renumber a token.
- A token alone on its line stays alone on its line, with the same indentation. A token \
at the start of a line stays at the start of its line. A token at the end of a heading \
stays at the end of that heading. Tokens that stand on or start their own line keep their \
order.
- A token right after a closing bracket (the target of a link, as in [text]@@P3@@) stays \
right after the closing bracket of the translated link text: never move it away.
- On a first line that starts with a token, that line is the page title: translate the \
text after the token and keep the line first.
- Do not add, remove or summarise content. Do not add notes about the translation.
- Reply with the translated text only: no preamble, and do not wrap it in a code fence.

# Glossary
Keep these terms in English: {kept}.

Use these translations for these terms, consistently across the page:
{terms}

# Style for {language.name}
{style}

# Workflow
1. Read the whole page first. Note its headings, its tokens and the glossary terms it uses.
2. Translate it section by section into a complete first draft.
3. Review the draft against the English, sentence by sentence:
   - meaning: nothing added, dropped or softened; numbers, names, negations and conditions \
intact;
   - tokens: every token exactly once and where the rules above put it;
   - structure: the same headings, list items, table rows and columns, and blank lines;
   - terms: the glossary's words, used the same way everywhere;
   - style: the style rules above, and sentences that read naturally to a native developer \
rather than as a word-for-word rendering.
4. Fix every problem the review found, then review the fixed parts once more.
5. Reply with the final translation only."""


# --- keeping markup away from the model ------------------------------------------------------

PLACEHOLDER: Final = re.compile(r"@@P(\d+)@@")
_FENCE_OPEN: Final = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DIRECTIVE_LINE: Final = re.compile(r"^(?P<indent>[ \t]*)(?P<body>(?::::|--8<--).*)$")
_ADMONITION_MARKER: Final = re.compile(
    r"^(?P<indent>[ \t]*)(?P<marker>(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+[\w-]+)*)"
)
_REFERENCE_DEFINITION: Final = re.compile(r"^(?P<indent> {0,3})(?P<body>\[[^\]]+\]:[ \t]+\S.*)$")
_ATX_HEADING: Final = re.compile(r"^ {0,3}#{1,6}[ \t]+(?P<text>.*?)(?:[ \t]+#+)?[ \t]*$")
_EXPLICIT_ANCHOR: Final = re.compile(r"\{[^}\n]*#[^}\n]*\}[ \t]*$")
# One alternation, applied left to right, so that whichever construct starts first wins
# (a comment inside inline code stays inside it, and the reverse).
_INLINE_MARKUP: Final = re.compile(
    "|".join(
        (
            r"<!--.*?-->",  # HTML comments (tool directives live there)
            r"(?<!`)(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)",  # inline code
            r"(?<=\])\((?:[^()\s]|\([^()\s]*\))*(?:[ \t]+\"[^\"]*\")?\)",  # link targets
            r"(?<=\])\[[^\]]*\]",  # reference link labels
            r"<(?:https?|mailto):[^>\s]+>",  # autolinks
            r"https?://[^\s)>\]@]+",  # bare URLs
            r"\{[ \t]*[#.][^}\n]*\}",  # attribute lists: { #anchor .class }
        )
    ),
    re.DOTALL,
)


class Kind(enum.Enum):
    """Where a placeholder's markup works, and so where the reply must keep its token."""

    BLOCK = "a block (code, directive) alone on its line"
    LINE_START = "markup that starts its line"
    HEADING_END = "a heading's anchor, at the end of the heading"
    AFTER_BRACKET = "a link target, right after the closing bracket of its link text"
    INLINE = "inline markup"
    TITLE = "the page title, starting the first line"


# Tokens of these kinds give a page its shape: the reply keeps them in the source's order.
# Inline tokens may move within their sentence, as word order differs between languages.
_STRUCTURAL: Final = frozenset({Kind.BLOCK, Kind.LINE_START, Kind.HEADING_END, Kind.TITLE})


@dataclass
class ProtectedText:
    """Page text with markup replaced by ``@@P<n>@@`` tokens, and the markup they stand for."""

    text: str
    originals: list[str]
    kinds: list[Kind]
    indents: list[str]
    """The indentation of each BLOCK and LINE_START token's line ('' for the others)."""

    def check(self, reply: str) -> None:
        """Raise PlaceholderMismatchError unless ``reply`` holds every token of the text once,
        the structural tokens in the text's order, and every token where its markup works."""
        expected = [int(m.group(1)) for m in PLACEHOLDER.finditer(self.text)]
        found = [int(m.group(1)) for m in PLACEHOLDER.finditer(reply)]
        counts = Counter(found)
        problems = [
            f"{label} {', '.join(f'@@P{i}@@' for i in sorted(indices))}"
            for label, indices in (
                ("missing", set(expected) - counts.keys()),
                ("repeated", {i for i, n in counts.items() if n > 1 and i in expected}),
                ("unknown", counts.keys() - set(expected)),
            )
            if indices
        ]
        if problems:
            raise PlaceholderMismatchError("placeholders " + "; ".join(problems))
        structural = [i for i in expected if self.kinds[i] in _STRUCTURAL]
        if [i for i in found if self.kinds[i] in _STRUCTURAL] != structural:
            raise PlaceholderMismatchError(
                "placeholders out of order: the tokens that stand on or start a line must "
                "keep the order " + " ".join(f"@@P{i}@@" for i in structural)
            )
        first_line = next((line for line in reply.splitlines() if line.strip()), "")
        displaced = [
            f"@@P{index}@@ ({self.kinds[index].value})"
            for index, line, start in _token_positions(reply)
            if not self._in_place(index, line, start, first_line)
        ]
        if displaced:
            raise PlaceholderMismatchError("placeholders out of place: " + "; ".join(displaced))

    def _in_place(self, index: int, line: str, start: int, first_line: str) -> bool:
        token = f"@@P{index}@@"
        kind = self.kinds[index]
        if kind is Kind.BLOCK:
            return line.rstrip() == self.indents[index] + token
        if kind is Kind.LINE_START:
            return line.startswith(self.indents[index] + token)
        if kind is Kind.TITLE:
            return line.startswith(token) and line == first_line
        if kind is Kind.HEADING_END:
            return bool(re.match(rf"^ {{0,3}}#{{1,6}}[ \t]+.*{token}[ \t]*$", line))
        if kind is Kind.AFTER_BRACKET:
            return line[:start].endswith("]")
        return True

    def restore(self, reply: str) -> tuple[str | None, str]:
        """``(translated title or None, page body)`` with the markup put back into a reply;
        raise PlaceholderMismatchError when the reply does not check."""
        self.check(reply)
        title = None
        if self.kinds and self.kinds[0] is Kind.TITLE:
            first, _, rest = reply.lstrip().partition("\n")
            title = first.replace("@@P0@@", "", 1).strip()
            reply = rest.lstrip("\n")
        return title, self._expand(reply).rstrip() + "\n"

    def _expand(self, text: str) -> str:
        # Markup may hold tokens issued before it (a stray backtick pairing across a code
        # block): expand recursively. Sources never contain literal tokens (see protect).
        return PLACEHOLDER.sub(lambda m: self._expand(self.originals[int(m.group(1))]), text)


def _token_positions(text: str) -> Iterator[tuple[int, str, int]]:
    """``(token number, its line, its column)`` for every token of ``text``."""
    for line in text.splitlines():
        for match in PLACEHOLDER.finditer(line):
            yield int(match.group(1)), line, match.start()


def protect(body: str, *, title: str | None = None) -> ProtectedText:
    """Replace everything the model must not touch with placeholders.

    Protected: fenced code blocks (at any indentation), mkdocstrings (``:::``) and snippet
    (``--8<--``) directives with their indented options, admonition markers (the title
    stays translatable), reference definitions, HTML comments, inline code, link targets,
    reference labels, URLs and attribute lists. ATX headings (``## Title``) get their
    English anchor as an explicit ``{ #id }``, so that links into the page keep working.
    A front-matter ``title`` is sent as the first line, after token 0. Indented (unfenced)
    code blocks are not recognised: write code in fences. A page containing
    placeholder-like text is refused.
    """
    for text in (body, title or ""):
        if literal := PLACEHOLDER.search(text):
            raise TranslationError(
                f"the page contains the placeholder-like text {literal.group(0)!r}, "
                "which the translation could not tell from its own placeholders"
            )
    originals: list[str] = []
    kinds: list[Kind] = []
    indents: list[str] = []
    anchors: set[str] = set()

    def hold(markup: str, kind: Kind, indent: str = "") -> str:
        originals.append(markup)
        kinds.append(kind)
        indents.append(indent)
        return f"@@P{len(originals) - 1}@@"

    out: list[str] = []
    if title is not None:
        out.append(f"{hold('', Kind.TITLE)} {title}\n\n")
    lines = body.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        line = lines[index]
        content = line.rstrip("\r\n")
        newline = line[len(content) :]
        fence = _FENCE_OPEN.match(content)
        if fence and fence["fence"][0] == "`" and "`" in fence["info"]:
            fence = None  # inline code at the start of a line, not a fence
        block_start = fence or _DIRECTIVE_LINE.match(content)
        if block_start:
            if fence:
                end = _fence_end(lines, index, fence["fence"])
            else:
                end = _indented_block_end(lines, index, len(block_start["indent"]))
            indent = block_start["indent"]
            block = "".join(lines[index : end + 1])[len(indent) :]
            block_content = block.rstrip("\r\n")
            trailing = block[len(block_content) :]
            out.append(indent + hold(block_content, Kind.BLOCK, indent) + trailing)
            index = end + 1
            continue
        heading = _ATX_HEADING.match(content)
        if heading and not _EXPLICIT_ANCHOR.search(content):
            # The English anchor, made explicit, so links into the translation still land.
            anchor = f"{{ #{heading_anchor(heading['text'], anchors)} }}"
            out.append(f"{content} {hold(anchor, Kind.HEADING_END)}{newline}")
        elif reference := _REFERENCE_DEFINITION.match(content):
            indent = reference["indent"]
            out.append(indent + hold(reference["body"], Kind.LINE_START, indent) + newline)
        elif admonition := _ADMONITION_MARKER.match(content):
            indent = admonition["indent"]
            marker = hold(admonition["marker"], Kind.LINE_START, indent)
            out.append(indent + marker + line[admonition.end() :])
        else:
            out.append(line)
        index += 1

    def hold_inline(match: re.Match[str]) -> str:
        markup = match.group(0)
        after_bracket = markup[0] in "([" and match.string[match.start() - 1 : match.start()] == "]"
        return hold(markup, Kind.AFTER_BRACKET if after_bracket else Kind.INLINE)

    text = _INLINE_MARKUP.sub(hold_inline, "".join(out))
    return ProtectedText(text=text, originals=originals, kinds=kinds, indents=indents)


def heading_anchor(text: str, taken: set[str]) -> str:
    """The id Python-Markdown's ``toc`` extension gives a heading of ``text`` (its default
    slugify on the text without inline markup), unique among ``taken`` (updated)."""
    plain = re.sub(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])", r"\1", text)  # links: their text
    plain = re.sub(r"[`*]", "", plain)  # code spans and emphasis: their content
    ascii_text = unicodedata.normalize("NFKD", plain).encode("ascii", "ignore").decode("ascii")
    anchor = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", ascii_text).strip().lower())
    while not anchor or anchor in taken:
        numbered = re.fullmatch(r"(.*)_(\d+)", anchor)
        anchor = f"{numbered[1]}_{int(numbered[2]) + 1}" if numbered else f"{anchor}_1"
    taken.add(anchor)
    return anchor


def _fence_end(lines: Sequence[str], start: int, opening: str) -> int:
    """Index of the line closing the fence opened at ``start`` (the last line if unclosed)."""
    closing = re.compile(rf"^[ \t]*{re.escape(opening[0])}{{{len(opening)},}}[ \t]*$")
    for index in range(start + 1, len(lines)):
        if closing.match(lines[index].rstrip("\r\n")):
            return index
    return len(lines) - 1


def _indented_block_end(lines: Sequence[str], start: int, indent: int) -> int:
    """Last line of the block led by ``lines[start]``: following non-blank, deeper lines."""
    end = start
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if not line.strip():
            break
        if len(line) - len(line.lstrip(" \t")) <= indent:
            break
        end = index
    return end


def split_front_matter(page: str) -> tuple[str, str]:
    """``(front matter YAML without the --- lines, body)``; the YAML is '' when absent."""
    match = re.match(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", page, re.S | re.M)
    if not match:
        return "", page
    return match.group(1), page[match.end() :]


def front_matter_title(source_yaml: str) -> str | None:
    """The page's ``title:`` when it is a one-line string, the only form sent to be
    translated; None otherwise."""
    match = re.search(r"^title:[ \t]*(?P<value>\S.*?)[ \t]*$", source_yaml, re.M)
    if not match:
        return None
    import yaml  # type: ignore[import-untyped, import-not-found, unused-ignore]

    try:
        value = yaml.safe_load(match["value"])
    except yaml.YAMLError:
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()


def translated_front_matter(source_yaml: str, path: str, title: str | None = None) -> str:
    """The source's front matter with its ``title`` translated, plus
    ``search: exclude: true`` (mkdocs-material)."""
    # A top-level `search:` block of the source is replaced, not merged: translations are
    # always excluded from the search index.
    kept: list[str] = []
    in_search_block = False
    for line in source_yaml.splitlines():
        if re.match(r"^search\s*:", line):
            in_search_block = True
            continue
        if in_search_block and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        in_search_block = False
        if title and re.match(r"^title:[ \t]*\S", line):
            line = f"title: {json.dumps(title, ensure_ascii=False)}"  # JSON strings are YAML
        kept.append(line)
    header = f"# Translated from docs/{path} by docs/scripts/translate_docs.py: edit the source."
    return "\n".join(["---", header, *kept, "search:", "  exclude: true", "---", ""]) + "\n"


def strip_wrapping_fence(reply: str) -> str:
    """Remove a code fence the model wrapped around the whole page (pages never start with
    one after protection: every real fence is a placeholder)."""
    match = re.fullmatch(r"\s*(`{3,}|~{3,})[\w-]*[ \t]*\n(.*)\n[ \t]*\1\s*", reply, re.S)
    return match.group(2) if match else reply.lstrip("\n")


# --- files --------------------------------------------------------------------------------


@dataclass
class Manifest:
    """``pages``: {page path: SHA-256 of the English source its translation was made from};
    ``nav``: {English navigation title of mkdocs.yml: its translation} (read by the site's
    hooks, docs/scripts/mkdocs_hooks.py)."""

    pages: dict[str, str]
    nav: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            return cls(pages={})
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pages = data["pages"]
            nav = data.get("nav", {})
            for name, mapping in (("pages", pages), ("nav", nav)):
                if not isinstance(mapping, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
                ):
                    raise TypeError(f"{name!r} must map strings to strings")
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ManifestError(
                f"{path} is not a translation manifest ({error}); delete it and run with --all"
            ) from error
        return cls(pages=dict(pages), nav=dict(nav))

    def save(self, path: Path) -> None:
        document = {
            "pages": dict(sorted(self.pages.items())),
            "nav": dict(sorted(self.nav.items())),
        }
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        write_atomically(path, text.encode("utf-8"))


TEMPORARY_PREFIX: Final = ".translate-tmp-"


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename: readers see the old or the new file.

    The file gets the mode of the file it replaces, or that of any new file (0666 less the
    umask), not the 0600 of a temporary file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def delete_translation(target_dir: Path, path: str) -> None:
    """Remove a translated page, and the folders that this leaves empty."""
    page = target_dir / path
    page.unlink(missing_ok=True)
    for folder in page.parents:
        if folder == target_dir or not folder.is_relative_to(target_dir):
            break
        if any(folder.iterdir()):
            break
        folder.rmdir()


def remove_stale_temporary_files(target_dir: Path) -> None:
    """Delete temporary files a killed run left behind (never a finished page)."""
    if target_dir.is_dir():
        for leftover in target_dir.rglob(f"{TEMPORARY_PREFIX}*"):
            leftover.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
