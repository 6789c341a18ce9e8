"""An LSTM language model, as PyTorch's ``word_language_model`` example builds it.

``LSTMLanguageModel`` is the example's ``RNNModel("LSTM", ntoken, ninp, nhid, nlayers,
dropout, tie_weights)``: the same submodules (``encoder``, ``rnn``, ``decoder``, ``drop``),
so the same ``state_dict`` keys, the same initialisation and the same ``forward`` (log
probabilities of the next token, flattened to ``(seq * batch, ntoken)``, for ``NLLLoss``),
so the example's training loop runs on it unchanged.
"""

from __future__ import annotations

import ember.nn.functional as F
from ember import Tensor, nn

__all__ = ["LSTMLanguageModel", "lstm_lm"]

Hidden = tuple[Tensor, Tensor]


class LSTMLanguageModel(nn.Module):
    """Embedding, a multi-layer ``nn.LSTM``, a linear decoder to the vocabulary.

    ``ntoken`` words, ``ninp``-dimensional embeddings, ``nhid`` hidden units in each of
    ``nlayers`` layers, ``dropout`` on the embeddings, between the LSTM layers and on its
    output. ``tie_weights`` shares the decoder's weight with the embedding (Press & Wolf,
    2017; Inan et al., 2017), which needs ``nhid == ninp``.

    ``forward(input, hidden)`` takes token ids ``(seq, batch)`` (``(batch, seq)`` with
    ``batch_first``) and the state from :meth:`init_hidden` or the previous call, and
    returns the log probabilities ``(seq * batch, ntoken)`` (rows in the input's order) and
    the new state.
    """

    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int,
                 dropout: float = 0.5, tie_weights: bool = False,
                 batch_first: bool = False) -> None:
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=batch_first)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = "LSTM"
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self) -> None:
        """Embedding and decoder weights uniform in [-0.1, 0.1], decoder bias zero (the
        LSTM keeps its own initialisation)."""
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> Hidden:
        """Zero ``(h, c)`` states, each ``(nlayers, bsz, nhid)``, on the model's device and
        in its dtype."""
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def lstm_lm(*, vocab_size: int = 8000, ninp: int = 200, nhid: int = 200, nlayers: int = 2,
            dropout: float = 0.2, tie_weights: bool = True,
            batch_first: bool = False) -> LSTMLanguageModel:
    """A 2-layer LSTM language model with tied 200-dimensional embeddings (the small
    configuration of PyTorch's word_language_model example), randomly initialised: no
    pretrained weights. Pass ``vocab_size`` (the class's ``ntoken``, 8000 by default) to
    match your vocabulary; the other :class:`LSTMLanguageModel` arguments are keyword
    arguments."""
    return LSTMLanguageModel(vocab_size, ninp, nhid, nlayers, dropout=dropout,
                             tie_weights=tie_weights, batch_first=batch_first)
