"""The engine on real files: bad input, suppressions, skipping, crashes, cache, processes."""

from __future__ import annotations

import ast
import codecs
import gc
import json
import subprocess
import sys
import weakref
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.config import load_config
from lint_rules.engine.checker import Checker
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import (
    BATCHES_PER_FORKED_PROCESS,
    BATCHES_PER_SPAWNED_PROCESS,
    MIN_FILES_PER_PROCESS,
    cut_in_batches,
    run,
)
from lint_rules.rule import Rule, parse_source, trees_kept_frozen
from lint_rules.rules import ALL_RULES
from lint_rules.rules.stale_name import StaleNameRule

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import (
        BannedNameRule,
        BatchRule,
        CrashingRule,
        Lint,
        TodoCommentRule,
    )
else:
    from rule_fixtures import (
        BannedNameRule,
        BatchRule,
        CrashingRule,
        Lint,
        TodoCommentRule,
    )

MESSAGE = "`old_name` was renamed to `new_name`"


def _json(outcome_out: str) -> list[dict[str, object]]:
    findings: list[dict[str, object]] = json.loads(outcome_out)
    return findings


def test_syntax_error_is_lr000_at_its_position_and_other_files_are_checked(
    project: Path, lint: Lint
) -> None:
    (project / "broken.py").write_text("x = old_name\ndef f(:\n    pass\n")
    (project / "good.py").write_text("old_name()\n")

    outcome = lint("check", "--no-cache")

    assert outcome.code == 1
    assert "broken.py:2:7: LR000 syntax error: invalid syntax" in outcome.out
    assert f"good.py:1:1: LR001 [*] {MESSAGE}" in outcome.out


def test_syntax_error_in_a_file_no_prefilter_admits_shows_only_without_prefilters(
    project: Path, lint: Lint
) -> None:
    (project / "broken.py").write_text("def f(:\n")

    assert lint("check", "--no-cache").code == 0
    assert "broken.py:1:7: LR000" in lint("check", "--no-cache", "--no-prefilter").out


def test_undecodable_bytes_are_lr000_at_the_bad_byte(project: Path, lint: Lint) -> None:
    (project / "binary.py").write_bytes(b"x = 1\ny = '\xff\xfe'\n")  # never parsed

    outcome = lint("check", "--no-cache")

    assert outcome.code == 1
    assert "binary.py:2:6: LR000 cannot decode file as utf-8" in outcome.out


def test_file_with_bom_is_checked_with_columns_after_the_bom(project: Path, lint: Lint) -> None:
    (project / "bom.py").write_bytes(codecs.BOM_UTF8 + b"old_name = 1\n")

    outcome = lint("check", "--no-cache")

    assert f"bom.py:1:1: LR001 [*] {MESSAGE}" in outcome.out


def test_crlf_file_positions_count_lines_correctly(project: Path, lint: Lint) -> None:
    (project / "crlf.py").write_bytes(b"a = 1\r\nb = 2\r\nc = old_name\r\n")

    outcome = lint("check", "--no-cache")

    assert f"crlf.py:3:5: LR001 [*] {MESSAGE}" in outcome.out


def test_tab_indented_file_is_checked(project: Path, lint: Lint) -> None:
    (project / "tabs.py").write_text("if True:\n\tx = old_name\n")

    outcome = lint("check", "--no-cache")

    assert f"tabs.py:2:6: LR001 [*] {MESSAGE}" in outcome.out


def test_empty_file_passes(project: Path, lint: Lint) -> None:
    (project / "empty.py").write_text("")

    outcome = lint("check", "--no-cache", "--no-prefilter")

    assert outcome.code == 0
    assert outcome.out == "All checks passed!\n"


def test_column_counts_characters_not_utf8_bytes(project: Path, lint: Lint) -> None:
    (project / "accents.py").write_text("s = 'héhé'; t = old_name\n", encoding="utf-8")

    outcome = lint("check", "--no-cache", "--format", "json")

    [finding] = _json(outcome.out)
    assert (finding["column"], finding["end_column"]) == (17, 25)


def test_twenty_thousand_line_file_reports_its_last_line(project: Path, lint: Lint) -> None:
    lines = [f"value_{number} = {number}" for number in range(19_999)]
    (project / "long.py").write_text("\n".join([*lines, "old_name()"]) + "\n")

    outcome = lint("check", "--no-cache")

    assert f"long.py:20000:1: LR001 [*] {MESSAGE}" in outcome.out


