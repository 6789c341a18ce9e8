"""Decode Jane Austen's six novels from Debian's ``r-cran-janeaustenr`` into Ember's corpus.

The R package ``janeaustenr`` (Julia Silge, MIT) keeps each novel as a character vector of
text lines (``sensesensibility``, ``prideprejudice``, ...) in R's lazy-load database
(``data/Rdata.rdx`` + ``data/Rdata.rdb``). No R is needed: this script reads the Debian
package (an ``ar`` archive holding ``data.tar.*``), the lazy-load index and the objects in
R's serialization format (XDR, versions 2 and 3) with the standard library, and writes one
``janeaustenr/<name>.txt.xz`` per novel (its lines joined by ``\\n``, UTF-8) into
``packages/text/src/ember/text/datasets/_data/``, with *Botchan* (``test/botchan.txt`` of
sentencepiece's source distribution, or the file itself, copied unchanged) as
``botchan.txt.xz`` and ``ATTRIBUTION.md`` for both::

    apt-get download r-cran-janeaustenr
    pip download --no-deps --no-binary :all: sentencepiece -d .
    python tools/janeausten_decode.py r-cran-janeaustenr_1.0.0-1_all.deb \\
        --botchan sentencepiece-0.2.3.tar.gz

The source may also be a folder where the package was unpacked (``dpkg-deb -x``) or the
installed ``janeaustenr`` library folder. Only the subset of R's serialization that data
packages use is decoded; anything else is refused naming the SEXP type.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import lzma
import os
import pathlib
import struct
import sys
import tarfile
import zlib
from dataclasses import dataclass, field

#: janeaustenr's objects, one per novel, in ``austen_books()``'s (publication) order
NOVELS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey",
          "persuasion")

DEFAULT_OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "text" / "src"
               / "ember" / "text" / "datasets" / "_data")
LIBRARY = "usr/lib/R/site-library/janeaustenr"
_LIBRARY_FILES = ("data/Rdata.rdx", "data/Rdata.rdb", "DESCRIPTION")

# -- R's serialization (src/main/serialize.c) ---------------------------------------------------

NILSXP, SYMSXP, LISTSXP, CLOSXP, ENVSXP, PROMSXP, LANGSXP = 0, 1, 2, 3, 4, 5, 6
SPECIALSXP, BUILTINSXP, CHARSXP, LGLSXP, INTSXP, REALSXP, CPLXSXP = 7, 8, 9, 10, 13, 14, 15
STRSXP, DOTSXP, VECSXP, EXPRSXP, RAWSXP, S4SXP = 16, 17, 19, 20, 24, 25
ALTREP_SXP, ATTRLISTSXP, ATTRLANGSXP, BASEENV_SXP, EMPTYENV_SXP = 238, 239, 240, 242, 243
PERSISTSXP, PACKAGESXP, NAMESPACESXP, BASENAMESPACE_SXP = 247, 248, 249, 250
MISSINGARG_SXP, UNBOUNDVALUE_SXP, GLOBALENV_SXP, NILVALUE_SXP, REFSXP = 251, 252, 253, 254, 255

IS_OBJECT, HAS_ATTR, HAS_TAG = 1 << 8, 1 << 9, 1 << 10
LATIN1_MASK, UTF8_MASK = 1 << 2, 1 << 3
NA_INTEGER = -(2 ** 31)
PAIRLISTS = (LISTSXP, LANGSXP, CLOSXP, PROMSXP, DOTSXP, ATTRLISTSXP, ATTRLANGSXP)


@dataclass
class RObject:
    """A decoded R value: its SEXP type, its data (a list for vectors, a list of
    ``(tag, value)`` for pairlists, a str for symbols) and its attributes."""

    sexptype: int
    data: object
    attributes: dict = field(default_factory=dict)

    def names(self) -> list:
        names = self.attributes.get("names")
        return names.data if isinstance(names, RObject) else []


@dataclass
class Special:
    """A singleton of R (the global environment, a missing argument, ...)."""

    name: str


class Unserializer:
    """Reads one serialized R object in XDR format (``serialize(x, NULL)``)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.refs = data, 0, []

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"R serialization truncated at byte {self.pos} (wanted {n} more)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def length(self) -> int:
        n = self.int()
        if n == -1:  # a long vector: two 32-bit halves
            upper, lower = self.int(), self.int()
            n = (upper << 32) + (lower & 0xFFFFFFFF)
        return n

    def read(self) -> object:
        head = self.take(2)
        if head != b"X\n":
            raise ValueError(f"not an XDR R serialization (header {head!r}); only format "
                             "'X' is decoded")
        version, _writer, _min_reader = self.int(), self.int(), self.int()
        if version == 3:
            self.take(self.int())  # the native encoding of the writer
        elif version != 2:
            raise ValueError(f"R serialization version {version} is not supported (2, 3 are)")
        return self.item()

    def item(self) -> object:
        flags = self.int()
        kind, levels = flags & 0xFF, flags >> 12
        simple = {NILVALUE_SXP: None, EMPTYENV_SXP: Special("emptyenv"),
                  BASEENV_SXP: Special("baseenv"), GLOBALENV_SXP: Special("globalenv"),
                  UNBOUNDVALUE_SXP: Special("unbound"), MISSINGARG_SXP: Special("missing"),
                  BASENAMESPACE_SXP: Special("base namespace")}
        if kind in simple:
            return simple[kind]
        if kind == REFSXP:
            index = flags >> 8 or self.int()
            return self.refs[index - 1]
        if kind in (NAMESPACESXP, PACKAGESXP, PERSISTSXP):
            self.int()  # a 0 before the STRSXP naming it
            obj = RObject(kind, self.vector(STRSXP, self.length()))
            self.refs.append(obj)
            return obj
        if kind == SYMSXP:
            obj = RObject(SYMSXP, self.item())  # its name, a CHARSXP
            self.refs.append(obj)
            return obj
        if kind == ENVSXP:
            return self.environment()
        if kind in PAIRLISTS:
            return self.pairlist(kind, flags)
        if kind == CHARSXP:
            return self.charsxp(levels)
        if kind == ALTREP_SXP:
            return self.altrep()
        if kind in (SPECIALSXP, BUILTINSXP):
            return RObject(kind, self.take(self.int()).decode("ascii"))
        obj = RObject(kind, self.vector(kind, self.length()))
        if flags & HAS_ATTR:
            obj.attributes = self.attributes(self.item())
        return obj

    def vector(self, kind: int, n: int) -> list:
        if kind in (LGLSXP, INTSXP):
            values = struct.unpack(f">{n}i", self.take(4 * n))
            return [None if v == NA_INTEGER else v for v in values]
        if kind == REALSXP:
            return list(struct.unpack(f">{n}d", self.take(8 * n)))
        if kind == CPLXSXP:
            values = struct.unpack(f">{2 * n}d", self.take(16 * n))
            return [complex(values[i], values[i + 1]) for i in range(0, 2 * n, 2)]
        if kind == RAWSXP:
            return list(self.take(n))
        if kind in (STRSXP, VECSXP, EXPRSXP):
            return [self.item() for _ in range(n)]
        raise ValueError(f"SEXP type {kind} is not decoded by this script")

    def charsxp(self, levels: int) -> str | None:
        n = self.int()
        if n == -1:
            return None  # NA_character_
        raw = self.take(n)
        return raw.decode("latin-1" if levels & LATIN1_MASK else "utf-8")

    def pairlist(self, kind: int, flags: int) -> RObject:
        cells, attributes = [], {}
        while True:
            if flags & HAS_ATTR:
                attributes = self.attributes(self.item())
            tag = self.item() if flags & HAS_TAG else None
            cells.append((tag.data if isinstance(tag, RObject) else tag, self.item()))
            # the cdr: continue the loop for a pairlist tail rather than recursing
            flags = self.int()
            if flags & 0xFF != kind:
                self.pos -= 4
                tail = self.item()
                if tail is not None:
                    cells.append((None, tail))
                return RObject(kind, cells, attributes)

    def attributes(self, pairlist) -> dict:
        if pairlist is None:
            return {}
        return {tag: value for tag, value in pairlist.data}

    def environment(self) -> RObject:
        env = RObject(ENVSXP, {})
        self.refs.append(env)
        self.int()  # locked
        enclosure, frame, hashtab, attrib = self.item(), self.item(), self.item(), self.item()
        bindings = list(frame.data) if isinstance(frame, RObject) else []
        if isinstance(hashtab, RObject):
            for bucket in hashtab.data:
                if isinstance(bucket, RObject):
                    bindings.extend(bucket.data)
        env.data = {"enclosure": enclosure, "bindings": dict(bindings)}
        env.attributes = self.attributes(attrib)
        return env

    def altrep(self) -> RObject:
        info, state, attrib = self.item(), self.item(), self.item()
        cls = info.data[0][1].data if isinstance(info, RObject) else "?"
        if cls in ("compact_intseq", "compact_realseq"):
            n, start, step = state.data
            kind = INTSXP if cls == "compact_intseq" else REALSXP
            values = [start + i * step for i in range(int(n))]
            obj = RObject(kind, [int(v) for v in values] if kind == INTSXP else values)
        elif cls == "deferred_string":
            source = state.data[0][1]
            obj = RObject(STRSXP, [None if v is None else _deparse_number(v)
                                   for v in source.data])
        elif cls.startswith("wrap_"):
            wrapped = state.data[0][1]
            obj = RObject(wrapped.sexptype, wrapped.data)
        else:
            raise ValueError(f"ALTREP class {cls!r} is not decoded by this script")
        obj.attributes = self.attributes(attrib)
        return obj


