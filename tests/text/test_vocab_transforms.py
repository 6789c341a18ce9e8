"""ember.text.vocab, ember.text.transforms and ember.text.data against torchtext's documented
examples and its own unit tests (test/torchtext_unittest/test_vocab.py, test_transforms.py),
with torchtext's errors."""

from __future__ import annotations

import pathlib
import pickle
from collections import Counter, OrderedDict

import numpy as np
import pytest
import sentencepiece as spm

import ember
from ember import nn
from ember.text import transforms
from ember.text.data import (
    custom_replace,
    generate_sp_model,
    get_tokenizer,
    interleave_keys,
    load_sp_model,
    ngrams_iterator,
    numericalize_tokens_from_iterator,
    sentencepiece_numericalizer,
    sentencepiece_tokenizer,
    simple_space_split,
    to_map_style_dataset,
)
from ember.text.data.utils import ngrams_iterator as utils_ngrams_iterator
from ember.text.vocab import Vocab, build_vocab_from_iterator, vocab

DATA = pathlib.Path(__file__).with_name("data")
UNICODE = "ᑌᑎIᑕOᗪᕮ_Tᕮ᙭T"


def _by_freq(token_to_freq: dict) -> OrderedDict:
    return OrderedDict(sorted(token_to_freq.items(), key=lambda x: x[1], reverse=True))


# -- Vocab ------------------------------------------------------------------------------------

def test_vocab_membership_getitem_and_len():
    v = vocab(_by_freq({"<unk>": 2, "a": 2, "b": 2}), min_freq=2)
    assert "<unk>" in v and "a" in v and "b" in v and "c" not in v
    assert (v["<unk>"], v["a"], v["b"]) == (0, 1, 2)
    assert len(vocab(_by_freq({"a": 2, "b": 2, "c": 2}))) == 3
    assert isinstance(v, nn.Module)


def test_default_index_and_torchtext_s_error():
    v = vocab(_by_freq({"<unk>": 2, "a": 2, "b": 2}), min_freq=2)
    assert v.get_default_index() is None
    with pytest.raises(RuntimeError) as info:
        v["not in vocab"]
    assert str(info.value) == "Token not in vocab not found and default index is not set"
    with pytest.raises(RuntimeError, match="Token zz not found and default index is not set"):
        v.lookup_indices(["a", "zz"])
    with pytest.raises(RuntimeError, match="Token zz not found"):
        v(["zz"])
    v.set_default_index(0)
    assert v["not in vocab"] == 0
    assert v.lookup_indices(["b", "zz"]) == [2, 0]
    v.set_default_index(None)
    with pytest.raises(RuntimeError):
        v["not in vocab"]


def test_vocab_documented_example():
    counter = Counter(["a", "a", "b", "b", "b"])
    sorted_by_freq_tuples = sorted(counter.items(), key=lambda x: x[1], reverse=True)
    v1 = vocab(OrderedDict(sorted_by_freq_tuples))
    assert v1["a"] == 1
    with pytest.raises(RuntimeError):
        v1["out of vocab"]
    tokens = ["e", "d", "c", "b", "a"]
    v2 = vocab(OrderedDict([(token, 1) for token in tokens]), specials=["<unk>"])
    v2.set_default_index(-1)
    assert v2["<unk>"] == 0
    assert v2["out of vocab"] == -1
    v2.set_default_index(v2["<unk>"])
    assert v2["out of vocab"] == v2["<unk>"]


def test_vocab_insert_and_append_token():
    c = OrderedDict({"<unk>": 2, "a": 2})
    v = vocab(c)
    v.insert_token("b", 2)
    assert v.get_itos() == ["<unk>", "a", "b"]
    assert v.get_stoi() == {"<unk>": 0, "a": 1, "b": 2}
    v = vocab(c)
    v.insert_token("b", 0)
    assert v.get_itos() == ["b", "<unk>", "a"]
    assert v.get_stoi() == {"b": 0, "<unk>": 1, "a": 2}
    with pytest.raises(RuntimeError, match="Specified index 4 is out of bounds for vocab of "
                                           "size 3"):
        v.insert_token("c", 4)
    with pytest.raises(RuntimeError, match="Token a already exists"):
        v.insert_token("a", 0)
    v = vocab(OrderedDict({"a": 2}))
    v.append_token("b")
    assert v.get_itos() == ["a", "b"] and v.get_stoi() == {"a": 0, "b": 1}
    with pytest.raises(RuntimeError) as info:
        v.append_token("b")
    assert str(info.value) == "Token b already exists in the Vocab with index: 1"


