#!/usr/bin/env python3
"""Keeps the repository's citations of its documentation true.

Fails when a file of the repository
  - names `docs/NAME.md` (a comment, a docstring, a document) and docs/NAME.md does not exist;
  - cites a section of it, `docs/NAME.md, "Heading"` (or `docs/NAME.md's "Heading"`, and further
    `and "Heading"`), and that page has no heading with that text;
  - links, inside a Markdown file, to a relative path that does not exist, or to `PAGE.md#anchor`
    where PAGE.md has no heading with that anchor;
  - outside docs/, still cites a design page by its bare name (`model.md`, `training.md`, `abi.md`,
    `session.md`, `quality.md`, `cli.md`) or a `design/` folder: the design lives in docs/ now.

Before the repository, the checker runs on a small tree it writes itself, holding one violation of
each kind and one correct citation of each kind, and must report exactly those violations; and the
repository must hold at least MINIMUM_CITATIONS citations of docs/, so the test cannot pass by
finding nothing. This file itself is not scanned (it spells out violations). Prints one line per
violation, then "N passed, N failed".

Usage: test_docs_citations.py SOURCE_DIR
"""

import os
import re
import sys
import tempfile

# Folders and top-level files that hold the project's own text; build trees and VCS data are skipped.
SCANNED = ["src", "include", "tools", "tests", "bench", "python", "scripts", "cmake", "docs", ".ci",
           "README.md", "CMakeLists.txt", "Makefile"]
SUFFIXES = (".c", ".h", ".cpp", ".py", ".sh", ".cmake", ".txt", ".md", ".in", ".json", "Makefile", "run")
DESIGN_PAGES = ("model", "training", "abi", "session", "quality", "cli")
MINIMUM_CITATIONS = 50