def _deparse_number(v) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def unserialize(data: bytes) -> object:
    """The R object serialized in ``data`` (gzip/bzip2/xz-compressed files are accepted)."""
    for magic, opener in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress),
                          (b"\xfd7zXZ", lzma.decompress)):
        if data.startswith(magic):
            data = opener(data)
            break
    return Unserializer(data).read()


# -- R's lazy-load database (src/main/serialize.c: R_lazyLoadDBfetch) ----------------------------

def _inflate_blob(blob: bytes, compressed: int) -> bytes:
    """One value of an ``.rdb``: a big-endian length then the compressed serialization."""
    size = struct.unpack(">I", blob[:4])[0]
    if compressed in (0, None):
        return blob
    if compressed == 1:
        out = zlib.decompress(blob[4:])
    else:  # 2 and 3 carry a type byte: Z (zlib), 2 (bzip2), X (xz), 0 (stored)
        method, body = blob[4:5], blob[5:]
        decoders = {b"Z": zlib.decompress, b"2": bz2.decompress, b"X": lzma.decompress,
                    b"0": bytes}
        if method not in decoders:
            raise ValueError(f"unknown lazy-load compression type {method!r}")
        out = decoders[method](body)
    if len(out) != size:
        raise ValueError(f"lazy-load value inflated to {len(out)} bytes, expected {size}")
    return out


