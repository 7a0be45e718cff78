"""The result cache's own contract, called directly: what its run key holds, when a
lookup misses, what a save writes and keeps.

Found by mutation testing (benchmarks/mutation.py cache): the engine's tests run it only
through whole runs, where a key that ignores an input or a lookup that misses too often
shows only as speed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from lint_rules.analysis.project import Project
from lint_rules.config import Config
from lint_rules.engine.cache import CACHE_DIRECTORY, ResultCache, content_digest, run_key
from lint_rules.engine.results import FileResult, RunOptions
from lint_rules.rule import Edit, Finding, Fix, Rule

RULE_SOURCE = """
from pathlib import Path


class FakeRule:
    CODE = "LR901"
    depends_on: list[Path] = []
    fingerprints: dict[Path, str] = {}
    asked: list[Path] = []

    def dependencies(self) -> list[Path]:
        return list(self.depends_on)

    @classmethod
    def cache_fingerprint(cls, directory: Path) -> str:
        cls.asked.append(directory)
        return cls.fingerprints.get(directory, "")


class OtherRule(FakeRule):
    CODE = "LR902"
"""


class StampedProject(Project):
    """A project whose stamp the test sets, counting how often it is asked."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.current = "stamp-1"
        self.stamps = 0

    def stamp(self) -> str:
        self.stamps += 1
        return self.current


