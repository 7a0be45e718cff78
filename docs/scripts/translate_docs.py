"""Translate the English documentation pages into other languages, paying only for changes.

Usage (from the repository root)::

    python docs/scripts/translate_docs.py            # new and changed pages, every language
    python docs/scripts/translate_docs.py --dry-run  # list what would be sent; needs no key
    python docs/scripts/translate_docs.py --all      # re-translate every page
    python docs/scripts/translate_docs.py --lang ja  # one language of the table

English pages are the Markdown files under ``docs/`` (outside the language folders and
``docs/scripts/``). The API reference (``docs/ref/``) is rendered from English docstrings
and is not translated: translated pages link to the English one. Each language's
translations live in ``docs/<code>/`` beside a checked-in manifest,
``docs/<code>/.translation-manifest.json``, that maps every translated page to the SHA-256
of the English source it was made from. A run sends only pages whose source hash differs
from the manifest (or whose translation is missing) and deletes translations whose English
page is gone.

The model sees prose only: front matter, fenced code blocks, inline code, link targets,
admonition markers, snippet and mkdocstrings directives, HTML comments and URLs are replaced
by placeholders and restored afterwards. A reply that loses or repeats a placeholder is
rejected and the old translation stays. Every file is written atomically (temporary file,
then rename) and the manifest is updated after each page, so an interrupted run leaves
complete pages and a manifest that describes them.

Environment: ``OPENAI_API_KEY`` (required unless nothing is to be sent), ``OPENAI_MODEL``
(default ``o3``), ``OPENAI_BASE_URL`` (any OpenAI-compatible endpoint; the Chat Completions
API is used). Exit codes: 0 success, 1 some pages failed (the others were written), 2 usage
or configuration error.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import posixpath
import random
import re
import sys
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from openai import AsyncOpenAI


@dataclass(frozen=True)
class Language:
    """A target language: its folder name, its English name and how to write it."""

    code: str
    name: str
    terms: Mapping[str, str]
    """English term -> the word to use for it in this language."""
    style_rules: tuple[str, ...]


# The one table of target languages. Adding a language: a row here, and `!docs/<code>/**` in
# the paths of .github/workflows/translate-docs.yml (a test checks both agree).
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
# Retry-After values above this are not honoured (we fall back to our own backoff): a
# server asking for minutes is better answered by failing the page and running again later.
MAX_HONOURED_RETRY_AFTER: Final = 60.0
RETRY_BASE_DELAY: Final = 1.0
MAX_BACKOFF: Final = 60.0
REQUEST_TIMEOUT: Final = 600.0
MANIFEST_NAME: Final = ".translation-manifest.json"
NOT_PAGES: Final = ("scripts",)
# The API reference is rendered from the English docstrings: translating its pages would
# only duplicate it. Translated pages link to the English reference instead.
UNTRANSLATED: Final = ("ref",)
DOCS_DIR: Final = Path(__file__).resolve().parent.parent


class TranslationError(Exception):
    """A page could not be translated; its old translation (if any) is untouched."""


class PlaceholderMismatchError(TranslationError):
    """The model's reply lost, repeated or invented placeholders."""


class ManifestError(Exception):
    """A manifest file exists but is not one this script wrote."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 some pages failed, 2 usage)."""
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
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    docs_dir: Path = args.docs_dir
    if not docs_dir.is_dir():
        parser.error(f"--docs-dir {docs_dir} is not a directory")
    languages = [LANGUAGES[code] for code in (args.lang or sorted(LANGUAGES))]

    try:
        plans = [plan_language(docs_dir, language, force_all=args.all) for language in languages]
    except ManifestError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for plan in plans:
        for line in plan.describe():
            print(line)
    if args.dry_run:
        return 0

    needs_model = any(plan.to_translate for plan in plans)
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
        translator = PageTranslator(client, model=os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL)
    failures = asyncio.run(run_plans(plans, translator, jobs=args.jobs))
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    return 1 if failures else 0


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

    @property
    def target_dir(self) -> Path:
        return self.docs_dir / self.language.code

    def describe(self) -> list[str]:
        """One line per page this plan would send or delete."""
        lines = [
            f"{self.language.code}: translate {change.path} ({change.reason})"
            for change in self.to_translate
        ]
        lines += [
            f"{self.language.code}: delete {path} (source removed)" for path in self.to_delete
        ]
        if not lines:
            lines.append(f"{self.language.code}: up to date")
        return lines