def read_lazyload(rdx: bytes, rdb: bytes) -> dict[str, object]:
    """Every variable of a lazy-load database, by name."""
    index = unserialize(rdx)
    parts = dict(zip(index.names(), index.data))
    compressed = parts.get("compressed")
    compressed = compressed.data[0] if isinstance(compressed, RObject) else 1
    compressed = int(compressed) if compressed is not None else 1
    variables = parts["variables"]
    out = {}
    for name, key in zip(variables.names(), variables.data):
        offset, length = key.data
        out[name] = unserialize(_inflate_blob(rdb[offset:offset + length], compressed))
    return out


# -- the Debian package ---------------------------------------------------------------------------

def _ar_members(data: bytes):
    """``(name, bytes)`` of each member of an ``ar`` archive (a ``.deb``)."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive (a .deb starts with '!<arch>')")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        yield name, data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)


def _tar_files(payload: bytes, wanted: dict[str, str]) -> dict[str, bytes]:
    """The files of a (compressed) tar in memory whose names (``./`` prefixed) are keys of
    ``wanted``, under ``wanted``'s values."""
    found = {}
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        for member in tar.getmembers():
            key = member.name if member.name.startswith("./") else "./" + member.name
            if key in wanted and member.isfile():
                found[wanted[key]] = tar.extractfile(member).read()
    return found


def _from_deb(path: pathlib.Path) -> dict[str, bytes]:
    files = {}
    for name, payload in _ar_members(path.read_bytes()):
        if name.startswith("data.tar"):
            files.update(_tar_files(payload, {f"./{LIBRARY}/{n}": n for n in _LIBRARY_FILES}))
        elif name.startswith("control.tar"):
            files.update(_tar_files(payload, {"./control": "control"}))
    if "data/Rdata.rdb" not in files:
        raise ValueError(f"{path}: no janeaustenr data inside")
    return files


def _from_dir(path: pathlib.Path) -> dict[str, bytes]:
    lib = path / LIBRARY if (path / LIBRARY).is_dir() else path
    return {name: (lib / name).read_bytes() for name in _LIBRARY_FILES}


def _field(text: str, name: str) -> str | None:
    """A ``Name: value`` field of a Debian control file."""
    return next((line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.startswith(name + ":")), None)


