"""The documentation stays honest: every relative link in README.md,
CHANGELOG.md and docs/*.md points at a file (and heading) that exists, and
every command they show to run is one the CLI or .ci/run accepts.

Read from the repository root (tests/..), as nox runs the suite there. The
session names come from noxfile.py's text: nox is not installed in the test
environments, and Python 2 cannot parse noxfile.py (it is Python 3 only).
"""

import glob
import io
import os
import re
import shlex
import shutil
import sys
import tempfile
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ([os.path.join(ROOT, name) for name in ("README.md", "CHANGELOG.md")]
         + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))

FENCED = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REFERENCE = re.compile(r"^\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
SCHEME = re.compile(r"\A[a-zA-Z][a-zA-Z0-9+.-]*:")
ENVIRONMENT_ASSIGNMENT = re.compile(r"\A[A-Z_][A-Z0-9_]*=")
WHEEL = re.compile(r"\Akeras_clone_fix-([^-]+)-py2\.py3-none-any\.whl\Z")
SHOWN_COMMAND = re.compile(
    r"\A(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:python -m keras_clone_fix|bash \.ci/run)\b")
CLI = ["python", "-m", "keras_clone_fix"]
CI_RUN = ["bash", ".ci/run"]


def read(path):
    with io.open(path, encoding="utf-8") as text:
        return text.read()


def relative(path):
    return os.path.relpath(path, ROOT)


def prose(text):
    """The text outside fenced code blocks and HTML comments."""
    return HTML_COMMENT.sub("", FENCED.sub("", text))


def slug(heading):
    """GitHub's anchor for a heading: its text without markup, lowercased,
    punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower(), flags=re.UNICODE).replace(" ", "-")


def anchors(path):
    found = {}
    for heading in HEADING.findall(prose(read(path))):
        anchor = slug(heading)
        found[anchor] = found.get(anchor, -1) + 1
        if found[anchor]:
            found["{}-{}".format(anchor, found[anchor])] = 0
    return set(found)


def links(path):
    text = INLINE_CODE.sub("", prose(read(path)))
    return LINK.findall(text) + REFERENCE.findall(text)


def broken_link(page, target):
    """Why a link of `page` is broken, or None."""
    if SCHEME.match(target):
        return None  # http(s), mailto: not checked here
    path, _, anchor = target.partition("#")
    resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
    if not os.path.exists(resolved):
        return "{} does not exist".format(relative(resolved))
    if anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
        return "{} has no heading #{}".format(relative(resolved), anchor)
    return None


def split_command(line):
    if sys.version_info[0] == 2:  # Python 2's shlex takes bytes
        line = line.encode("utf-8")
    words = shlex.split(line, comments=True)
    while words and ENVIRONMENT_ASSIGNMENT.match(words[0]):
        words = words[1:]
    return words


def commands(path):
    """(line, words) of every command the page shows to run: each line of
    its ```sh blocks, and each `python -m keras_clone_fix ...` or
    `bash .ci/run ...` in its inline code."""
    text = HTML_COMMENT.sub("", read(path))
    found = []
    for language, block in FENCED.findall(text):
        if language == "sh":
            found.extend(line for line in block.splitlines() if line.strip())
    found.extend(code for _, code in INLINE_CODE.findall(prose(text))
                 if SHOWN_COMMAND.match(code))
    return [(line, split_command(line)) for line in found if split_command(line)]


def all_commands():
    return [(relative(page), line, words) for page in PAGES for line, words in commands(page)]


def nox_sessions():
    """Every name `nox -s` accepts for noxfile.py's sessions: each session,
    each of its Pythons (wheel-3.6), each parametrization (tests(tf-1.14),
    full(keras_version='2.2.4'))."""
    text = read(os.path.join(ROOT, "noxfile.py"))
    tables = dict((name, re.findall(r'^    "([^"]+)": \(', body, re.MULTILINE))
                  for name, body in re.findall(r"^(\w+) = \{\n(.*?)^\}", text,
                                               re.MULTILINE | re.DOTALL))
    names = set()
    for decorators, function in re.findall(r"((?:^@.*\n(?:^[ \t]+.*\n)*)+)^def (\w+)\(", text,
                                           re.MULTILINE):
        if "@nox.session" not in decorators:
            continue
        named = re.search(r'@nox\.session\([^)]*\bname="([^"]+)"', decorators)
        name = named.group(1) if named else function
        names.add(name)
        pythons = re.search(r"\bpython=\[([^\]]*)\]", decorators)
        if pythons:
            names.update(name + "-" + python for python in re.findall(r'"([^"]+)"',
                                                                      pythons.group(1)))
        for table in re.findall(r"^@environments\((\w+)\)", decorators, re.MULTILINE):
            names.update("{}({})".format(name, id_) for id_ in tables[table])
        for argument, values in re.findall(r'@nox\.parametrize\("(\w+)", \[([^\]]*)\]\)',
                                           decorators):
            names.update("{}({}='{}')".format(name, argument, value)
                         for value in re.findall(r'"([^"]+)"', values))
    return names


def ci_run_error(arguments, sessions):
    """Why `bash .ci/run ARGUMENTS` would not run, or None. Its arguments
    are a nox command line: -s names sessions, -l lists them, and what
    follows -- goes to pytest (test files named there must exist)."""
    if "--" in arguments:
        at = arguments.index("--")
        arguments, pytest_arguments = arguments[:at], arguments[at + 1:]
        for argument in pytest_arguments:
            if argument.startswith("tests/") and not os.path.exists(
                    os.path.join(ROOT, argument.split("::")[0])):
                return "{} does not exist".format(argument)
    naming = False
    for argument in arguments:
        if argument in ("-s", "--session", "--sessions"):
            naming = True
        elif argument in ("-l", "--list"):
            naming = False
        elif argument.startswith("-"):
            return "{} is not an option the documentation uses for nox".format(argument)
        elif not naming:
            return "{} follows no -s".format(argument)
        elif argument not in sessions:
            return "{} is not a session of noxfile.py".format(argument)
    return None


def test_relative_links_point_at_files_and_headings():
    broken = ["{}: ({}) {}".format(relative(page), target, broken_link(page, target))
              for page in PAGES for target in links(page) if broken_link(page, target)]
    assert not broken, "\n".join(broken)


def test_every_reference_page_is_linked_from_the_readme():
    readme = os.path.join(ROOT, "README.md")
    linked = set(os.path.normpath(os.path.join(ROOT, target.partition("#")[0]))
                 for target in links(readme))
    assert set(PAGES) - linked == set([readme])


def test_commands_shown_are_ones_this_project_runs():
    unknown = ["{}: {}".format(page, line) for page, line, words in all_commands()
               if not (words[:3] == CLI or words[:2] == CI_RUN
                       or words[:2] in (["pip", "install"], ["pip", "wheel"])
                       or words[:2] == ["python", "-c"] and len(words) == 3
                       or words[:1] == ["pytest"] and not pytest_paths_missing(words))]
    assert not unknown, "\n".join(unknown)


def pytest_paths_missing(words):
    """The paths a shown `pytest ...` names (tests, tests/test_x.py::name)
    that are not in the repository."""
    return [word for word in words[1:] if not word.startswith("-")
            and not os.path.exists(os.path.join(ROOT, word.split("::")[0]))]


def test_python_snippets_shown_compile():
    for page, line, words in all_commands():
        if words[:2] == ["python", "-c"]:
            compile(words[2], "{}: {}".format(page, line), "exec")


def test_noxfile_sessions_are_read():
    sessions = nox_sessions()
    assert set(["tests", "tests(keras-2.2.4-tf-1.15)", "tests-2.7(keras-2.2.4-tf-1.15.0)",
                "wheel-3.13", "wheel-2.7", "demo", "full(keras_version='2.2.4')",
                "release-sources", "bench"]) <= sessions


def test_ci_run_commands_name_nox_sessions():
    sessions = nox_sessions()
    wrong = ["{}: {}: {}".format(page, line, ci_run_error(words[2:], sessions))
             for page, line, words in all_commands()
             if words[:2] == CI_RUN and ci_run_error(words[2:], sessions)]
    assert not wrong, "\n".join(wrong)


def test_cli_commands_parse(capsys):
    from keras_clone_fix import _cli
    refused = []
    for page, line, words in all_commands():
        if words[:3] == CLI:
            try:
                _cli.parse_arguments(words[3:])
            except SystemExit as exit:
                if exit.code == 0:  # --help: shown, and accepted
                    continue
                refused.append("{}: {}: exit {}: {}".format(
                    page, line, exit.code, capsys.readouterr().err.strip()))
    assert not refused, "\n".join(refused)


CLI_PAGE = os.path.join(ROOT, "docs", "cli.md")
# The commands' sections of docs/cli.md, by heading, and their arguments.
CLI_SECTIONS = {"The self-check": [], "`check MODEL_FILE`": ["check"]}
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def options_in_help(arguments, capsys):
    """The options a command's --help lists: what argparse knows."""
    from keras_clone_fix import _cli
    capsys.readouterr()
    try:
        _cli.parse_arguments(arguments + ["--help"])
    except SystemExit:
        pass
    listed = [line[2:].split("  ")[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith("  -")]
    return set(option for line in listed for option in OPTION.findall(line))


def options_documented(heading):
    """The options in the first column of the tables of a section of docs/cli.md."""
    section = re.search(r"^## {}\n(.*?)(?=^## |\Z)".format(re.escape(heading)),
                        read(CLI_PAGE), re.MULTILINE | re.DOTALL).group(1)
    cells = re.findall(r"^\| (`-[^|]*?) \|", section, re.MULTILINE)
    return set(option for cell in cells for option in OPTION.findall(cell))


