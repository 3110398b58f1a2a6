"""What a shell command reaches, read from its parse tree (tree-sitter-bash), not from its words.

The rules (`arena_kit.rewrite.rules`) judge a `Reach`: the words commands take as paths or names, the text
they hand to a program (scripts, SQL, data on stdin), the names a search looks for and where, the
parameters expanded, the simple commands run and the words handed to a network client. Prose is in
none of them: comments, the arguments of `echo`/`printf`/`:`, commit messages, heredocs written to
a file, the literals a Python program prints. So "held-out rows" in a note is no path, while
`cat ~/held_out/x`, `echo ~/.cache/arena/*` (the shell lists the glob) and `ls $d` after
`d=~/held_out` are.

Code handed to an interpreter is read too: `bash -c`, `eval`, a static pipeline or heredoc into a
shell (`echo <base64> | base64 -d | sh`), `$(...)` and backticks with static output, `python -c`
and Python on stdin (`arena_kit.rewrite.python_reach`). What cannot be read before it runs (a parse error,
`eval "$x"` of an unknown `x`, an unknown pipeline into a shell) sets `opaque`; the rules then also
apply their word patterns for host paths, never those for prose words (see `arena_kit.rewrite.rules`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from arena_kit.rewrite import python_reach
from arena_kit.rewrite.python_reach import base64_text
from arena_kit.rewrite.shell_programs import (
    BROAD,
    CODE_FLAGS,
    LOCATES,
    NET_CLIENTS,
    PROSE,
    PYTHON,
    SCRIPTED,
    SEARCHES,
    SHELLS,
    SINKS,
    Invocation,
    Reach,
    code_flags,
    git,
    operands,
    printed,
    reshaped,
    scripted,
    search,
    unescape,
    unwrap,
)

__all__ = ["Invocation", "Reach", "reach"]

MAX_DEPTH = 6
"""Code nested deeper than this (a shell in Python in a shell ...) is opaque."""


_LANGUAGE = Language(tree_sitter_bash.language())

_FIND_SOUGHT = {
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}
_GLOB = re.compile(r"(?<!\\)[*?[]")
_WRITE_REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<>"}
_WORDS = {
    "word",
    "string",
    "raw_string",
    "ansi_c_string",
    "concatenation",
    "simple_expansion",
    "expansion",
    "command_substitution",
    "process_substitution",
    "number",
    "translated_string",
}
_STATEMENTS = {
    "command",
    "redirected_statement",
    "pipeline",
    "list",
    "subshell",
    "compound_statement",
    "if_statement",
    "while_statement",
    "for_statement",
    "case_statement",
    "case_item",
    "function_definition",
    "do_group",
    "elif_clause",
    "else_clause",
    "negated_command",
    "variable_assignment",
    "declaration_command",
    "c_style_for_statement",
    "test_command",
    "ERROR",
}


@lru_cache(maxsize=512)
def reach(command: str) -> Reach:
    """What `command` reaches (cached: every rule reads the same command's reach)."""
    found = Reach()
    try:
        _Walker(found, {}, 0).script(command)
    except RecursionError:  # nesting hundreds deep: no honest command, and the fallback reads it
        return Reach(opaque=True)
    return found


@dataclass
class _Word:
    value: str
    static: bool = True
    glob: bool = False
    """Holds an unquoted glob the shell expands against the filesystem."""


@dataclass
class _Input:
    """What a stage reads on stdin: nothing fed (`present` False), or text (None: known only at run time)."""

    present: bool = False
    text: str | None = None


_NO_INPUT = _Input()
_SUBSTITUTION = Invocation("$()")
"""The consumer of `$(...)`'s output: the words of the command around it."""


def _first_error_row(node: Node) -> int | None:
    """The line of the first syntax error under `node`, if any."""
    if not node.has_error:
        return None
    if node.type == "ERROR" or node.is_missing:
        return int(node.start_point.row)
    rows = [row for child in node.children if (row := _first_error_row(child)) is not None]
    return min(rows) if rows else int(node.start_point.row)


def _role(consumer: Invocation | None) -> str:
    """How a program takes the text on its stdin: as shell or Python code, as data, or as its arguments."""
    if consumer is None or consumer is _SUBSTITUTION:
        return "sink"
    if consumer.takes_input_as_args:
        return "sink" if consumer.name in PROSE else "args"
    if consumer.name in SHELLS:
        return "shell"
    if PYTHON.match(consumer.name):
        return "python"
    return "sink" if consumer.name in SINKS or consumer.name in PROSE else "program"


class _Walker:
    """Walks parse trees into one `Reach`; `vars` holds the static values assigned so far."""

    def __init__(self, found: Reach, variables: dict[str, str], depth: int) -> None:
        self.found, self.vars, self.depth = found, variables, depth

    # --- code ---------------------------------------------------------------------------------------

    def script(self, text: str) -> None:
        """Shell code. Code that does not parse marks the reach opaque (the rules' fallback reads it)
        and its would-be paths count as text: host paths in it are judged, prose words are not."""
        if self.depth > MAX_DEPTH:
            self.found.opaque = True
            return
        root = Parser(_LANGUAGE).parse(text.encode()).root_node
        broken = _first_error_row(root)
        into = Reach() if broken is not None else self.found
        for child in root.named_children:
            # bash runs each complete line before it reads the next: statements ending above the
            # first error run; from the error's line on, nothing does.
            trusted = broken is None or child.end_point.row < broken and not child.has_error
            _Walker(self.found if trusted else into, self.vars, self.depth + 1).statement(child, None)
        if broken is not None:
            # What error recovery calls a path there may be prose: it is judged as text (host paths
            # in it still count, prose words do not). tree-sitter also errs on a few valid forms.
            self.found.texts.extend([*into.paths, *(pattern for pattern, _ in into.sought), *into.texts])
            self.found.variables.extend(into.variables)
            self.found.invocations.extend(into.invocations)
            self.found.net.extend(into.net)
            self.found.opaque = True

    def python(self, code: str) -> None:
        if self.depth > MAX_DEPTH:
            self.found.opaque = True
            return
        python_reach.read(code, self.found, _Walker(self.found, dict(self.vars), self.depth + 1).script)

    def stdin(self, feed: _Input, consumer: Invocation | None, as_code: bool = True) -> None:
        """Judge what `consumer` reads on stdin by what it does with it."""
        if not feed.present:
            return
        role = _role(consumer)
        if role in {"shell", "python"} and as_code:
            if feed.text is None:
                self.found.opaque = True
            elif role == "shell":
                self.script(feed.text)
            else:
                self.python(feed.text)
        elif feed.text is not None and role == "args":
            operands(self.found, feed.text.split())
        elif feed.text is not None and role in {"program", "shell", "python"}:
            self.found.texts.append(feed.text)

    # --- statements ---------------------------------------------------------------------------------

    def statement(self, node: Node, consumer: Invocation | None) -> str | None:
        """Walk one statement whose stdout goes to `consumer` (None: the terminal or a file); return
        its output when that is known before it runs."""
        kind = node.type
        if kind == "ERROR":
            self.found.opaque = True
            return None
        if kind == "pipeline":
            return self.pipeline([c for c in node.named_children if c.type in _STATEMENTS], consumer)
        if kind in {"command", "redirected_statement"}:
            return self.pipeline([node], consumer)
        if kind == "variable_assignment":
            self.assign(node)
            return ""
        if kind == "declaration_command":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assign(child)
                elif child.type in _WORDS:
                    self.word(child)
            return ""
        if kind == "test_command":
            self.test(node)
            return None
        values = node.children_by_field_name("value") if kind == "for_statement" else []
        for value in values:
            operands(self.found, [self.word(value).value])
        for child in node.named_children:
            if child in values:
                continue
            if child.type in _STATEMENTS:
                self.statement(child, consumer)
            else:
                self.expressions(child)
        return None

    def expressions(self, node: Node) -> None:
        """Words outside a command (case subjects, arithmetic): only their expansions are judged."""
        if node.type in {"command_substitution", "process_substitution", "simple_expansion", "expansion"}:
            self.word(node)
        else:
            for child in node.named_children:
                self.expressions(child)

    def test(self, node: Node) -> None:
        """`[ -f PATH ]`, `[[ ... ]]`: the operands are paths or strings."""
        self.expressions(node)
        inner = (node.text or b"").decode().strip()
        inner = inner[2:-2] if inner.startswith("[[") else inner[1:-1]
        try:
            tokens = shlex.split(inner)
        except ValueError:
            tokens = inner.split()
        operands(
            self.found,
            [t for t in tokens if not t.startswith("-") and t not in {"=", "==", "!=", "=~", "!", "&&", "||"}],
        )

    def assign(self, node: Node) -> None:
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        word = self.word(value) if value is not None else _Word("")
        if name is None or name.type != "variable_name":
            return
        if word.static:
            self.vars[(name.text or b"").decode()] = word.value
        else:
            self.vars.pop((name.text or b"").decode(), None)

    # --- pipelines ----------------------------------------------------------------------------------

    def pipeline(self, stages: list[Node], consumer: Invocation | None) -> str | None:
        """Each stage's stdout feeds the next. tree-sitter nests the rest of a pipeline that starts
        with a heredoc (`cat <<EOF | sh`) inside the heredoc redirect; it is unnested here."""
        flat: list[Node] = []
        for stage in stages:
            flat.append(stage)
            for redirect in stage.children_by_field_name("redirect") if stage.type == "redirected_statement" else []:
                for inner in redirect.named_children:
                    if inner.type == "pipeline":
                        flat.extend(c for c in inner.named_children if c.type in _STATEMENTS)
        ahead = [self.invocation(stage) for stage in flat]
        output: str | None = None
        for index, stage in enumerate(flat):
            after = ahead[index + 1] if index + 1 < len(flat) else consumer
            piped = _Input(True, output) if index else _NO_INPUT
            output = self.stage(stage, ahead[index], after, piped)
        return output

    def invocation(
        self, stage: Node, words: list[_Word] | None = None, writes: tuple[str, ...] = ()
    ) -> Invocation | None:
        """The program a stage runs (from its recorded `words` when given, else a side-effect-free look)."""
        command = stage.child_by_field_name("body") if stage.type == "redirected_statement" else stage
        if command is None or command.type != "command":
            return None
        name = command.child_by_field_name("name")
        head = self.word(name, record=False).value if name is not None else ""
        if words is None:
            words = [self.word(a, record=False) for a in command.children_by_field_name("argument")]
        return unwrap(head, [w.value for w in words], writes)

    def stage(self, stage: Node, ahead: Invocation | None, after: Invocation | None, piped: _Input) -> str | None:
        command = stage.child_by_field_name("body") if stage.type == "redirected_statement" else stage
        writes: list[str] = []
        fed = self.redirects(stage, writes)
        feed = fed if fed.present else piped
        if command is None or command.type != "command":
            if writes:
                self.found.invocations.append(Invocation("", (), tuple(writes)))
            self.stdin(feed, None)
            return self.statement(command, after) if command is not None else None
        name = command.child_by_field_name("name")
        assignments = [c for c in command.named_children if c.type == "variable_assignment"]
        for assignment in assignments:
            value = assignment.child_by_field_name("value")
            if value is not None:
                self.found.texts.append(self.word(value).value)
        head = self.word(name) if name is not None else _Word("")
        self.found.paths.append(head.value)
        words = [self.word(a, consumer=ahead) for a in command.children_by_field_name("argument")]
        invocation = self.invocation(stage, words, tuple(writes))
        if invocation is None:
            return None
        return self.command(invocation, words, after, feed)

    def redirects(self, stage: Node, writes: list[str]) -> _Input:
        """Judge a stage's redirections; return what a heredoc or here-string feeds it (tree-sitter
        puts a here-string inside the command, the others around it)."""
        fed = _NO_INPUT
        redirects = stage.children_by_field_name("redirect") if stage.type == "redirected_statement" else []
        command = stage.child_by_field_name("body") if stage.type == "redirected_statement" else stage
        inner = [c for c in command.named_children if c.type.endswith("_redirect")] if command is not None else []
        for redirect in [*redirects, *inner]:
            fed = self.redirect(redirect, writes) or fed
        return fed

    def redirect(self, node: Node, writes: list[str]) -> _Input | None:
        if node.type == "file_redirect":
            destination = node.child_by_field_name("destination")
            operator = next((c.type for c in node.children if not c.is_named), "")
            if destination is not None and destination.type != "number":
                target = self.word(destination).value
                self.found.paths.append(target)
                if operator in _WRITE_REDIRECTS:
                    writes.append(target)
                if "/dev/tcp/" in target or "/dev/udp/" in target:
                    self.found.net.append(target)
            return None
        if node.type == "herestring_redirect":
            words = [self.word(c) for c in node.named_children]
            text = " ".join(w.value for w in words) + "\n"
            return _Input(True, text if all(w.static for w in words) else None)
        if node.type == "heredoc_redirect":
            feed = _Input(True, "")
            start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
            literal = start is not None and any(q in (start.text or b"").decode() for q in "'\"\\")
            for child in node.named_children:
                if child.type == "heredoc_body":
                    feed = _Input(True, (child.text or b"").decode() if literal else self.heredoc(child))
                elif child.type == "file_redirect":
                    self.redirect(child, writes)
                elif child.type in _STATEMENTS - {"pipeline"}:
                    self.statement(child, None)
            return feed
        return None

    def heredoc(self, body: Node) -> str | None:
        """An unquoted heredoc's text: its expansions and substitutions judged and filled in."""
        source, parts, static, cursor = body.text or b"", [], True, body.start_byte
        for child in body.named_children:
            parts.append(source[cursor - body.start_byte : child.start_byte - body.start_byte].decode())
            if child.type == "heredoc_content":
                parts.append((child.text or b"").decode())
            else:
                word = self.word(child)
                static = static and word.static
                parts.append(word.value)
            cursor = child.end_byte
        parts.append(source[cursor - body.start_byte :].decode())
        return "".join(parts) if static else None

    # --- simple commands ----------------------------------------------------------------------------

    def command(self, invocation: Invocation, words: list[_Word], after: Invocation | None, feed: _Input) -> str | None:
        """Judge one simple command's words by the role its program gives them; return its output
        when that is known before it runs."""
        self.found.invocations.append(invocation)
        name, args = invocation.name, list(invocation.args)
        wrapped = len(words) - len(args)
        operands(self.found, [w.value for w in words[:wrapped]])  # wrapper options and the program's name
        given = words[wrapped:] if wrapped >= 0 else [_Word(a) for a in args]
        for word in given:
            decoded = base64_text(word.value)
            if decoded is not None:
                self.found.texts.append(decoded)
        if name in PROSE:
            self.prose(given, after)
            return printed(name, args)
        if name in SHELLS:
            self.shell(name, args, feed)
        elif PYTHON.match(name):
            self.python_command(args, feed)
        elif name == "eval":
            if all(w.static for w in given):
                self.script(" ".join(args))
            else:
                self.found.opaque = True
        elif name == "git":
            git(self.found, args)
        elif name in SEARCHES:
            search(self.found, args)
        elif name == "find":
            self.find(args)
        elif name in LOCATES:
            self.found.sought.extend((a, True) for a in args if not a.startswith("-"))
        elif name in CODE_FLAGS:
            code_flags(self.found, CODE_FLAGS[name], args)
        elif name in SCRIPTED:
            scripted(self.found, SCRIPTED[name], args)
        else:
            if name in NET_CLIENTS:
                self.found.net.extend(args)
            operands(self.found, args)
        if not (name in SHELLS or PYTHON.match(name)):
            self.stdin(feed, invocation)
        return reshaped(name, args, feed.text if feed.present else None)

    def prose(self, words: list[_Word], after: Invocation | None) -> None:
        """echo/printf/`:` print their arguments: prose, unless an unquoted glob lists a directory or
        the output is another program's input (text) or arguments (`| xargs cat`: operands)."""
        operands(self.found, [w.value for w in words if w.glob])
        role = _role(after)
        if role == "args":
            operands(self.found, [token for word in words for token in word.value.split()])
        elif role == "program":
            self.found.texts.extend(word.value for word in words)

    def shell(self, name: str, args: list[str], feed: _Input) -> None:
        """`bash -c SCRIPT`, `bash script.sh`, `source FILE`, or a shell reading its stdin."""
        index = 0
        while index < len(args) and args[index].startswith("-") and args[index] not in {"-", "--"}:
            if not args[index].startswith("--") and "c" in args[index] and index + 1 < len(args):
                self.script(args[index + 1])
                return
            index += 1
        rest = args[index:]
        if rest and rest[0] not in {"-", "--"}:
            operands(self.found, rest)
            if name not in {"source", "."}:
                self.stdin(feed, Invocation("data"))
            return
        self.stdin(feed, Invocation("sh"))

    def python_command(self, args: list[str], feed: _Input) -> None:
        """`python -c CODE`, `python -m MODULE`, `python script.py`, or Python on stdin."""
        index = 0
        while index < len(args):
            arg = args[index]
            if arg == "-c" and index + 1 < len(args):
                self.python(args[index + 1])
                operands(self.found, args[index + 2 :])
                self.stdin(feed, Invocation("data"))
                return
            if arg == "-m" and index + 1 < len(args):
                operands(self.found, args[index + 1 :])
                self.stdin(feed, Invocation("data"))
                return
            if arg == "-" or not arg.startswith("-"):
                break
            index += 2 if arg in {"-W", "-X"} else 1
        rest = args[index:]
        if rest and rest[0] != "-":
            operands(self.found, rest)
            self.stdin(feed, Invocation("data"))
        else:
            operands(self.found, rest[1:])
            self.stdin(feed, Invocation("python"))

    def find(self, args: list[str]) -> None:
        """find: the leading operands are where it looks, -name & co. what it looks for, -exec runs."""
        index = 0
        while index < len(args) and not args[index].startswith(("-", "(", "!")):
            index += 1
        scope = args[:index]
        operands(self.found, scope)
        broad = any(BROAD.match(path) for path in scope)
        while index < len(args):
            arg = args[index]
            if arg in _FIND_SOUGHT and index + 1 < len(args):
                self.found.sought.append((args[index + 1], broad))
                index += 2
            elif arg in _FIND_EXEC:
                end = next((i for i in range(index + 1, len(args)) if args[i] in {";", "+"}), len(args))
                inner = args[index + 1 : end]
                if inner:
                    self.command(unwrap(inner[0], inner[1:]), [_Word(a) for a in inner], None, _NO_INPUT)
                index = end + 1
            else:
                if not arg.startswith(("-", "(", ")", "!")):
                    operands(self.found, [arg])
                index += 1

    # --- words --------------------------------------------------------------------------------------

    def word(self, node: Node, consumer: Invocation | None = None, record: bool = True) -> _Word:
        """A word's value as the shell builds it, where that is known before running: quotes removed,
        known variables and static substitutions filled in, anything else kept as written. With
        `record`, the expansions and substitutions inside it are judged."""
        kind, text = node.type, (node.text or b"").decode()
        if kind == "word":
            return _Word(re.sub(r"\\(.)", r"\1", text), glob=_GLOB.search(text) is not None)
        if kind == "raw_string":
            return _Word(text[1:-1])
        if kind == "ansi_c_string":
            return _Word(unescape(text[2:-1]))
        if kind in {"simple_expansion", "expansion"}:
            return self.expansion(node, record)
        if kind in {"command_substitution", "process_substitution"}:
            output = self.substitution(node, consumer) if record else None
            return _Word(output.rstrip("\n")) if output is not None else _Word(text, static=False)
        if kind in {"string", "concatenation", "translated_string", "command_name"}:
            return self.joined(node, consumer, record)
        return _Word(text, static=kind in {"number", "variable_name", "extglob_pattern", "regex"})

    def joined(self, node: Node, consumer: Invocation | None, record: bool) -> _Word:
        """A double-quoted string or a concatenation: its parts and the source between them."""
        quoted = node.type == "string"
        source, parts, static, glob, cursor = node.text or b"", [], True, False, node.start_byte
        for child in node.children:
            gap = source[cursor - node.start_byte : child.start_byte - node.start_byte].decode()
            parts.append(gap)
            cursor = child.end_byte
            if child.type == '"':
                continue
            if child.type == "string_content":
                parts.append(re.sub(r'\\([$`"\\])', r"\1", (child.text or b"").decode()))
            elif child.is_named:
                word = self.word(child, consumer, record)
                static, glob = static and word.static, glob or word.glob
                parts.append(word.value)
            else:
                parts.append((child.text or b"").decode())
        return _Word("".join(parts), static, glob and not quoted)

    def expansion(self, node: Node, record: bool) -> _Word:
        names = [c for c in node.named_children if c.type in {"variable_name", "special_variable_name"}]
        name = (names[0].text or b"").decode() if names else ""
        if record and name:
            self.found.variables.append(name)
        if len(node.named_children) == 1 and name in self.vars:
            return _Word(self.vars[name])
        return _Word((node.text or b"").decode().strip(), static=False)

    def substitution(self, node: Node, consumer: Invocation | None) -> str | None:
        """`$(...)`, backticks, `<(...)`: the inner statements run; their output, when static, is the
        word's value. A process substitution is a file its command reads: code for a shell or Python."""
        process = node.type == "process_substitution"
        output: str | None = ""
        for statement in node.named_children:
            if statement.type not in _STATEMENTS:
                continue
            result = self.statement(statement, consumer if process else _SUBSTITUTION)
            output = None if output is None or result is None else output + result
        if process:
            if consumer is not None and _role(consumer) in {"shell", "python"}:
                self.stdin(_Input(True, output), consumer)
            return "/dev/fd/63"
        if output is None:
            self.found.texts.append((node.text or b"").decode())
        return output
