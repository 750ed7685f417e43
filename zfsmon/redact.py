"""Secrets in connection strings and command lines: hidden wherever zfsmon keeps or shows them.

A soak's ``--conn`` may carry a password (libpq's ``password=...``, a URI's ``user:pass@`` or ``?password=``),
and options such as ``--password X`` or ``PGPASSWORD=X`` may reach a command line. The recorder stores its
command line in the recording, where ``info``, ``report`` and ``export`` show it; the reader hides them again in
recordings made before they were hidden at the source. One rule for both, here: :func:`redact` for any text,
:func:`redact_argv` for an argument vector.

A child process's command line is visible to every user (``ps``), so a password never goes on one:
:func:`split_password` takes it out of a conninfo, for the child's ``PGPASSWORD``. The conninfo rules are
libpq's (``conninfo_parse`` and ``conninfo_uri_parse`` in ``fe-connect.c``).
"""

from __future__ import annotations

import re
import shlex
from typing import List, NamedTuple, Optional, Sequence, Tuple
from urllib.parse import quote, unquote

#: what a hidden secret is shown as (a word the shell and CSV leave alone)
HIDDEN = "REDACTED"

#: longer text is not taken for a command line (none a recorder writes is near it); it is redacted as it is
SHELL_LINE_MAX = 65536

_KEY = r"[\w.-]*pass(?:word|wd)"
_HINT = re.compile(r"pass(?:word|wd)|://", re.IGNORECASE)
# scheme://user:SECRET@host: the user info ends at the first '@' or '/' (libpq's look-ahead)
_URI_USERINFO = re.compile(r"(\bpostgres(?:ql)?://[^:@/\s]*:)[^@/]*(?=@)", re.IGNORECASE)
# ?password=SECRET&... in a URI's query
_URI_PARAM = re.compile(rf"([?&]{_KEY}=)[^&#\s]*", re.IGNORECASE)
# password=SECRET, PGPASSWORD=SECRET, --password=SECRET: a libpq value, quoted ('a b\'c') or up to white space
_KEYWORD = re.compile(rf"((?<![^\s'\"(,;=]){_KEY}\s*=\s*)"
                      r"('(?:[^'\\]|\\.?)*'?|(?:[^\s\\]|\\.?)+)?", re.IGNORECASE | re.DOTALL)
# an option that takes the secret as the next argument: --password SECRET (not --no-password)
_OPTION = re.compile(rf"--?(?!-|no-){_KEY}", re.IGNORECASE)
_OPTION_IN_TEXT = re.compile(rf"((?<!\S)--?(?!-|no-){_KEY}\s+)(\S+)", re.IGNORECASE)
_URI = re.compile(r"postgres(?:ql)?://", re.IGNORECASE)


def _redact_word(text: str) -> str:
    """``text`` with the secrets of a conninfo, URI or ``KEY=VALUE`` hidden (no shell quoting around it)."""
    if not _HINT.search(text):
        return text
    text = _URI_USERINFO.sub(rf"\g<1>{HIDDEN}", text)
    text = _URI_PARAM.sub(rf"\g<1>{HIDDEN}", text)
    return _KEYWORD.sub(rf"\g<1>{HIDDEN}", text)


def redact_argv(argv: Sequence[str]) -> List[str]:
    """``argv`` with every secret hidden: inside an argument, and the argument after ``--password``."""
    out: List[str] = []
    after_option = False
    for arg in argv:
        out.append(HIDDEN if after_option else _redact_word(arg))
        after_option = bool(_OPTION.fullmatch(arg))
    return out


def redact(text: str) -> str:
    """``text`` (a command line as the shell reads it, a conninfo, a message) with every secret hidden.

    A command line is split as the shell would and joined again only if something was hidden, so the
    argument vector a recording keeps is shown exactly; text the shell cannot split is taken as it is."""
    if not _HINT.search(text):
        return text
    words = shell_words(text) if len(text) <= SHELL_LINE_MAX else None
    if words is None:
        return _OPTION_IN_TEXT.sub(rf"\g<1>{HIDDEN}", _redact_word(text))
    hidden = redact_argv(words)
    return text if hidden == words else shlex.join(hidden)


# a POSIX shell word: '...' (nothing escaped), "..." (\" and \\ escaped), \x, plain characters
_WORD = re.compile(r"""(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s'"\\])+""", re.DOTALL)
_PART = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^\s'"\\]+)""", re.DOTALL)
_ESCAPED_IN_DQ = re.compile(r'\\(["\\])')


