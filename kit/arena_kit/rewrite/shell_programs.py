"""How programs take their arguments (as paths or names, as what a search looks for, as scripts, as
prose) and what a few of them print, for static output. `arena_kit.rewrite.shell_reach` walks the parse
tree and calls these with each simple command's words; they add what the words reach to a `Reach`.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from dataclasses import dataclass, field

__all__ = [
    "BROAD",
    "CODE_FLAGS",
    "LOCATES",
    "NET_CLIENTS",
    "NET_CODE",
    "PROSE",
    "PYTHON",
    "SCRIPTED",
    "SEARCHES",
    "SHELLS",
    "SINKS",
    "Invocation",
    "Reach",
    "base_name",
    "code_flags",
    "git",
    "operands",
    "printed",
    "reshaped",
    "scripted",
    "search",
    "unescape",
    "unwrap",
]


@dataclass(frozen=True)
class Invocation:
    """One simple command as far as it is known before it runs."""

    name: str
    """Program name without its directory, after wrappers (`sudo`, `env`, `timeout 5`, `xargs`)."""
    args: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    """Files its redirections open for writing."""
    takes_input_as_args: bool = False
    """Run by `xargs`: its input becomes its arguments."""


@dataclass
class Reach:
    paths: list[str] = field(default_factory=list)
    """Words taken as a path or a name: operands, redirect targets, globs, program and module names."""
    texts: list[str] = field(default_factory=list)
    """Other text handed to a program: scripts, SQL, data on stdin, literals, decoded base64."""
    sought: list[tuple[str, bool]] = field(default_factory=list)
    """(what a search looks for, whether it looks outside the box's own task files)."""
    variables: list[str] = field(default_factory=list)
    """Parameters expanded (`$X`, `${X}`; never inside single quotes)."""
    invocations: list[Invocation] = field(default_factory=list)
    net: list[str] = field(default_factory=list)
    """Words handed to a network client or to code that talks to the network."""
    opaque: bool = False
    """Part of the command could not be read before it runs (parse error, code built at run time)."""


SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "source", "."}
PYTHON = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)?)?$")
PROSE = {"echo", "printf", ":", "true", "false", "logger"}
"""Their arguments are text they print, not paths (an unquoted glob excepted: the shell lists it)."""
SINKS = {
    "cat",
    "tee",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "fold",
    "fmt",
    "column",
    "nl",
    "less",
    "more",
    "cut",
    "tac",
    "tr",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "diff",
    "cmp",
    "md5sum",
    "sha256sum",
    "od",
    "base64",
    "xxd",
}
"""Programs that show, count, store or decode their input: it is data to them, never code or paths."""
NET_CLIENTS = {
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "ssh",
    "scp",
    "sftp",
    "ftp",
    "rsync",
    "aria2c",
    "http",
    "https",
    "xh",
}
NET_CODE = re.compile(
    r"\b(?:urllib|urlopen|requests|httpx|aiohttp|http\.client|socket|fetch|WebSocket)\b|/dev/(?:tcp|udp)/"
)
"""Code that talks to the network (for code read as text: node -e, perl -e, unparsable Python)."""
CODE_FLAGS = {"node": {"-e", "--eval", "-p", "--print"}, "perl": {"-e", "-E"}, "ruby": {"-e"}, "php": {"-r"}}
SCRIPTED = {"sed": {"-e", "--expression"}, "awk": {"-v"}, "gawk": {"-v"}, "mawk": {"-v"}, "jq": set()}
"""Programs whose first operand (or these options' values) is a script, not a path."""
SEARCHES = {"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "fd"}
LOCATES = {"locate", "plocate", "mlocate", "slocate"}
WRAPPERS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "doas": {"-u"},
    "exec": {"-a"},
    "nohup": set(),
    "time": set(),
    "command": set(),
    "builtin": set(),
    "setsid": set(),
    "unbuffer": set(),
    "busybox": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "env": {"-u", "-C", "--unset", "--chdir"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "watch": {"-n", "-d"},
    "strace": {"-e", "-o", "-p", "-s"},
    "xargs": {"-I", "-i", "-n", "-P", "-L", "-l", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args"},
}
"""Programs that run the program named in their arguments, with the options that take a value."""
_GREP_VALUES = {
    "-A",
    "-B",
    "-C",
    "-m",
    "-d",
    "-D",
    "-t",
    "-T",
    "-M",
    "-j",
    "--max-count",
    "--context",
    "--type",
    "--after-context",
    "--before-context",
    "--threads",
    "--type-not",
    "-e",
    "--regexp",
    "-f",
    "--file",
    "-g",
    "--glob",
    "--iglob",
    "--include",
    "--exclude",
    "--exclude-dir",
    "-E",
    "--extension",
}
_GREP_SOUGHT = {"-g", "--glob", "--iglob", "--include", "-E", "--extension"}
_GIT_PROSE = {
    "-m",
    "--message",
    "--grep",
    "-S",
    "-G",
    "--author",
    "--committer",
    "--format",
    "--pretty",
    "-F",
    "--file",
}
BROAD = re.compile(
    r"(?:~|\$\{?HOME\b|\.\.|/(?:$|\*|(?:root|home|usr|opt|var|etc|srv|mnt|media|proc|sys|lib|lib64|bin|sbin|run|boot|snap|nix)\b))"
)
"""A search scope outside the box's own task files: the whole tree, a home, a system directory."""


def base_name(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def operands(found: Reach, args: list[str]) -> None:
    """Words a program takes as paths or names; a word with whitespace in it is text."""
    for arg in args:
        (found.texts if any(c.isspace() for c in arg) else found.paths).append(arg)


def git(found: Reach, args: list[str]) -> None:
    """Commit and tag messages and log filters are prose; refs and paths are operands."""
    if args[:1] == ["grep"]:
        search(found, args[1:], local=True)
        return
    skip = False
    for arg in args:
        option, eq, _ = arg.partition("=")
        if skip or (eq and option in _GIT_PROSE):
            skip = False
            continue
        skip = arg in _GIT_PROSE or (arg.startswith("-") and not arg.startswith("--") and arg.endswith("m"))
        if not skip:
            operands(found, [arg])


def search(found: Reach, args: list[str], local: bool = False) -> None:
    """grep-like: the pattern is what it looks for (judged as a name only when the search looks
    outside the box's own task files); the other operands are paths."""
    patterns: list[str] = []
    scope: list[str] = []
    explicit = False
    index = 0
    while index < len(args):
        arg = args[index]
        option, eq, value = arg.partition("=")
        if arg in _GREP_VALUES and index + 1 < len(args):
            value = args[index + 1]
            if arg in {"-e", "--regexp"} or arg in _GREP_SOUGHT:
                patterns.append(value)
            elif arg in {"-f", "--file"}:
                scope.append(value)
            explicit = explicit or arg in {"-e", "--regexp", "-f", "--file"}
            index += 2
            continue
        if eq and option in _GREP_VALUES:
            if option in {"--regexp", *_GREP_SOUGHT}:
                patterns.append(value)
            explicit = explicit or option == "--regexp"
        elif not arg.startswith("-") or arg == "-":
            (scope if explicit or patterns else patterns).append(arg)
        index += 1
    operands(found, scope)
    broad = not local and any(BROAD.match(path) for path in scope)
    found.sought.extend((pattern, broad) for pattern in patterns)


def code_flags(found: Reach, flags: set[str], args: list[str]) -> None:
    """node -e, perl -e ...: the code is text (no parser for it here); other operands are paths."""
    index = 0
    while index < len(args):
        if args[index] in flags and index + 1 < len(args):
            code = args[index + 1]
            found.texts.append(code)
            if NET_CODE.search(code):
                found.net.append(code)
            index += 2
            continue
        if not args[index].startswith("-"):
            operands(found, [args[index]])
        index += 1


def scripted(found: Reach, flags: set[str], args: list[str]) -> None:
    """sed/awk/jq: the first operand (or a script option's value) is a script; the rest are paths."""
    index, has_script = 0, False
    while index < len(args):
        arg = args[index]
        if arg in flags and index + 1 < len(args):
            found.texts.append(args[index + 1])
            has_script = has_script or arg in {"-e", "--expression"}
            index += 2
        elif arg in {"-f", "--file", "--from-file"} and index + 1 < len(args):
            found.paths.append(args[index + 1])
            has_script = True
            index += 2
        elif arg in {"--arg", "--argjson"}:
            found.texts.extend(args[index + 1 : index + 3])
            index += 3
        else:
            if arg == "-" or not arg.startswith("-"):
                if has_script:
                    operands(found, [arg])
                else:
                    found.texts.append(arg)
                has_script = True
            index += 1


def unwrap(head: str, args: list[str], writes: tuple[str, ...] = ()) -> Invocation:
    """The program a wrapper runs: `sudo -u x cat f` → cat f, `timeout 5 curl u` → curl u,
    `xargs -I{} cat {}` → cat {} (its input becomes arguments)."""
    name, by_xargs = base_name(head), False
    while name in WRAPPERS:
        index = 0
        while index < len(args):
            arg = args[index]
            if arg in WRAPPERS[name]:
                index += 2
            elif (arg.startswith("-") and len(arg) > 1) or (name == "env" and "=" in arg):
                index += 1
            else:
                break
        index += 1 if name == "timeout" else 0
        if index >= len(args):
            if name == "xargs":
                return Invocation("echo", (), writes, True)
            return Invocation(name, tuple(args), writes, by_xargs)
        by_xargs = by_xargs or name == "xargs"
        name, args = base_name(args[index]), args[index + 1 :]
    return Invocation(name, tuple(args), writes, by_xargs)


def unescape(text: str) -> str:
    try:
        return codecs.decode(text.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return text


def printed(name: str, args: list[str]) -> str | None:
    """What echo/printf print, for their common static forms."""
    if name == "echo":
        flags = [a for a in args[:2] if re.fullmatch(r"-[neE]+", a)]
        text = " ".join(args[len(flags) :])
        text = unescape(text) if any("e" in f for f in flags) else text
        return text if any("n" in f for f in flags) else text + "\n"
    if name == "printf" and args:
        fmt, values = args[0], args[1:]
        if re.search(r"%(?![sb%])", fmt):
            return None
        slots = len(re.findall(r"%[sb]", fmt))
        if not values or not slots:
            return unescape(fmt.replace("%%", "%"))
        out = []
        for start in range(0, len(values), slots):
            chunk = iter(values[start : start + slots] + [""] * slots)
            out.append(unescape(re.sub(r"%[sb]", lambda _match: next(chunk), fmt)))
        return "".join(out)
    return "" if name in {":", "true", "false"} else None


def reshaped(name: str, args: list[str], text: str | None) -> str | None:
    """The static output of a program that only passes or decodes its input `text`: cat, tee, base64 -d, xxd -r."""
    if text is None:
        return None
    if name == "tee" or (name == "cat" and all(a.startswith("-") for a in args)):
        return text
    try:
        if name == "base64" and {"-d", "--decode", "-D"} & set(args):
            return base64.b64decode("".join(text.split())).decode()
        if name == "xxd" and "-r" in args:
            return bytes.fromhex("".join(text.split())).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return None