def test_cli_page_documents_exactly_the_options_of_each_command(capsys):
    differences = []
    for heading, arguments in sorted(CLI_SECTIONS.items()):
        known, documented = options_in_help(arguments, capsys), options_documented(heading)
        assert known, "no options read from --help of {}".format(arguments)
        differences += ["docs/cli.md, {}: {} {}".format(heading, option, why) for option, why in
                        [(option, "is not documented") for option in sorted(known - documented)]
                        + [(option, "is not an option") for option in sorted(documented - known)]]
    assert not differences, "\n".join(differences)


FIGURE_PAGES = [os.path.join(ROOT, "docs", name) for name in ("costs.md", "testing.md")]
# A cell that is a measured figure: a number with a unit, or with thousands separators.
FIGURE = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)? ?(?:s|ms|MB|MiB|GB|%|minutes)\b|\d{1,3}(?:,\d{3})+")
MEASURING_COMMAND = re.compile(r"`bash \.ci/run -s ([^`]+)`|benchmarks/(\w+\.py)|"
                               r"```sh\n(?:.*\n)*?bash \.ci/run -s (\S+)")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def figure_tables(path):
    """(the text of its section before it, the table) of each table of the
    page with a figure in a cell outside its header row."""
    found = []
    for section in re.split(r"^#{1,6} ", read(path), flags=re.MULTILINE):
        for table in re.finditer(r"(?:^\|.*\n?)+", section, re.MULTILINE):
            body = table.group(0).splitlines()[2:]
            if any(FIGURE.search(cell) for row in body for cell in row.split("|")):
                found.append((section[:table.start()], table.group(0)))
    return found