def test_vocab_basic_with_min_freq_and_unicode():
    c = _by_freq({"hello": 4, "world": 3, UNICODE: 5, "freq_too_low": 2})
    v = vocab(c, min_freq=3)
    expected_itos = [UNICODE, "hello", "world"]
    assert v.get_itos() == expected_itos
    assert v.get_stoi() == {x: i for i, x in enumerate(expected_itos)}
    assert "freq_too_low" in c  # the caller's dict is left as it was


def test_vocab_forward_and_lookups():
    v = vocab(_by_freq({"a": 2, "b": 2, "c": 2}))
    assert v(["b", "a", "c"]) == [1, 0, 2]
    assert v.forward(["b", "a", "c"]) == [1, 0, 2]
    assert v.lookup_indices(["b", "a", "c"]) == [1, 0, 2]
    assert v.lookup_token(1) == "b"
    with pytest.raises(RuntimeError) as info:
        v.lookup_token(100)
    assert str(info.value) == "Specified index 100 is out of bounds for vocab of size 3"
    assert v.lookup_tokens([1, 0, 2]) == ["b", "a", "c"]
    with pytest.raises(RuntimeError) as info:
        v.lookup_tokens([1, -1])
    assert str(info.value) == ("Specified index -1 at position 1 is out of bounds for vocab "
                               "of size 3")


def test_vocab_specials():
    c = _by_freq({"hello": 4, "world": 3, UNICODE: 5, "freq_too_low": 2})
    specials = ["<unk>", "<bos>", "<eos>", "pad"]
    v1 = vocab(c, min_freq=3, specials=specials)
    assert v1.get_itos() == specials + [UNICODE, "hello", "world"]
    v2 = vocab(c, min_freq=3, specials=specials, special_first=False)
    assert v2.get_itos() == [UNICODE, "hello", "world"] + specials
    # a special already counted is not duplicated
    assert vocab(_by_freq({"<unk>": 9, "a": 1}), specials=["<unk>"]).get_itos() == ["<unk>",
                                                                                     "a"]
    with pytest.raises(RuntimeError, match="Duplicate token found in tokens list: x"):
        vocab(OrderedDict(), specials=["x", "x"])


def test_vocab_pickles_and_saves(tmp_path):
    v = vocab(_by_freq({"hello": 4, "world": 3, UNICODE: 5}), min_freq=3)
    v.set_default_index(0)
    loaded = pickle.loads(pickle.dumps(v))
    assert loaded.get_itos() == v.get_itos() and loaded["not in vocab"] == 0
    loaded.append_token("new")
    assert loaded["new"] == 3 and "new" not in v


def test_build_vocab_from_iterator():
    iterator = [["hello", "hello", "hello", "freq_low", "hello", "world", "world", "world",
                 UNICODE, UNICODE, UNICODE, "freq_low", UNICODE, UNICODE]]
    specials = ["<unk>", "<bos>", "<eos>", "pad"]
    words = [UNICODE, "hello", "world", "freq_low"]
    assert build_vocab_from_iterator(iterator).get_itos() == words
    assert build_vocab_from_iterator(iterator, specials=specials).get_itos() == specials + words
    assert build_vocab_from_iterator(iterator, specials=specials,
                                     special_first=False).get_itos() == words + specials
    assert build_vocab_from_iterator(iterator, min_freq=3).get_itos() == words[:3]


def test_build_vocab_sorts_descending_frequency_then_lexicographically():
    v = build_vocab_from_iterator([["a", "b"], ["a", "b"]])
    assert (v["a"], v["b"]) == (0, 1)
    v = build_vocab_from_iterator([["a", "b"], ["b"]])
    assert (v["b"], v["a"]) == (0, 1)
    v = build_vocab_from_iterator([["c", "B", "a", "b"], iter(["c"])])
    assert v.get_itos() == ["c", "B", "a", "b"]  # ties in code-point order, as sorted()