DOCS_CITATION = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_.-]+?\.md)(?:#([\w-]+))?")
SECTIONS = re.compile(r'\s*(?:,|\'s)\s*"([^"\n]+)"((?:\s*(?:,|and)\s*"[^"\n]+")*)')
MORE_SECTIONS = re.compile(r'"([^"\n]+)"')
BARE_DESIGN = re.compile(r"(?<![\w/.-])(?:" + "|".join(DESIGN_PAGES) + r")\.md\b")
DESIGN_FOLDER = re.compile(r"\bdesign/[\w.-]+\.md\b")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*```")


def headings(path):
    """The heading texts of a Markdown file (backticks removed), outside code fences."""
    found, fenced = [], False
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if FENCE.match(line):
                fenced = not fenced
                continue
            match = None if fenced else HEADING.match(line)
            if match:
                found.append(match.group(1).replace("`", ""))
    return found


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def scanned_files(root):
    for entry in SCANNED:
        path = os.path.join(root, entry)
        if os.path.isfile(path):
            yield path
        for folder, subfolders, files in os.walk(path):
            subfolders[:] = sorted(s for s in subfolders if not s.startswith((".", "build", "__pycache__")))
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    yield os.path.join(folder, name)


class Checker:
    def __init__(self, root):
        self.root = root
        self.violations = []
        self.citations = 0
        self.checks = 0
        self._headings = {}

    def page_headings(self, path):
        if path not in self._headings:
            self._headings[path] = headings(path) if os.path.isfile(path) else None
        return self._headings[path]

    def fail(self, where, message):
        self.violations.append(f"{where}: {message}")

    def check_file(self, path):
        relative = os.path.relpath(path, self.root)
        in_docs = relative.split(os.sep)[0] == "docs"
        is_markdown = path.endswith(".md")
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
        except UnicodeDecodeError:
            return
        fenced = False
        for number, line in enumerate(lines, 1):
            where = f"{relative}:{number}"
            if is_markdown and FENCE.match(line):
                fenced = not fenced
            for match in DOCS_CITATION.finditer(line):
                self.citations += 1
                self.check_page(where, os.path.join(self.root, "docs", match.group(1)), match.group(2),
                                line[match.end():], f"docs/{match.group(1)}")
            if not in_docs:
                for match in BARE_DESIGN.finditer(line):
                    self.checks += 1
                    self.fail(where, f"cites the design page '{match.group(0)}': cite the docs/ page that says it")
                for match in DESIGN_FOLDER.finditer(line):
                    self.checks += 1
                    self.fail(where, f"cites '{match.group(0)}', outside docs/: cite the docs/ page that says it")
            if is_markdown and not fenced:
                for match in MARKDOWN_LINK.finditer(line):
                    self.check_link(where, path, match.group(1))

    def check_page(self, where, page, section_anchor, rest, name):
        self.checks += 1
        if not os.path.isfile(page):
            self.fail(where, f"cites {name}, which does not exist")
            return
        known = self.page_headings(page)
        if section_anchor is not None:
            self.checks += 1
            if section_anchor not in {anchor(h) for h in known}:
                self.fail(where, f"cites {name}#{section_anchor}, but {name} has no such heading")
        sections = SECTIONS.match(rest)
        if sections:
            cited = [sections.group(1)] + MORE_SECTIONS.findall(sections.group(2))
            for section in cited:
                self.checks += 1
                if section.replace("`", "") not in known:
                    self.fail(where, f'cites {name}, "{section}", but {name} has no heading "{section}"')

    def check_link(self, where, path, target):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return  # a URL, or an anchor of this very page
        file_part, _, section_anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        self.checks += 1
        if not os.path.exists(resolved):
            self.fail(where, f"links to '{target}', which does not exist")
            return
        if section_anchor and resolved.endswith(".md"):
            self.checks += 1
            if section_anchor not in {anchor(h) for h in self.page_headings(resolved)}:
                self.fail(where, f"links to '{target}', but that page has no heading with this anchor")

    def run(self):
        for path in scanned_files(self.root):
            if os.path.abspath(path) != os.path.abspath(__file__):  # this file describes violations
                self.check_file(path)
        return self


def self_test():
    """The checker on a tree holding one violation of each kind: it must find exactly those."""
    files = {
        "docs/good.md": "# Good\n\n## A section\n\nSee [the other](other.md#a-section) and [here](#good).\n"
                        "Broken: [gone](missing.md), [no anchor](good.md#nowhere).\n"
                        "```\n[inside a fence](ignored.md)\n```\n",
        "docs/other.md": "# Other\n\n## A `section`\n",
        "src/ok.c": '/* docs/good.md, "A section"; docs/other.md\'s "A section"; docs/good.md#a-section */\n',
        "src/bad.c": '/* docs/absent.md; docs/good.md, "No such"; docs/good.md#none; (model.md, "Losses");\n'
                     ' * shared/design/training.md */\n',
        "tests/list.py": '"""docs/good.md, "A section" and "Missing too"."""\n',
    }
    expected = [
        "docs/good.md:6: links to 'missing.md', which does not exist",
        "docs/good.md:6: links to 'good.md#nowhere', but that page has no heading with this anchor",
        "src/bad.c:1: cites docs/absent.md, which does not exist",
        'src/bad.c:1: cites docs/good.md, "No such", but docs/good.md has no heading "No such"',
        "src/bad.c:1: cites docs/good.md#none, but docs/good.md has no such heading",
        "src/bad.c:1: cites the design page 'model.md': cite the docs/ page that says it",
        "src/bad.c:2: cites 'design/training.md', outside docs/: cite the docs/ page that says it",
        'tests/list.py:1: cites docs/good.md, "Missing too", but docs/good.md has no heading "Missing too"',
    ]
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        found = Checker(root).run().violations
    return sorted(found), sorted(expected)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    passed = failed = 0
    found, expected = self_test()
    if found == expected:
        passed += 1
    else:
        failed += 1
        print("the checker's self-test found:\n  " + "\n  ".join(found) + "\nexpected:\n  " + "\n  ".join(expected))
    checker = Checker(os.path.abspath(sys.argv[1])).run()
    for violation in checker.violations:
        print(violation)
    failed += len(checker.violations)
    passed += checker.checks - len(checker.violations)
    if checker.citations < MINIMUM_CITATIONS:
        failed += 1
        print(f"only {checker.citations} citations of docs/ found (expected at least {MINIMUM_CITATIONS}): "
              "is SOURCE_DIR the repository?")
    else:
        passed += 1
    print(f"{checker.citations} citations of docs/ in the repository")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