def test_nesting_that_breaks_a_recursive_visitor_is_checked(project: Path, lint: Lint) -> None:
    source = "total = " + " + ".join(["old_name"] * 1_000) + "\n"
    with pytest.raises(RecursionError):
        ast.NodeVisitor().visit(ast.parse(source))  # the naive way fails
    (project / "deep.py").write_text(source)

    outcome = lint("check", "--no-cache", "--statistics")

    assert outcome.out.splitlines()[0].split() == ["1000", "LR001", "[*]", "stale-name"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.10's parser builds this tree")
def test_nesting_too_deep_for_the_parser_is_lr000(project: Path, lint: Lint) -> None:
    (project / "deeper.py").write_text("total = " + " + ".join(["old_name"] * 20_000) + "\n")

    outcome = lint("check", "--no-cache")

    assert "deeper.py:1:1: LR000 cannot parse: the code is nested too deeply" in outcome.out


def test_noqa_with_the_code_suppresses_the_finding(project: Path, lint: Lint) -> None:
    (project / "alias.py").write_text("old_name = new_name  # noqa: LR001\n")

    assert lint("check", "--no-cache").code == 0


def test_noqa_for_another_code_does_not_suppress(project: Path, lint: Lint) -> None:
    (project / "alias.py").write_text("old_name = new_name  # noqa: E501, LR002\n")

    assert lint("check", "--no-cache").code == 1


def test_bare_noqa_does_not_suppress(project: Path, lint: Lint) -> None:
    (project / "alias.py").write_text("old_name = new_name  # noqa\n")

    assert lint("check", "--no-cache").code == 1


def test_skip_file_comment_skips_the_file(project: Path, lint: Lint) -> None:
    (project / "skipped.py").write_text('"""Doc."""\n# lint_rules: skip-file\nold_name()\n')

    assert lint("check", "--no-cache").code == 0


def test_generated_file_is_skipped_unless_asked(project: Path, lint: Lint) -> None:
    (project / "generated.py").write_text("# @generated by a tool\nold_name()\n")

    assert lint("check", "--no-cache").code == 0
    assert lint("check", "--no-cache", "--include-generated").code == 1


def test_crashing_rule_is_lr999_naming_rule_and_file_and_other_findings_stay(
    project: Path, lint: Lint
) -> None:
    (project / "crash.py").write_text("boom()\nold_name()\n")

    outcome = lint("check", "--no-cache", rules=[*ALL_RULES, CrashingRule])

    assert outcome.code == 1
    assert "crash.py:1:1: LR999 internal error in rule LR990 (crashing) on " in outcome.out
    assert "crash.py: RuntimeError: the rule broke" in outcome.out
    assert f"crash.py:2:1: LR001 [*] {MESSAGE}" in outcome.out


def test_rule_options_reach_the_rule_in_worker_processes(project: Path, lint: Lint) -> None:
    (project / "pyproject.toml").write_text('[tool.lint_rules]\nbanned = ["eval_me"]\n')
    for number in range(40):
        (project / f"m{number:02}.py").write_text("eval_me()\n")

    outcome = lint("check", "--no-cache", "--jobs", "2", rules=[*ALL_RULES, BannedNameRule])

    assert outcome.out.count("LR992 `eval_me` is banned") == 40


def test_batch_hook_receives_the_files_before_they_are_checked(project: Path, lint: Lint) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (project / name).write_text("x = 1\n")

    outcome = lint(
        "check", "--no-cache", "--jobs", "1", "--select", "LR993", rules=[*ALL_RULES, BatchRule]
    )

    assert outcome.out.count("LR993 checked in a batch of 3 announced file(s)") == 3


def test_rule_can_use_the_libcst_tree_lazily(project: Path, lint: Lint) -> None:
    (project / "todo.py").write_text("x = 1  # TODO: later\n")

    outcome = lint("check", "--no-cache", rules=[*ALL_RULES, TodoCommentRule])

    assert "todo.py:1:8: LR994 a TODO comment" in outcome.out


def test_parallel_output_equals_serial_output(project: Path, lint: Lint) -> None:
    for number in range(60):
        (project / f"module_{number:02}.py").write_text(f"x{number} = old_name\n" * (number % 3))

    serial = lint("check", "--no-cache", "--jobs", "1")
    parallel = lint("check", "--no-cache", "--jobs", "2")

    assert parallel.out == serial.out
    assert serial.out.count("LR001") == 60


def test_files_are_cut_in_many_batches_for_forked_workers_in_path_order() -> None:
    """The files that cost most cluster by path: forked workers (which begin no batch of
    their own) get many batches, so that no one of them keeps a process busy long after the
    others are done; spawned ones, which begin the rules' batch hooks for each, fewer."""
    paths = [Path(f"pkg/m{number:04}.py") for number in range(2546)]

    forked = cut_in_batches(paths, 2, fork=True)
    spawned = cut_in_batches(paths, 2, fork=False)

    for batches, per_process in (
        (forked, BATCHES_PER_FORKED_PROCESS),
        (spawned, BATCHES_PER_SPAWNED_PROCESS),
    ):
        assert [path for batch in batches for path in batch] == paths
        assert len(batches) == 2 * per_process
    assert max(len(batch) for batch in forked) <= len(paths) // 32 + 1  # not 4 per process
    few = cut_in_batches(paths[:40], 2, fork=True)
    assert [len(batch) for batch in few] == [MIN_FILES_PER_PROCESS] * 5


def test_prefilter_keeps_unrelated_files_from_being_parsed(project: Path) -> None:
    (project / "unrelated.py").write_text("x = 1\n")
    (project / "related.py").write_text("x = old_name\n")
    config = load_config(project, ALL_RULES)

    result = run([project], config, [StaleNameRule], RunOptions(use_cache=False))

    assert {r.path.name: r.parsed for r in result.files} == {
        "related.py": True,
        "unrelated.py": False,
    }


def test_a_run_leaves_the_garbage_collector_as_it_found_it(project: Path) -> None:
    """The run freezes what it built before the files (``gc.freeze``) and parses with
    the collector paused: after it, nothing stays frozen and the collector is on."""
    for number in range(20):
        (project / f"m{number}.py").write_text("x = old_name\n")
    (project / "broken.py").write_text("x = old_name\ndef f(:\n")
    config = load_config(project, ALL_RULES)
    frozen = gc.get_freeze_count()

    for jobs in (1, 2):
        result = run([project], config, [StaleNameRule], RunOptions(use_cache=False, jobs=jobs))

        codes = Counter(finding.code for file in result.files for finding in file.findings)
        assert codes == {"LR001": 20, "LR000": 1}
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_trees_parsed_in_a_run_are_frozen_and_everything_unfrozen_after_it() -> None:
    """Inside ``trees_kept_frozen`` each tree is frozen once built, so the collections
    later allocations start do not scan it; a cycle that died meanwhile is collected once
    the outermost block ends; nested blocks unfreeze only there."""
    frozen = gc.get_freeze_count()
    assert frozen == 0
    outside = parse_source("x = 1\n" * 50)
    assert gc.get_freeze_count() == 0  # outside a block, nothing is frozen
    with trees_kept_frozen():
        cycle = weakref.ref(_Cycle())  # made, and dropped, inside the block
        before = gc.get_freeze_count()
        tree = parse_source("x = 1\n" * 200)
        assert gc.get_freeze_count() >= before + 200  # the tree's nodes (and what was alive)
        with trees_kept_frozen():
            parse_source("y = 2\n")
        assert gc.get_freeze_count() > 0  # the inner block unfreezes nothing
        gc.collect()
        assert cycle() is not None  # frozen: not collected inside the block
        assert isinstance(tree.body[0], ast.Assign)
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()
    gc.collect()
    assert cycle() is None
    assert isinstance(outside.body[0], ast.Assign)


def test_a_check_from_the_command_line_leaves_nothing_frozen(project: Path, lint: Lint) -> None:
    """The command line's run keeps the configuration's declarations and the modules it
    reads frozen while it runs (``_lint_run``), and unfreezes them at its end."""
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules.literals]\n"Event.kind" = "events:Event.kind"\n'
    )
    (project / "events.py").write_text(
        "from typing import Literal\n\n\nclass Event:\n    kind: Literal['begin', 'end']\n"
    )
    (project / "use.py").write_text(
        "from events import Event\n\n\ndef on(event: Event) -> bool:\n"
        "    return event.kind == 'ended'\n"
    )
    for number in range(20):  # enough files for two worker processes
        (project / f"other_{number}.py").write_text("x = 1\n")

    for jobs in ("1", "2"):
        outcome = lint("check", "--no-cache", "--jobs", jobs, "--select", "LR002")

        assert outcome.out.count("use.py:5:26: LR002") == 1
        assert gc.get_freeze_count() == 0
        assert gc.isenabled()