def load_novels(source: str | os.PathLike) -> tuple[dict[str, list[str]], str]:
    """``({object name: lines}, versions)`` from a .deb or an unpacked folder; ``versions``
    names janeaustenr's version and the Debian package's (when read from the .deb)."""
    path = pathlib.Path(source)
    files = _from_dir(path) if path.is_dir() else _from_deb(path)
    variables = read_lazyload(files["data/Rdata.rdx"], files["data/Rdata.rdb"])
    novels = {}
    for name in NOVELS:
        obj = variables[name]
        if not (isinstance(obj, RObject) and obj.sexptype == STRSXP):
            raise ValueError(f"janeaustenr::{name} is not a character vector")
        novels[name] = ["" if line is None else line for line in obj.data]
    upstream = _field(files["DESCRIPTION"].decode("utf-8"), "Version")
    debian = _field(files.get("control", b"").decode("utf-8"), "Version")
    return novels, f"janeaustenr {upstream}" + (f", Debian package {debian}" if debian else "")


ATTRIBUTION = """\
# Jane Austen's novels and Botchan

## `janeaustenr/*.txt.xz`

Jane Austen's six completed novels, one file per novel, one text line per line
(UTF-8, xz-compressed): `sensesensibility` (Sense & Sensibility, 1811),
`prideprejudice` (Pride & Prejudice, 1813), `mansfieldpark` (Mansfield Park, 1814),
`emma` (Emma, 1815), `northangerabbey` (Northanger Abbey, 1817) and `persuasion`
(Persuasion, 1817). The novels are in the public domain.

The lines are the character vectors of the R package **janeaustenr** by Julia Silge (MIT
license, https://github.com/juliasilge/janeaustenr), which took them from Project
Gutenberg, as packaged by Debian (`r-cran-janeaustenr`), decoded from R's lazy-load
database by `tools/janeausten_decode.py` without changing a character.
Versions: {version}. To make the files again:

    apt-get download r-cran-janeaustenr
    pip download --no-deps --no-binary :all: sentencepiece -d .
    python tools/janeausten_decode.py r-cran-janeaustenr_*_all.deb \\
        --botchan sentencepiece-*.tar.gz

janeaustenr's license: Copyright 2016-2017 Julia Silge. Permission is hereby granted, free
of charge, to any person obtaining a copy of this software and associated documentation
files (the "Software"), to deal in the Software without restriction, including without
limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
sell copies of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions: The above copyright notice and this permission
notice shall be included in all copies or substantial portions of the Software. THE
SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.

## `botchan.txt.xz`

*Botchan (Master Darling)* by Kin-nosuke Natsume (Natsume Soseki), translated by
Yasotaro Morri, Project Gutenberg eBook #8868, in the public domain. The file is
`test/botchan.txt` of sentencepiece's source distribution (Apache-2.0 for the code, the
text itself is public domain), copied unchanged and xz-compressed, Project Gutenberg's
header and license included.
Source: {botchan_source}.
"""


def _write_xz(path: pathlib.Path, data: bytes) -> None:
    with lzma.open(path, "wb", preset=9 | lzma.PRESET_EXTREME) as f:
        f.write(data)


def write_corpus(novels: dict[str, list[str]], version: str, botchan: bytes,
                 botchan_source: str, out: pathlib.Path) -> None:
    """The novels, Botchan and ATTRIBUTION.md into ``out``."""
    folder = out / "janeaustenr"
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in novels.items():
        _write_xz(folder / f"{name}.txt.xz", "\n".join(lines).encode("utf-8"))
    _write_xz(out / "botchan.txt.xz", botchan)
    text = ATTRIBUTION.format(version=version, botchan_source=botchan_source)
    (out / "ATTRIBUTION.md").write_text(text, encoding="utf-8")


def read_botchan(source: str | os.PathLike) -> tuple[bytes, str]:
    """``(bytes of botchan.txt, where they came from)``: the file itself, or
    ``*/test/botchan.txt`` of sentencepiece's source distribution (a .tar.gz)."""
    path = pathlib.Path(source)
    if not tarfile.is_tarfile(path):
        return path.read_bytes(), path.name
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith("/test/botchan.txt"):
                return tar.extractfile(member).read(), f"{path.name}: {member.name}"
    raise ValueError(f"{path}: no test/botchan.txt inside")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="r-cran-janeaustenr .deb, or a folder it was unpacked in")
    parser.add_argument("--botchan", required=True,
                        help="sentencepiece's sdist (.tar.gz), or botchan.txt itself")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output folder")
    args = parser.parse_args(argv)
    novels, version = load_novels(args.source)
    botchan, botchan_source = read_botchan(args.botchan)
    write_corpus(novels, version, botchan, botchan_source, pathlib.Path(args.out))
    for name, lines in novels.items():
        print(f"{name}: {len(lines)} lines")
    print(f"botchan: {len(botchan)} bytes from {botchan_source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