@pytest.fixture
def rules_module(tmp_path: Path) -> Iterator[ModuleType]:
    path = tmp_path / "fake_rules_for_cache.py"
    path.write_text(RULE_SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("fake_rules_for_cache", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def rule(module: ModuleType, name: str = "FakeRule") -> Rule:
    return cast(Rule, getattr(module, name)())


def finding(line: int, fix: Fix | None = None) -> Finding:
    return Finding("LR901", f"message {line}", line, 2, line, 9, fix)


# -- the run key ---------------------------------------------------------------------------


def test_the_run_key_is_stable_and_short(tmp_path: Path, rules_module: ModuleType) -> None:
    config = Config(root=tmp_path)
    key = run_key(config, [rule(rules_module)], RunOptions())
    assert key == run_key(Config(root=tmp_path), [rule(rules_module)], RunOptions())
    assert len(key) == 32
    int(key, 16)
    # Options that do not change findings do not change the key.
    assert key == run_key(config, [rule(rules_module)], RunOptions(jobs=4, use_prefilter=False))


def test_the_run_key_changes_with_each_input(tmp_path: Path, rules_module: ModuleType) -> None:
    config = Config(root=tmp_path)
    one = [rule(rules_module)]
    key = run_key(config, one, RunOptions())
    changed = {
        "rules": run_key(config, [rule(rules_module, "OtherRule")], RunOptions()),
        "more rules": run_key(config, [*one, rule(rules_module, "OtherRule")], RunOptions()),
        "config": run_key(Config(root=tmp_path, ignore=("LR9",)), one, RunOptions()),
        "root": run_key(Config(root=tmp_path / "sub"), one, RunOptions()),
        "include_generated": run_key(config, one, RunOptions(include_generated=True)),
    }
    assert all(other != key for other in changed.values()), changed
    assert len(set(changed.values())) == len(changed)


def test_the_run_key_follows_the_rules_source(tmp_path: Path, rules_module: ModuleType) -> None:
    config = Config(root=tmp_path)
    source = Path(cast(str, rules_module.__file__))
    key = run_key(config, [rule(rules_module)], RunOptions())
    source.write_text(RULE_SOURCE + "\n# edited\n", encoding="utf-8")
    assert run_key(config, [rule(rules_module)], RunOptions()) != key


def test_the_run_key_follows_the_content_of_a_dependency_not_its_time_stamp(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    dependency = tmp_path / "typos.toml"
    dependency.write_text("a = 1\n", encoding="utf-8")
    rules_module.FakeRule.depends_on = [dependency]
    config = Config(root=tmp_path)
    key = run_key(config, [rule(rules_module)], RunOptions())
    status = dependency.stat()
    dependency.write_text("a = 2\n", encoding="utf-8")  # same size
    os.utime(dependency, ns=(status.st_atime_ns, status.st_mtime_ns))  # same time
    edited = run_key(config, [rule(rules_module)], RunOptions())
    assert edited != key
    dependency.unlink()
    missing = run_key(config, [rule(rules_module)], RunOptions())
    assert missing not in (key, edited)
    assert run_key(config, [rule(rules_module)], RunOptions()) == missing


# -- open, lookup, save ---------------------------------------------------------------------


def open_cache(root: Path, module: ModuleType, project: Project | None = None) -> ResultCache:
    return ResultCache.open(
        Config(root=root), [rule(module)], RunOptions(), project or StampedProject(root)
    )


def test_a_missing_unreadable_or_foreign_cache_file_opens_empty(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    cache = open_cache(tmp_path, rules_module)
    assert cache.entries == {}
    key = run_key(Config(root=tmp_path), [rule(rules_module)], RunOptions())
    assert cache.location == tmp_path / CACHE_DIRECTORY / f"{key}.json"
    cache.location.parent.mkdir()
    for content in ("{not json", "[1, 2]", '"text"'):
        cache.location.write_text(content, encoding="utf-8")
        assert open_cache(tmp_path, rules_module).entries == {}
    cache.location.write_bytes(b"\xff\xfe")
    assert open_cache(tmp_path, rules_module).entries == {}


def test_a_saved_result_is_found_again_with_its_findings_and_fixes(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    module = tmp_path / "m.py"
    module.write_bytes(b"x = 1\n")
    fixed = Fix((Edit(0, 1, "y"), Edit(4, 5, "2")), safe=False)
    findings = [finding(1, fixed), finding(2)]
    digest = content_digest(module.read_bytes())
    cache = open_cache(tmp_path, rules_module)
    cache.save([FileResult(module, findings, digest)])

    hit = open_cache(tmp_path, rules_module).lookup(module)
    assert hit is not None
    assert (hit.path, hit.findings, hit.digest) == (module, findings, digest)
    assert hit.cached is True
    assert hit.reads_project is False
    ignore_file = tmp_path / CACHE_DIRECTORY / ".gitignore"
    assert ignore_file.read_text(encoding="utf-8").splitlines()[-1] == "*"


def test_a_lookup_misses_when_the_content_or_a_fingerprint_changed(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    module = tmp_path / "m.py"
    module.write_bytes(b"x = 1\n")
    cache = open_cache(tmp_path, rules_module)
    cache.save([FileResult(module, [finding(1)], content_digest(b"x = 1\n"))])

    assert open_cache(tmp_path, rules_module).lookup(module, b"x = 2\n") is None
    assert open_cache(tmp_path, rules_module).lookup(module, b"x = 1\n") is not None
    module.write_bytes(b"x = 3\n")
    assert open_cache(tmp_path, rules_module).lookup(module) is None
    module.write_bytes(b"x = 1\n")
    assert open_cache(tmp_path, rules_module).lookup(module) is not None
    rules_module.FakeRule.fingerprints = {tmp_path: "typos v2"}
    assert open_cache(tmp_path, rules_module).lookup(module) is None
    module.unlink()
    assert open_cache(tmp_path, rules_module).lookup(module) is None


def test_a_lookup_misses_an_entry_of_another_shape(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    module = tmp_path / "m.py"
    module.write_bytes(b"x = 1\n")
    cache = open_cache(tmp_path, rules_module)
    good: list[Any] = [content_digest(b"x = 1\n"), [], "", None]
    entries: list[object] = [good[:3], [*good, 1], "text", None]
    for entry in entries:
        cache.entries[str(module)] = entry  # type: ignore[assignment]
        assert cache.lookup(module) is None, entry
    cache.entries[str(module)] = good
    assert cache.lookup(module) is not None


def test_a_result_that_read_the_project_holds_only_for_its_stamp(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    module = tmp_path / "m.py"
    module.write_bytes(b"x = 1\n")
    project = StampedProject(tmp_path)
    cache = open_cache(tmp_path, rules_module, project)
    digest = content_digest(b"x = 1\n")
    cache.save([FileResult(module, [finding(1)], digest, reads_project=True)])
    assert json.loads(cache.location.read_text(encoding="utf-8"))[str(module)][3] == "stamp-1"

    later = StampedProject(tmp_path)
    hit = open_cache(tmp_path, rules_module, later).lookup(module)
    assert hit is not None
    assert hit.reads_project is True
    later.current = "stamp-2"
    assert open_cache(tmp_path, rules_module, later).lookup(module) is None


def test_the_stamp_and_fingerprints_are_computed_once_per_run(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    project = StampedProject(tmp_path)
    cache = open_cache(tmp_path, rules_module, project)
    rules_module.FakeRule.fingerprints = {tmp_path: "a"}
    rules_module.FakeRule.asked = []
    results = []
    for number in range(3):
        path = tmp_path / f"m{number}.py"
        path.write_bytes(b"x\n")
        results.append(FileResult(path, [], content_digest(b"x\n"), reads_project=True))
    cache.save(results)
    assert project.stamps == 1
    assert rules_module.FakeRule.asked == [tmp_path]
    assert cache.fingerprint(tmp_path) == "a"
    assert cache.project_stamp() == "stamp-1"
    assert project.stamps == 1


def test_fingerprints_of_several_rules_are_joined_in_order(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    rules_module.FakeRule.fingerprints = {tmp_path: "one"}
    rules = [rule(rules_module), rule(rules_module, "OtherRule")]
    cache = ResultCache(tmp_path / "c.json", {}, StampedProject(tmp_path), rules)
    assert cache.fingerprint(tmp_path) == "one|one"
    assert cache.fingerprint(tmp_path / "elsewhere") == "|"


def test_a_save_keeps_other_paths_skips_digestless_and_writes_nothing_when_warm(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    first, second, third = (tmp_path / f"m{n}.py" for n in range(3))
    cache = open_cache(tmp_path, rules_module)
    cache.save([FileResult(first, [finding(1)], "d1")])
    cache = open_cache(tmp_path, rules_module)
    cache.save([FileResult(second, [], "d2"), FileResult(third, [finding(3)], "")])
    entries = json.loads(cache.location.read_text(encoding="utf-8"))
    assert sorted(entries) == [str(first), str(second)]

    written = cache.location.stat().st_mtime_ns
    os.utime(cache.location, ns=(written - 10**9, written - 10**9))
    warm = open_cache(tmp_path, rules_module)
    warm.save([FileResult(first, [finding(1)], "d1", cached=True)])
    same = open_cache(tmp_path, rules_module)
    same.save([FileResult(first, [finding(1)], "d1")])  # what is stored already
    assert cache.location.stat().st_mtime_ns == written - 10**9
    same.save([FileResult(first, [finding(2)], "d1")])
    assert cache.location.stat().st_mtime_ns != written - 10**9
    assert json.loads(cache.location.read_text(encoding="utf-8"))[str(first)][1][0][2] == 2


def test_a_cache_that_cannot_be_written_is_no_error(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    (tmp_path / CACHE_DIRECTORY).write_text("a file where the directory goes\n")
    cache = open_cache(tmp_path, rules_module)
    cache.save([FileResult(tmp_path / "m.py", [], "d")])
    assert cache.entries[str(tmp_path / "m.py")][0] == "d"


def test_an_existing_gitignore_is_kept(tmp_path: Path, rules_module: ModuleType) -> None:
    directory = tmp_path / CACHE_DIRECTORY
    directory.mkdir()
    (directory / ".gitignore").write_text("# mine\n*\n!keep\n", encoding="utf-8")
    open_cache(tmp_path, rules_module).save([FileResult(tmp_path / "m.py", [], "d")])
    assert (directory / ".gitignore").read_text(encoding="utf-8") == "# mine\n*\n!keep\n"


def test_the_run_key_follows_every_python_file_of_the_tool(
    tmp_path: Path, rules_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "tool"
    (tool / "sub").mkdir(parents=True)
    (tool / "a.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr("lint_rules.engine.cache._PACKAGE_DIRECTORY", tool)
    config = Config(root=tmp_path)

    def key() -> str:
        return run_key(config, [rule(rules_module)], RunOptions())

    before = key()
    (tool / "notes.txt").write_text("not code\n", encoding="utf-8")
    assert key() == before
    (tool / "sub" / "b.py").write_text("y = 2\n", encoding="utf-8")
    nested = key()
    assert nested != before
    status = (tool / "a.py").stat()
    os.utime(tool / "a.py", ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    touched = key()
    assert touched != nested
    (tool / "a.py").write_text("x = 10\n", encoding="utf-8")
    os.utime(tool / "a.py", ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    assert key() != touched  # the size changed


def test_the_run_key_follows_the_names_of_the_tools_files_and_the_dependencies(
    tmp_path: Path, rules_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "a.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr("lint_rules.engine.cache._PACKAGE_DIRECTORY", tool)
    config = Config(root=tmp_path)
    before = run_key(config, [rule(rules_module)], RunOptions())
    os.rename(tool / "a.py", tool / "b.py")  # same size, same time: another file
    assert run_key(config, [rule(rules_module)], RunOptions()) != before

    for name in ("one.toml", "two.toml"):
        (tmp_path / name).write_text("same\n", encoding="utf-8")
    rules_module.FakeRule.depends_on = [tmp_path / "one.toml"]
    one = run_key(config, [rule(rules_module)], RunOptions())
    rules_module.FakeRule.depends_on = [tmp_path / "two.toml"]
    assert run_key(config, [rule(rules_module)], RunOptions()) != one


def test_the_run_key_takes_rule_options_json_cannot_encode(
    tmp_path: Path, rules_module: ModuleType
) -> None:
    import datetime

    def key(day: int) -> str:
        options = {"since": datetime.date(2026, 12, day)}  # a TOML date
        return run_key(
            Config(root=tmp_path, rule_options=options), [rule(rules_module)], RunOptions()
        )

    assert key(1) == key(1)
    assert key(1) != key(2)


def test_the_run_key_of_a_rule_from_a_module_without_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rule class made where no source file is (an interactive session, a generated
    # module): its source counts as the working directory's.
    module = ModuleType("rules_without_a_file")
    module.__file__ = None
    exec(RULE_SOURCE, module.__dict__)  # its classes' __module__ is this module
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.chdir(tmp_path)
    key = run_key(Config(root=tmp_path), [rule(module)], RunOptions())
    assert len(key) == 32