def test_each_figure_table_names_the_command_that_prints_it_and_its_date():
    sessions = nox_sessions()
    wrong = []
    for page in FIGURE_PAGES:
        for before, table in figure_tables(page):
            commands = MEASURING_COMMAND.findall(before)
            named = [session or sh_session for session, _, sh_session in commands
                     if session or sh_session] + [script for _, script, _ in commands if script]
            if not named or not DATE.search(before):
                wrong.append("{}: no command and date before the table {}".format(
                    relative(page), table.splitlines()[0]))
            wrong += ["{}: {} is neither a nox session nor a script in benchmarks/".format(
                relative(page), name) for name in named
                if name not in sessions and not os.path.exists(os.path.join(ROOT, "benchmarks",
                                                                           name))]
    assert not wrong, "\n".join(wrong)


def test_wheel_file_names_carry_the_version():
    version = re.search(r'^__version__ = "(.+)"$',
                        read(os.path.join(ROOT, "keras_clone_fix", "__init__.py")),
                        re.MULTILINE).group(1)
    named = [word for _, _, words in all_commands() for word in words if WHEEL.match(word)]
    assert named and all(WHEEL.match(word).group(1) == version for word in named), named


README_RELEASE_ROW = re.compile(r"^\| (keras|tf\.keras) \| ([^|]+) \|([^\n]*)\| ([^|]+) \|$",
                                re.MULTILINE)