def test_parse_source_pauses_the_collector_only_while_it_parses() -> None:
    assert gc.isenabled()
    assert isinstance(parse_source("x = 1\n").body[0], ast.Assign)
    assert gc.isenabled()
    with pytest.raises(SyntaxError):
        parse_source("def f(:\n", "bad.py")
    assert gc.isenabled()
    gc.disable()
    try:
        parse_source("x = 1\n")
        assert not gc.isenabled()  # left off, as the caller had it
    finally:
        gc.enable()


def test_warm_cache_parses_nothing_and_reports_the_same(project: Path) -> None:
    for number in range(5):
        (project / f"m{number}.py").write_text(f"x = old_name  # {number}\n")
    config = load_config(project, ALL_RULES)

    cold = run([project], config, [StaleNameRule], RunOptions())
    warm = run([project], config, [StaleNameRule], RunOptions())

    assert cold.parsed_count == 5
    assert warm.parsed_count == 0
    assert [f.findings for f in warm.files] == [f.findings for f in cold.files]


def test_cache_rechecks_the_changed_file_and_the_results_that_read_the_project(
    project: Path,
) -> None:
    # A bare rename's verdict depends on the project's models (a pydantic or TypedDict
    # field of that name withholds it): those results are cached with the project's
    # stamp, so an edit anywhere rechecks them; the others stay cached.
    for number in range(5):
        (project / f"m{number}.py").write_text("x = old_name\n")
    (project / "quiet.py").write_text("def old_name_free() -> None: ...\n")
    config = load_config(project, ALL_RULES)
    cold = run([project], config, [StaleNameRule], RunOptions())
    (project / "m3.py").write_text("x = new_name  # was old_name\n")

    warm = run([project], config, [StaleNameRule], RunOptions())

    assert cold.parsed_count == 6
    assert warm.parsed_count == 5  # m3 and the four results that read the project
    assert sum(len(f.findings) for f in warm.files) == 4