def plan_language(docs_dir: Path, language: Language, *, force_all: bool) -> LanguagePlan:
    """Compare the English pages with the language's manifest."""
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


# --- running ------------------------------------------------------------------------------


async def run_plans(
    plans: Iterable[LanguagePlan], translator: PageTranslator | None, *, jobs: int
) -> list[str]:
    """Carry out the plans, at most ``jobs`` pages in flight; one message per failed page."""
    limit = asyncio.Semaphore(jobs)
    results = await asyncio.gather(*(run_plan(plan, translator, limit) for plan in plans))
    return [failure for failures in results for failure in failures]


async def run_plan(
    plan: LanguagePlan, translator: PageTranslator | None, limit: asyncio.Semaphore
) -> list[str]:
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
    if plan.to_translate and translator is None:
        raise ValueError("pages to translate but no translator")
    failures: list[str] = []

    async def one_page(change: PageChange) -> None:
        assert translator is not None
        async with limit:
            try:
                await translate_page(plan, change, translator)
            except TranslationError as error:
                failures.append(f"{code}: {change.path}: {error}")
                return
        # No await between these lines: manifest updates never interleave.
        manifest.pages[change.path] = change.source_hash
        manifest.save(manifest_path)
        print(f"{code}: wrote {change.path}")

    await asyncio.gather(*(one_page(change) for change in plan.to_translate))
    return failures


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
    protected = protect(body)
    protected.originals = [link_to_english(markup, change.path) for markup in protected.originals]
    reply = await translator.translate(protected.text, plan.language)
    translated_body = protected.restore(strip_wrapping_fence(reply))
    page = translated_front_matter(front_matter, change.path) + translated_body
    write_atomically(plan.target_dir / change.path, page.encode("utf-8"))


