r"""The regex dialect shared by the Python engine and the browser (explain.js).

Rules live in TOML as patterns that Python ``re`` and JavaScript ``RegExp`` read alike. Two
conveniences are expanded here, once, at load time, so both engines receive finished patterns:

* ``{NAME}`` macros from the catalogue's ``[syntax]`` table (a device token, a dispatch key);
* a literal space outside a character class means "whitespace, possibly none", because real
  pastes wrap lines, double spaces and lose them. Most patterns run on text whose whitespace runs
  were collapsed to one space, so the space becomes `` ?`` (cheap to compile, and compiling is
  most of explain's start-up time). Anchors, which locate messages in the raw paste, may cross
  line breaks (``\s*``); patterns over raw multi-line text stay on one line (``[^\S\n]*``).

Python-only syntax is converted for JavaScript by :func:`to_js` (named groups); everything else is
written in the common subset (no lookbehind, no inline flags, no possessive quantifiers).
"""

from __future__ import annotations

import re
from functools import cache

# What a literal space becomes, by the text a pattern runs on.
SPACE = {
    "collapsed": " ?",  # one line, whitespace runs collapsed to a single space
    "raw": r"[^\S\n]*",  # raw multi-line text: any run of spaces, never a line break
    # locating a message that may be wrapped over lines; bounded, as every repeat in an anchor
    # (anchors run over the whole paste: an unbounded repeat is quadratic on adversarial input)
    "anchor": r"\s{0,80}",
}

_MACRO = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")


def expand(pattern: str, macros: dict[str, str], mode: str = "collapsed") -> str:
    """Substitute ``{NAME}`` macros and turn literal spaces into flexible whitespace."""

    def macro(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in macros:
            raise ValueError(f"unknown macro {{{name}}} in pattern {pattern!r}")
        return macros[name]

    pattern = _MACRO.sub(macro, pattern)
    space = SPACE[mode]
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
            # a ']' right after '[' or '[^' is a literal member, not the end of the class
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                out.append("]")
                i += 1
        elif ch == " ":
            # collapse a run of spaces into one flexible whitespace token
            while i + 1 < len(pattern) and pattern[i + 1] == " ":
                i += 1
            out.append(space)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def to_js(pattern: str) -> str:
    """Python named-group spelling to JavaScript's (the only difference the dialect allows)."""
    return pattern.replace("(?P<", "(?<").replace("(?P=", r"\k<")


# Case-insensitive, ASCII classes (JavaScript's \w and \d are ASCII too), ^/$ at line breaks
# (JavaScript's "m" flag) so that whole-text patterns behave the same in both engines.
FLAGS = re.IGNORECASE | re.ASCII | re.MULTILINE


@cache
def compiled(pattern: str) -> re.Pattern[str]:
    """Compile an expanded pattern with the shared flags (cached: explain compiles lazily)."""
    return re.compile(pattern, FLAGS)


@cache
def compiled_exact_case(pattern: str) -> re.Pattern[str]:
    """For lower-case patterns run on text lower-cased first (anchors, catalogue forms):
    case-insensitive matching costs twice the compile time, and compiling dominates start-up."""
    return re.compile(pattern, re.ASCII | re.MULTILINE)


_WHITESPACE = re.compile(r"\s+", re.ASCII)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def collapse(line: str) -> str:
    """Whitespace runs to one space (what ``collapsed`` patterns expect)."""
    return _WHITESPACE.sub(" ", line)


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only: offsets stay valid for the original text."""
    return text.translate(_ASCII_LOWER)