def test_cache_is_not_used_after_the_config_changes(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("x = old_name\ny = other_name\n")
    assert lint("check").out.count("LR001") == 1
    (project / "pyproject.toml").write_text('[tool.lint_rules.renames]\nother_name = "name"\n')

    outcome = lint("check")

    assert "m.py:2:5: LR001 [*] `other_name` was renamed to `name`" in outcome.out
    assert outcome.out.count("LR001") == 1


def test_no_cache_writes_no_cache_directory(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("x = 1\n")

    lint("check", "--no-cache")

    assert not (project / ".lint_rules_cache").exists()


def test_concurrent_runs_share_the_cache_safely(project: Path) -> None:
    for number in range(30):
        (project / f"m{number:02}.py").write_text(f"x = old_name  # {number}\n")
    command = [sys.executable, "-m", "lint_rules", "check", "--jobs", "1"]

    runs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE) for _ in range(3)]
    outputs = {process.communicate()[0] for process in runs}

    assert len(outputs) == 1
    config = load_config(project, ALL_RULES)
    warm = run([project], config, ALL_RULES, RunOptions())  # the rules the CLI ran
    assert warm.parsed_count == 0
    assert sum(len(result.findings) for result in warm.files) == 30


_EVERY_KIND_OF_CODE = """
import a.b as c
from . import d
global_value: int = 1
def f(x, /, y=2, *args, z, **kwargs) -> None:
    global global_value
    def g():
        nonlocal x
    async def h():
        async with a as b, c:
            async for i in j:
                await k
    return {**kwargs, "k": [i async for i in j if i]}
match command:
    case {"k": 1, **rest} | [1, *others] | Point(x=0) as point if point:
        pass
    case None:
        pass
lambda q: q if q else -q
print(f"{value!r:>{width}}", a[1:2:3], not b, c < d <= e)
try:
    pass
except ValueError as error:
    raise error from None
"""


def test_traversal_visits_every_node_but_context_and_operator_singletons() -> None:
    source = Path(ast.__file__).read_text() + _EVERY_KIND_OF_CODE
    tree = ast.parse(source)
    singletons = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
    expected = Counter(
        type(node).__name__ for node in ast.walk(tree) if not isinstance(node, singletons)
    )
    seen: Counter[str] = Counter()

    def count(self: Rule, node: ast.AST) -> None:
        seen[type(node).__name__] += 1

    visitors = {f"visit_{name}": count for name in expected}
    counting = type("CountingRule", (Rule,), {"CODE": "LR998", "NAME": "counting", **visitors})
    Checker([counting({})]).check(Path("sample.py"), source)

    assert seen == expected