def shell_words(text: str) -> Optional[List[str]]:
    """``text`` split into words as ``shlex.split`` does (so ``shell_words(shlex.join(argv)) == argv``), or None
    if it is not a shell line (an unclosed quote). Regular expressions, not shlex's character loop: a recording's
    text may be megabytes long, and shlex takes seconds over one long word."""
    words: List[str] = []
    pos = 0
    for m in _WORD.finditer(text):
        if text[pos:m.start()].strip():
            return None
        pos = m.end()
        parts = []
        for p in _PART.finditer(m.group()):
            single, double, escaped, plain = p.groups()
            parts.append(_ESCAPED_IN_DQ.sub(r"\1", double) if double is not None else
                         next(x for x in (single, escaped, plain) if x is not None))
        words.append("".join(parts))
    return None if text[pos:].strip() else words


def command_line(argv: Sequence[str]) -> str:
    """The command line a recording keeps (``meta['argv']``): shell-quoted, its secrets hidden."""
    return shlex.join(redact_argv(argv))


# --- libpq conninfo ------------------------------------------------------------------------------------------

class Pair(NamedTuple):
    """One ``keyword = value`` of a conninfo, where it stands in the text, and its value unquoted."""

    start: int
    end: int
    key: str
    value: str


def conninfo_pairs(conninfo: str) -> List[Pair]:
    """The ``keyword=value`` pairs of a conninfo string, by libpq's rules; ValueError says what is wrong
    without quoting the text (it may hold a password)."""
    pairs: List[Pair] = []
    i, n = 0, len(conninfo)
    while True:
        while i < n and conninfo[i].isspace():
            i += 1
        if i >= n:
            return pairs
        start = i
        while i < n and not conninfo[i].isspace() and conninfo[i] != "=":
            i += 1
        key = conninfo[start:i]
        while i < n and conninfo[i].isspace():
            i += 1
        if i >= n or conninfo[i] != "=" or not re.fullmatch(r"[A-Za-z_]+", key):
            raise ValueError(f"keyword {len(pairs) + 1} is not followed by '=' (keyword=value ...)")
        i += 1
        while i < n and conninfo[i].isspace():
            i += 1
        value: List[str] = []
        quoted = i < n and conninfo[i] == "'"
        i += quoted
        while i < n and (quoted or not conninfo[i].isspace()):
            c = conninfo[i]
            i += 1
            if c == "\\":
                if i < n:
                    value.append(conninfo[i])
                    i += 1
            elif quoted and c == "'":
                quoted = False
                break
            else:
                value.append(c)
        if quoted:
            raise ValueError(f"the value of {key} has no closing quote")
        pairs.append(Pair(start, i, key, "".join(value)))


def quote_value(value: str) -> str:
    """``value`` as a conninfo value: quoted, so white space, quotes and ``key=`` inside stay part of it."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def with_dbname(conninfo: str, dbname: str) -> str:
    """``conninfo`` (a URI or keyword/value) naming ``dbname`` as its database, whatever characters it has."""
    if _URI.match(conninfo):
        return f"{conninfo}{'&' if '?' in conninfo else '?'}dbname={quote(dbname, safe='')}"
    return f"{conninfo} dbname={quote_value(dbname)}"


def split_password(conninfo: str) -> Tuple[str, Optional[str]]:
    """``(conninfo without its password, the password or None)``, for a URI or a keyword/value string.

    The password goes to the child in ``PGPASSWORD`` (libpq reads it when the conninfo has none), so no
    command line shows it. ValueError for text libpq would not read as a conninfo."""
    if _URI.match(conninfo):
        return _split_uri(conninfo)
    password: Optional[str] = None
    kept: List[str] = []
    for p in conninfo_pairs(conninfo):
        if p.key == "password":
            password = p.value
        else:
            kept.append(conninfo[p.start:p.end])
    return " ".join(kept), password


def _split_uri(uri: str) -> Tuple[str, Optional[str]]:
    scheme, rest = uri.split("://", 1)
    password: Optional[str] = None
    at = re.match(r"[^@/]*@", rest)
    if at:
        user, sep, secret = at.group()[:-1].partition(":")
        if sep:
            password = unquote(secret)
        rest = user + "@" + rest[at.end():]
    base, sep, query = rest.partition("?")
    if sep:
        params = []
        for param in query.split("&"):
            key, _, value = param.partition("=")
            if unquote(key) == "password":
                password = unquote(value)
            else:
                params.append(param)
        rest = base + ("?" + "&".join(params) if params else "")
    return f"{scheme}://{rest}", password