class PageTranslator:
    """Sends protected page text to a Chat Completions endpoint, retrying transient errors."""

    def __init__(self, client: AsyncOpenAI, *, model: str) -> None:
        self.client = client
        self.model = model

    async def translate(self, text: str, language: Language) -> str:
        """The model's reply for ``text``; retries 429, 5xx and connection errors."""
        import openai

        for attempt in range(MAX_ATTEMPTS):
            try:
                completion = await self.client.chat.completions.create(
                    model=self.model,
                    messages=[
                        {"role": "system", "content": system_prompt(language)},
                        {"role": "user", "content": text},
                    ],
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
    """The instructions sent with every page: rules, glossary, term mappings and style."""
    terms = "\n".join(f"- {english} -> {native}" for english, native in language.terms.items())
    style = "\n".join(f"- {rule}" for rule in language.style_rules)
    kept = ", ".join(GLOSSARY_KEPT_IN_ENGLISH)
    return f"""\
You translate the documentation of agent-sessions, a Python library, from English into \
{language.name}. The user message is one Markdown page.

Rules:
- Translate the prose only. Keep the Markdown structure exactly: headings and their levels, \
lists, tables, emphasis, blank lines and indentation.
- Tokens like @@P0@@ stand for code, links and markup that must not change. Copy every \
token exactly once, unchanged, where it belongs in the translated sentence. Never add, \
drop, split or translate a token.
- Do not add, remove or summarise content. Do not add notes about the translation.
- Reply with the translated page only: no preamble, and do not wrap it in a code fence.

Keep these terms in English: {kept}.

Use these translations for these terms:
{terms}

Style for {language.name}:
{style}

Workflow: translate the page, then compare your draft with the English sentence by sentence \
(meaning, tokens, structure, term choices) and fix what differs before you reply."""


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


@dataclass
class ProtectedText:
    """Page text with markup replaced by ``@@P<n>@@`` tokens, and the markup they stand for."""

    text: str
    originals: list[str]

    def restore(self, reply: str) -> str:
        """Put the markup back into ``reply``; raise if a token is lost, repeated or unknown."""
        expected = {int(m.group(1)) for m in PLACEHOLDER.finditer(self.text)}
        counts: dict[int, int] = {}
        for match in PLACEHOLDER.finditer(reply):
            counts[int(match.group(1))] = counts.get(int(match.group(1)), 0) + 1
        problems = [
            f"{label} {', '.join(f'@@P{i}@@' for i in sorted(indices))}"
            for label, indices in (
                ("missing", expected - counts.keys()),
                ("repeated", {i for i, n in counts.items() if n > 1 and i in expected}),
                ("unknown", counts.keys() - expected),
            )
            if indices
        ]
        if problems:
            raise PlaceholderMismatchError("reply rejected, placeholders " + "; ".join(problems))
        return self._expand(reply).rstrip() + "\n"

    def _expand(self, text: str) -> str:
        # Markup may hold tokens issued before it (a stray backtick pairing across a code
        # block): expand recursively. Sources never contain literal tokens (see protect).
        return PLACEHOLDER.sub(lambda m: self._expand(self.originals[int(m.group(1))]), text)


def protect(body: str) -> ProtectedText:
    """Replace everything the model must not touch with placeholders.

    Protected: fenced code blocks (at any indentation), mkdocstrings (``:::``) and snippet
    (``--8<--``) directives with their indented options, admonition markers (the title
    stays translatable), reference definitions, HTML comments, inline code, link targets,
    reference labels, URLs and attribute lists. ATX headings (``## Title``) get their
    English anchor as an explicit ``{ #id }``, so that links into the page keep working.
    Indented (unfenced) code blocks are not recognised: write code in fences. A page
    containing placeholder-like text is refused.
    """
    if literal := PLACEHOLDER.search(body):
        raise TranslationError(
            f"the page contains the placeholder-like text {literal.group(0)!r}, "
            "which the translation could not tell from its own placeholders"
        )
    originals: list[str] = []
    anchors: set[str] = set()

    def hold(markup: str) -> str:
        originals.append(markup)
        return f"@@P{len(originals) - 1}@@"

    lines = body.splitlines(keepends=True)
    out: list[str] = []
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
            block = "".join(lines[index : end + 1])[len(block_start["indent"]) :]
            block_content = block.rstrip("\r\n")
            trailing = block[len(block_content) :]
            out.append(block_start["indent"] + hold(block_content) + trailing)
            index = end + 1
            continue
        heading = _ATX_HEADING.match(content)
        if heading and not _EXPLICIT_ANCHOR.search(content):
            # The English anchor, made explicit, so links into the translation still land.
            anchor = hold(f"{{ #{heading_anchor(heading['text'], anchors)} }}")
            out.append(f"{content} {anchor}{newline}")
        elif reference := _REFERENCE_DEFINITION.match(content):
            out.append(reference["indent"] + hold(reference["body"]) + newline)
        elif admonition := _ADMONITION_MARKER.match(content):
            out.append(admonition["indent"] + hold(admonition["marker"]) + line[admonition.end() :])
        else:
            out.append(line)
        index += 1

    text = _INLINE_MARKUP.sub(lambda m: hold(m.group(0)), "".join(out))
    return ProtectedText(text=text, originals=originals)


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


_PAGE_LINK: Final = re.compile(
    r"^(?P<opening>\(|\[[^\]]+\]:[ \t]+)(?P<target>[^\s()#:]+\.md)(?P<rest>.*)$", re.DOTALL
)


def link_to_english(markup: str, page: str) -> str:
    """``markup`` (a protected link target) pointing at the English page when it links to
    an untranslated one: the translation of ``page`` sits one folder deeper."""
    match = _PAGE_LINK.match(markup)
    if not match or match["target"].startswith("/"):
        return markup
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), match["target"]))
    if not is_untranslated(target):
        return markup
    return f"{match['opening']}../{match['target']}{match['rest']}"


def split_front_matter(page: str) -> tuple[str, str]:
    """``(front matter YAML without the --- lines, body)``; the YAML is '' when absent."""
    match = re.match(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", page, re.S | re.M)
    if not match:
        return "", page
    return match.group(1), page[match.end() :]


def translated_front_matter(source_yaml: str, path: str) -> str:
    """The source's front matter plus ``search: exclude: true`` (mkdocs-material)."""
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
    """``{page path: SHA-256 of the English source its translation was made from}``."""

    pages: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            return cls(pages={})
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pages = data["pages"]
            if not isinstance(pages, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in pages.items()
            ):
                raise TypeError("'pages' must map page paths to hashes")
        except (ValueError, KeyError, TypeError) as error:
            raise ManifestError(
                f"{path} is not a translation manifest ({error}); delete it and run with --all"
            ) from error
        return cls(pages=dict(pages))

    def save(self, path: Path) -> None:
        document = {"pages": dict(sorted(self.pages.items()))}
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        write_atomically(path, text.encode("utf-8"))


TEMPORARY_PREFIX: Final = ".translate-tmp-"


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
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