def test_build_vocab_from_iterator_max_tokens():
    it = [["hello", "world"], ["hello"]]
    specials = ["<unk>", "<pad>"]
    with pytest.raises(AssertionError, match="len\\(specials\\) >= max_tokens"):
        build_vocab_from_iterator(it, specials=specials, max_tokens=1)
    v = build_vocab_from_iterator(it, specials=specials, special_first=True, max_tokens=3)
    assert (v["<unk>"], v["<pad>"], v["hello"]) == (0, 1, 2) and len(v) == 3
    v = build_vocab_from_iterator(it, specials=specials, special_first=False, max_tokens=3)
    assert (v["hello"], v["<unk>"], v["<pad>"]) == (0, 1, 2)


def test_build_vocab_documented_pipeline(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("the cat sat\nthe dog sat down\n", encoding="utf-8")

    def yield_tokens(file_path):
        with open(file_path, encoding="utf-8") as f:
            for line in f:
                yield line.strip().split()

    v = build_vocab_from_iterator(yield_tokens(path), specials=["<unk>"])
    v.set_default_index(v["<unk>"])
    assert v.get_itos() == ["<unk>", "sat", "the", "cat", "dog", "down"]
    assert v(["the", "bird", "sat"]) == [2, 0, 1]


# -- get_tokenizer, ngrams ------------------------------------------------------------------

def test_get_tokenizer_basic_english():
    tokenizer = get_tokenizer("basic_english")
    assert tokenizer("You can now install TorchText using pip!") == [
        "you", "can", "now", "install", "torchtext", "using", "pip", "!"]
    # torchtext's regexes: ' split off, " dropped, <br /> ; : to spaces, ( ) , . ! ? split off
    assert tokenizer('It\'s "Quoted"<br />text; a:b (c), d. e? f!') == [
        "it", "'", "s", "quoted", "text", "a", "b", "(", "c", ")", ",", "d", ".", "e", "?",
        "f", "!"]
    with pytest.raises(ValueError, match=r"only available for Enlish\(en\)"):
        get_tokenizer("basic_english", language="de")


def test_get_tokenizer_split_callable_and_unknown():
    assert get_tokenizer(None)("a  b\tc\n") == ["a", "b", "c"]

    def mine(s):
        return list(s)

    assert get_tokenizer(mine) is mine
    with pytest.raises(ValueError, match="Requested tokenizer nonsense, valid choices"):
        get_tokenizer("nonsense")


def test_ngrams_iterator():
    assert list(ngrams_iterator(["here", "we", "are"], 2)) == [
        "here", "we", "are", "here we", "we are"]
    assert list(utils_ngrams_iterator(["a", "b", "c", "d"], 3)) == [
        "a", "b", "c", "d", "a b", "b c", "c d", "a b c", "b c d"]
    assert list(ngrams_iterator(["a", "b"], 1)) == ["a", "b"]


def test_interleave_keys():
    assert interleave_keys(0, 0) == 0
    assert interleave_keys(1, 0) == 2 and interleave_keys(0, 1) == 1
    assert interleave_keys(3, 5) == int("".join(a + b for a, b in zip(
        format(3, "016b"), format(5, "016b"))), 2)


# -- data.functional ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sp_model_path(tmp_path_factory) -> pathlib.Path:
    prefix = tmp_path_factory.mktemp("sp") / "spm_user"
    generate_sp_model(str(DATA / "botchan_sample.txt"), vocab_size=600,
                      model_prefix=str(prefix))
    return prefix.with_suffix(".model")


def test_sentencepiece_generators_match_the_library(sp_model_path):
    ref = spm.SentencePieceProcessor(model_file=str(sp_model_path))
    sp_model = load_sp_model(str(sp_model_path))
    with open(sp_model_path, "rb") as f:
        assert load_sp_model(f).serialized_model_proto() == ref.serialized_model_proto()
    with pytest.raises(TypeError, match="Unsupported type for spm argument: int"):
        load_sp_model(3)
    texts = ["sentencepiece encode as pieces", "examples to   try!"]
    assert list(sentencepiece_numericalizer(sp_model)(texts)) == ref.encode(texts)
    assert list(sentencepiece_tokenizer(sp_model)(texts)) == ref.encode(texts, out_type=str)


def test_text_functional_helpers():
    assert list(custom_replace([(r"S", "s"), (r"\s+", " ")])(
        ["Sentencepiece encode  aS  pieces", "exampleS to   try!"])) == [
        "sentencepiece encode as pieces", "examples to try!"]
    assert list(simple_space_split(["Sentencepiece encode as pieces", "example to try!"])) == [
        ["Sentencepiece", "encode", "as", "pieces"], ["example", "to", "try!"]]
    v = {"Sentencepiece": 0, "encode": 1, "as": 2, "pieces": 3}
    ids = numericalize_tokens_from_iterator(
        v, simple_space_split(["Sentencepiece as pieces", "as pieces"]))
    assert [list(i) for i in ids] == [[0, 2, 3], [2, 3]]
    ids = numericalize_tokens_from_iterator(v, [["as", "pieces", "as"]], removed_tokens=["as"])
    assert [list(i) for i in ids] == [[3]]
    ds = to_map_style_dataset(x * 2 for x in range(5))
    assert isinstance(ds, ember.data.Dataset) and len(ds) == 5 and ds[3] == 6
    loader = ember.data.DataLoader(to_map_style_dataset([(1, "a"), (2, "b")]), batch_size=2)
    labels, texts = next(iter(loader))
    assert labels.tolist() == [1, 2] and list(texts) == ["a", "b"]


# -- transforms ------------------------------------------------------------------------------

def test_sentencepiece_tokenizer_transform(sp_model_path):
    ref = spm.SentencePieceProcessor(model_file=str(sp_model_path))
    transform = transforms.SentencePieceTokenizer(str(sp_model_path))
    text = "Hello World!, how are you?"
    assert transform([text]) == [ref.encode(text, out_type=str)]
    assert transform(text) == ref.encode(text, out_type=str)
    with pytest.raises(TypeError, match="Input type not supported"):
        transform([[text]])


def test_vocab_transform():
    transform = transforms.VocabTransform(vocab(OrderedDict([("a", 1), ("b", 1), ("c", 1)])))
    assert transform([["a", "b", "c"]]) == [[0, 1, 2]]
    assert transform([["a", "b"], ["a", "b", "c"]]) == [[0, 1], [0, 1, 2]]
    assert transform(["a", "b", "c"]) == [0, 1, 2]
    with pytest.raises(TypeError, match="Input type not supported"):
        transform("abc")
    with pytest.raises(AssertionError):
        transforms.VocabTransform({"a": 0})


def test_to_tensor():
    transform = transforms.ToTensor(padding_value=0)
    out = transform([[1, 2], [1, 2, 3]])
    assert out.dtype == ember.long
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 0], [1, 2, 3]])
    out = transform([1, 2])
    assert out.dtype == ember.long and out.tolist() == [1, 2]
    assert transforms.ToTensor()([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert transforms.ToTensor(padding_value=-1, dtype=ember.int32)([[1], [2, 3]]).dtype == \
        ember.int32
    with pytest.raises(ValueError):
        transforms.ToTensor()([[1, 2], [1, 2, 3]])  # ragged without a padding value
    with pytest.raises(TypeError, match="Input type not supported"):
        transform(["a"])


def test_label_to_index(tmp_path):
    label_names = ["test", "label", "indices"]
    transform = transforms.LabelToIndex(label_names=label_names)
    assert transform(label_names) == [0, 1, 2]
    with pytest.raises(RuntimeError):
        transform(["OOV"])
    transform = transforms.LabelToIndex(label_names=label_names, sort_names=True)
    assert transform(label_names) == [2, 1, 0]
    assert transform("indices") == 0
    assert transform.label_names == ["indices", "label", "test"]
    path = tmp_path / "label_names.txt"
    path.write_text("test\nlabel\n\nindices\n")
    assert transforms.LabelToIndex(label_path=str(path))(label_names) == [0, 1, 2]
    with pytest.raises(AssertionError, match="mutually exclusive"):
        transforms.LabelToIndex(label_names=label_names, label_path=str(path))


def test_truncate():
    transform = transforms.Truncate(max_seq_len=2)
    assert transform([[1, 2], [1, 2, 3]]) == [[1, 2], [1, 2]]
    assert transform([1, 2, 3]) == [1, 2]
    assert transform([["a", "b"], ["a", "b", "c"]]) == [["a", "b"], ["a", "b"]]
    assert transform(["a", "b", "c"]) == ["a", "b"]
    with pytest.raises(TypeError, match="Input type not supported"):
        transform((1, 2, 3))


def test_add_token():
    input = [[1, 2], [1, 2, 3]]
    assert transforms.AddToken(0, begin=True)(input) == [[0, 1, 2], [0, 1, 2, 3]]
    assert transforms.AddToken(0, begin=False)(input) == [[1, 2, 0], [1, 2, 3, 0]]
    assert transforms.AddToken(0, begin=False)([1, 2]) == [1, 2, 0]
    input = [["1", "2"], ["1", "2", "3"]]
    assert transforms.AddToken("0", begin=True)(input) == [["0", "1", "2"], ["0", "1", "2", "3"]]
    assert transforms.AddToken("0", begin=False)(input) == [["1", "2", "0"],
                                                           ["1", "2", "3", "0"]]
    assert transforms.AddToken("0", begin=False)(["1", "2"]) == ["1", "2", "0"]
    with pytest.raises(TypeError, match="Input type not supported"):
        transforms.AddToken(0)(["1", "2"])  # an int token into str tokens


def test_pad_transform():
    input_1d, input_2d = ember.ones(5), ember.ones((8, 5))
    pad_long = transforms.PadTransform(max_length=7, pad_value=0)
    np.testing.assert_array_equal(pad_long(input_1d).numpy(), [1] * 5 + [0] * 2)
    np.testing.assert_array_equal(pad_long(input_2d).numpy(),
                                  np.concatenate([np.ones((8, 5)), np.zeros((8, 2))], axis=-1))
    pad_short = transforms.PadTransform(max_length=3, pad_value=0)
    assert pad_short(input_1d) is input_1d and pad_short(input_2d) is input_2d
    ids = ember.tensor([[5, 6]])
    assert transforms.PadTransform(4, pad_value=9)(ids).tolist() == [[5, 6, 9, 9]]


def test_str_to_int_transform():
    str_to_int = transforms.StrToIntTransform()
    assert str_to_int(["1", "2", "3", "4", "5"]) == [1, 2, 3, 4, 5]
    assert str_to_int([["1", "2", "3"], ["4", "5", "6"]]) == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(TypeError, match="Input type not supported"):
        str_to_int([1, 2])


def test_sequential():
    transform = transforms.Sequential(transforms.Truncate(max_seq_len=3),
                                      transforms.ToTensor(padding_value=0, dtype=ember.long))
    assert isinstance(transform, nn.Sequential)
    assert transform([[1, 2, 3], [1, 2, 3]]).tolist() == [[1, 2, 3], [1, 2, 3]]
    assert transform([[1, 2, 3, 4], [5]]).tolist() == [[1, 2, 3], [5, 0, 0]]


def test_text_classification_pipeline(sp_model_path):
    """torchtext's SST-2 tutorial pipeline: pieces -> ids -> truncate -> BOS/EOS -> tensor."""
    ref = spm.SentencePieceProcessor(model_file=str(sp_model_path))
    tokenizer = transforms.SentencePieceTokenizer(str(sp_model_path))
    v = Vocab(ref.id_to_piece(i) for i in range(ref.get_piece_size()))
    pipeline = transforms.Sequential(
        tokenizer, transforms.VocabTransform(v), transforms.Truncate(6),
        transforms.AddToken(token=ref.bos_id(), begin=True),
        transforms.AddToken(token=ref.eos_id(), begin=False),
        transforms.ToTensor(padding_value=0))
    texts = ["a first sentence to encode", "short"]
    out = pipeline(texts)
    ids = [[ref.bos_id()] + row[:6] + [ref.eos_id()] for row in ref.encode(texts)]
    longest = max(map(len, ids))
    assert out.tolist() == [row + [0] * (longest - len(row)) for row in ids]