VERSION_NAMED = re.compile(r"(?<![\w.])(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def readme_release_rows():
    """(package, the versions its releases cell names, the row's other
    cells, its last cell) of each row of the README's "Which releases":
    2.0.7 as (2, 0, 7), 1.14 as (1, 14, 0), 1.x as (1, 0, 0)."""
    rows = README_RELEASE_ROW.findall(read(os.path.join(ROOT, "README.md")))
    assert rows, "no rows read from the README's table of releases"
    return [("keras" if family == "keras" else "tensorflow",
             [tuple(int(part or 0) for part in found) for found in VERSION_NAMED.findall(releases)],
             cells, patched) for family, releases, cells, patched in rows]


def test_readme_release_table_agrees_with_the_version_guard():
    """Each row of the README's "Which releases": every version it names is
    in a range of _affected.RELEASES affected exactly when the row says
    "patched", and every affected range begins a row."""
    from keras_clone_fix._affected import RELEASES, is_affected
    wrong, firsts = [], set()
    for package, versions, _, patched in readme_release_rows():
        firsts.add((package, versions[0]))
        for version in (".".join(map(str, parts)) for parts in versions):
            if is_affected(package, version)[0] != ("**patched**" in patched):
                wrong.append("{} {}: says {!r}".format(package, version, patched))
    wrong += ["{} {}: affected, and no row begins there".format(package, first)
              for package, ranges in RELEASES.items() for first, _, affected, _ in ranges
              if affected and (package, first) not in firsts]
    assert not wrong, "\n".join(wrong)


PATCHED_ROW = re.compile(r"^\| `([\w.]+)` \| ([^|]+) \| ([\w, ]+) \|$", re.MULTILINE)


def test_releases_page_lists_exactly_the_targets_table():
    """releases.md's "What is patched, per release": a row for each row of
    _affected.TARGETS (its target, first release and rules in order), whose
    last release named is one of the row's [first, past)."""
    from keras_clone_fix._affected import TARGETS
    text = read(os.path.join(ROOT, "docs", "releases.md"))
    section = text[text.index("## What is patched, per release"):]
    section = section[:section.index("\n## ", 1)]
    listed = []
    for target, releases, rules in PATCHED_ROW.findall(section):
        versions = [tuple(int(part or 0) for part in found)
                    for found in VERSION_NAMED.findall(releases)]
        listed.append((target, versions[0], versions[-1], rules.split(", ")))
    table = [(target.module + "." + target.attribute, target.first, target.past,
              list(target.rules)) for target in TARGETS]
    assert [(name, first, rules) for name, first, _, rules in listed] == [
        (name, first, rules) for name, first, _, rules in table]
    wrong = [(name, last) for (name, _, last, _), (_, first, past, _) in zip(listed, table)
             if not first <= last < (past or (99,))]
    assert not wrong, wrong


RELEASES_PAGE = os.path.join(ROOT, "docs", "releases.md")
MATRIX = re.compile(r"(<!-- matrix: [^>]*-->\n)(.*?)(<!-- end of the matrix -->)", re.DOTALL)
# The last release before a range's end where it is not the one before in
# its minor release (patch - 1) or the minor release before (TensorFlow's).
LAST_BEFORE = {("keras", (2, 4, 0)): "2.3.1", ("keras", (2, 7, 0)): "2.6",
               ("tensorflow", (2, 0, 0)): "1.15"}
FAMILY_NAMES = {"keras": "keras", "tensorflow": "tf.keras"}


def shown(family, release):
    """A release as the pages name it: keras 2.0.0 - 2.3.1 by their patch
    releases, keras 2.5 on and TensorFlow by their minor ones."""
    if family == "keras" and release < (2, 4, 0):
        return ".".join(map(str, release))
    return ".".join(map(str, release[:2]))


def last_before(family, past):
    if (family, past) in LAST_BEFORE:
        return LAST_BEFORE[family, past]
    if past[2] and (family == "keras" and past < (2, 4, 0)):
        return shown(family, past[:2] + (past[2] - 1,))
    return shown(family, (past[0], past[1] - 1, 0))


def range_shown(family, first, past, column):
    """A measured range in a column's range: a check mark where it is the whole column."""
    first, past = max(first, column[0]), min(past, column[1])
    if (first, past) == column:
        return u"\u2713"
    start, end = shown(family, first), last_before(family, past)
    if start == end:
        return start
    if first == column[0]:
        return "to " + end
    if past == column[1]:
        return "from " + start
    return u"{} \u2013 {}".format(start, end)


def releases_matrix():
    """The table of docs/releases.md's "Which bug on which release", made
    from _bugs.BUGS and the affected ranges of _affected.RELEASES."""
    from keras_clone_fix._affected import RELEASES
    from keras_clone_fix._bugs import BUGS, ROUTES, ROUTE_WORDS
    columns = [(family, (first, past)) for family in ("keras", "tensorflow")
               for first, past, affected, _ in RELEASES[family] if affected]
    heads = [u"{} {}".format(FAMILY_NAMES[family], shown(family, first)
                             if shown(family, first) == last_before(family, past)
                             else u"{} \u2013 {}".format(shown(family, first),
                                                          last_before(family, past)))
             for family, (first, past) in columns]
    lines = [u"| bug | {} | fixed by | shown by |".format(" | ".join(heads)),
             "|---" * (len(heads) + 3) + "|"]
    for route in ROUTES:
        lines.append(u"| **{}** |{}".format(ROUTE_WORDS[route], " |" * (len(heads) + 2)))
        for bug in [bug for bug in BUGS if bug.routes[0] == route]:
            cells = []
            for family, column in columns:
                met = [range_shown(family, first, past, column)
                       for first, past in bug.measured(family)
                       if first < column[1] and column[0] < past]
                cells.append(", ".join(met) or u"\u2014")
            lines.append(u"| {} | {} | {} | {} |".format(
                bug.words, " | ".join(cells), ", ".join(bug.rules),
                ", ".join("`{}`".format(test) for test in bug.tests)))
    return "\n".join(lines) + "\n"


def test_releases_matrix_is_the_table_of_bugs():
    """docs/releases.md's matrix is releases_matrix(); RELEASES_MATRIX=write
    rewrites it."""
    text = read(RELEASES_PAGE)
    found = MATRIX.search(text)
    assert found, "no <!-- matrix: ... --> ... <!-- end of the matrix --> in docs/releases.md"
    matrix = releases_matrix()
    if os.environ.get("RELEASES_MATRIX") == "write":
        with io.open(RELEASES_PAGE, "w", encoding="utf-8") as page:
            page.write(text[:found.start(2)] + matrix + text[found.end(2):])
        return
    assert found.group(2) == matrix, (
        "docs/releases.md's matrix is not _bugs.BUGS': RELEASES_MATRIX=write pytest "
        "tests/test_docs.py rewrites it")


def test_readme_table_lines_are_short():
    long_lines = [line for line in read(os.path.join(ROOT, "README.md")).splitlines()
                  if line.startswith("|") and len(line) >= 200]
    assert not long_lines, long_lines


PROSE_LINE_LIMIT, CELL_LIMIT, DOCS_LINE_LIMIT = 120, 300, 1500


def lines_outside_code(text):
    """(number, line) of each line outside fenced code blocks and HTML comments."""
    kept = HTML_COMMENT.sub(lambda found: "\n" * found.group(0).count("\n"),
                            FENCED.sub(lambda found: "\n" * found.group(0).count("\n"), text))
    return list(enumerate(kept.splitlines(), 1))


def test_prose_lines_are_at_most_120_characters():
    """Prose is wrapped, as the README is: no line over 120 characters outside
    code blocks, HTML comments and tables."""
    long_lines = ["{}:{}: {} characters".format(relative(page), number, len(line))
                  for page in PAGES for number, line in lines_outside_code(read(page))
                  if not line.startswith("|") and len(line) > PROSE_LINE_LIMIT]
    assert not long_lines, "\n".join(long_lines)


def test_table_cells_are_at_most_300_characters():
    long_cells = ["{}:{}: a cell of {} characters: {}...".format(relative(page), number, len(cell),
                                                                 cell[:60])
                  for page in PAGES for number, line in lines_outside_code(read(page))
                  if line.startswith("|") for cell in line.strip().strip("|").split(" | ")
                  if len(cell.strip()) > CELL_LIMIT]
    assert not long_cells, "\n".join(long_cells)


def test_docs_are_under_1500_lines():
    """The reference holds today's facts, each once; the history of
    measurements is in git."""
    counted = dict((relative(path), len(read(path).splitlines()))
                   for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    assert sum(counted.values()) < DOCS_LINE_LIMIT, counted


def test_changelog_unreleased_section_reads_in_two_minutes():
    """At most 500 words (about two minutes' reading): the details are in
    the commits and docs/."""
    text = read(os.path.join(ROOT, "CHANGELOG.md"))
    unreleased = re.search(r"^## \[[^\]]+\] - Unreleased\n(.*?)(?=^## )", text,
                           re.MULTILINE | re.DOTALL)
    if unreleased:
        assert len(unreleased.group(1).split()) <= 500, len(unreleased.group(1).split())


UNINSTALL_CLEANUP = re.compile(r"\bshutil\.rmtree\(")


def test_the_uninstall_one_liner_runs_with_and_without_stored_builds(monkeypatch):
    """The README's line that removes the stored builds before `pip uninstall`
    removes keras_clone_fix/__pycache__/ and raises nothing where there is none:
    run here on a stand-in package in a temporary directory, which its
    `import keras_clone_fix` finds in sys.modules."""
    (code,) = [words[2] for page, _, words in all_commands()
               if page == "README.md" and words[:2] == ["python", "-c"]
               and UNINSTALL_CLEANUP.search(words[2])]
    directory = tempfile.mkdtemp()
    try:
        package = os.path.join(directory, "keras_clone_fix")
        os.makedirs(os.path.join(package, "__pycache__"))
        io.open(os.path.join(package, "__pycache__", "stored.fixed"), "w").close()
        stand_in = types.ModuleType("keras_clone_fix")
        stand_in.__file__ = os.path.join(package, "__init__.py")
        monkeypatch.setitem(sys.modules, "keras_clone_fix", stand_in)
        for _ in ("with stored builds", "without"):  # the second run finds none
            exec(compile(code, "README.md", "exec"), {})
            assert not os.path.exists(os.path.join(package, "__pycache__"))
    finally:
        shutil.rmtree(directory)


def test_readme_is_at_most_170_lines():
    with io.open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        assert len(readme.read().splitlines()) <= 170


def test_long_description_has_no_link_that_needs_the_repository():
    """setup.py gives the README as the package's long description, each
    relative link as its text, and the sdist ships the files they name."""
    pytest.importorskip("setuptools")  # setup.py's import (not in venvs of Python 3.12+)
    path = os.path.join(ROOT, "setup.py")
    setup_py = {"__file__": path, "__name__": "setup"}  # not "__main__": setup() is not run
    exec(compile(read(path), path, "exec"), setup_py)
    description = setup_py["long_description"]()
    readme = read(os.path.join(ROOT, "README.md"))
    assert len(description.splitlines()) == len(readme.splitlines())
    relative_links = [target for target in LINK.findall(description) if not SCHEME.match(target)]
    assert not relative_links, relative_links
    manifest = [line.split() for line in read(os.path.join(ROOT, "MANIFEST.in")).splitlines()]
    shipped = [name for words in manifest if words[:1] == ["include"] for name in words[1:]]
    grafted = [words[1] + "/" for words in manifest if words[:1] == ["graft"]]
    unshipped = [target for target in links(os.path.join(ROOT, "README.md"))
                 if target.partition("#")[0] and target.partition("#")[0] not in shipped
                 and not target.startswith(tuple(grafted))]
    assert not unshipped, unshipped


# A test asserting that the side without the fix gets check's "wrong" (the
# predictions differ, nothing raised): {"load": "wrong"}, == "wrong", "wrong: ...".
SILENT_VERDICT = re.compile(r'(?::|==) "wrong"|"wrong: ')
NAMED_TEST = re.compile(r"`(tests/test_\w+\.py)::(test_\w+)`")


def functions_of_the_tests():
    """{"tests/test_x.py::test_name": its text, decorators included}."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.py"))):
        decorators = ""
        for statement in re.split(r"\n(?=\S)", read(path)):
            if statement.startswith("@"):
                decorators += statement
                continue
            named = re.match(r"def (test_\w+)\(", statement)
            if named:
                found["{}::{}".format(relative(path), named.group(1))] = decorators + statement
            decorators = ""
    return found


def test_each_bug_names_tests_that_exist():
    """_bugs.BUGS names, for each bug, tests that show it (path::name)."""
    from keras_clone_fix._bugs import BUGS
    functions = functions_of_the_tests()
    missing = [(bug.name, test) for bug in BUGS for test in bug.tests if test not in functions]
    assert not missing, missing


def test_silent_cases_listed_are_those_the_tests_prove():
    """releases.md's "No error, wrong numbers": each case names a test that
    exists, and every test that asserts a "wrong" result without the fix is
    named there."""
    text = read(os.path.join(ROOT, "docs", "releases.md"))
    listed = re.search(r"^- No error, wrong numbers.*?\n(?=\S|\n)", text,
                       re.MULTILINE | re.DOTALL).group(0)
    cases = re.findall(r"^  - (.*?)(?=^  - |\Z)", listed, re.MULTILINE | re.DOTALL)
    assert cases, listed
    functions = functions_of_the_tests()
    named = set("::".join(found) for found in NAMED_TEST.findall(listed))
    wrong = ["a case names no test: " + case for case in cases if not NAMED_TEST.search(case)]
    wrong += [name + " is not a test" for name in sorted(named - set(functions))]
    wrong += [name + " asserts a silent failure and the list does not name it" for name, body
              in sorted(functions.items()) if SILENT_VERDICT.search(body) and name not in named]
    assert not wrong, "\n".join(wrong)
