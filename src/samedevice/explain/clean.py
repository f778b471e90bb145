"""From what the user pasted to clean lines.

Real pastes carry noise that hides the message: ANSI colours (and their remains when the escape
byte was lost), HTML escaping from rendered pages, full-width punctuation from CJK keyboards,
curly quotes from rich-text editors, torchrun rank prefixes, timestamps and log levels. Cleaning
keeps one output line per input line, so line numbers in the evidence match the paste.

The browser (explain.js) implements the same steps, in the same order, from the same data.
"""

from __future__ import annotations

import re
import unicodedata

from samedevice.explain.dialect import compiled


class InputError(ValueError):
    """The input is not text explain can read (empty, binary, not UTF-8); one-line message."""


# Control characters that occur in real terminal output (tab, newline, CR, ESC, form feed,
# backspace); anything else in quantity means the input is not text.
_TEXT_CONTROLS = frozenset("\t\n\r\x1b\x0c\x08")
# Byte-order marks, longest first (a UTF-32 LE BOM begins with the UTF-16 LE one): PowerShell 5.1
# writes UTF-16 LE with a BOM for `2> err.txt`, some editors save UTF-32.
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xef\xbb\xbf", "utf-8"),
)


def decode(data: bytes) -> str:
    """Bytes from a file or stdin to text, or InputError saying why not."""
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            data, encoding = data[len(bom) :], name
            break
    if encoding == "utf-8" and b"\x00" in data[:65536]:
        raise InputError("the input looks binary (it contains NUL bytes); paste the error as text")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        raise InputError(
            f"the input is not {encoding.upper()} text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "paste the error as plain text"
        ) from None
    check_text(text)
    return text


def check_text(text: str) -> None:
    """Reject empty and binary input (the same rule the browser applies to a paste)."""
    if not text.strip():
        raise InputError("the input is empty; paste the error message or the whole traceback")
    if "\x00" in text:
        raise InputError("the input looks binary (it contains NUL bytes); paste the error as text")
    sample = text[:65536]
    controls = sum(1 for ch in sample if ch < " " and ch not in _TEXT_CONTROLS)
    if controls > max(8, len(sample) // 100):
        raise InputError("the input looks binary (too many control characters); paste the error as text")


def clean_lines(text: str, kb: dict) -> list[str]:
    """The paste as cleaned lines (same count as the input's lines)."""
    rules = kb["clean"]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "&" in text:
        text = _decode_entities(text, rules["entity"], rules["entities"])
    if "\x1b" in text or "[" in text:
        text = compiled(rules["ansi"]).sub("", text)
    if not text.isascii():
        # line by line, and only the lines that need it: NFKC is the costliest step on a 10 MB
        # log, and a line break is a stable boundary, so the result equals NFKC of the whole
        char_map = rules["char_map"]
        text = "\n".join(line if line.isascii() else _fold(line, char_map) for line in text.split("\n"))
    if "\t" in text:
        text = text.replace("\t", " ")
    text = compiled(rules["prefix"]).sub("", text)
    return text.split("\n")


def _fold(line: str, char_map: list[list[str]]) -> str:
    # NFKC maps full-width punctuation and letters to ASCII (：→:, （→(, ！→!)
    line = unicodedata.normalize("NFKC", line)
    for old, new in char_map:
        if old in line:
            line = line.replace(old, new)
    # characters outside the BMP (emoji in progress bars) carry nothing for explain; one BMP
    # stand-in keeps lengths equal to the browser's UTF-16 lengths
    return _ASTRAL.sub("\ufffd", line)


_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _decode_entities(text: str, entity: str, named: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        body = m.group(1)
        if body[0] == "#":
            try:
                code = int(body[2:], 16) if body[1] in "xX" else int(body[1:])
            except ValueError:
                return m.group(0)
            # never decode into control characters or line breaks: line numbers must survive
            if code < 32 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                return m.group(0)
            return chr(code)
        return named.get(body.lower(), m.group(0))

    return compiled(entity).sub(one, text)
