"""The task models of Cellscope (core/model/tasks/*.cpp) in plain PyTorch, built from a run's resolved config.

Every model.* option a run can have is either implemented here or refused: check_model_options() raises
NotImplementedError naming the option, so a loaded model is never silently a different one.

Every model here compiles with `torch.jit.script` (SCRIPTING_NOTES.md): options resolved in __init__, optional
submodules None, the layers iterated as the module's own children (Cellscope's names layer0, fwd0, bwd0, ...).
"""
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from .cells import ANY, BOOL, CELL_FAMILIES, FAMILIES, MCRNN, Cell, Final, GateCell, family, need, register_family  # noqa: F401 (re-exported)
from .script_cell import ScriptCell

# ---------------------------------------------------------------- options
# What this package implements. The values of the options, their defaults and the cells' families are not restated
# here: they come from the export (config.json: the run's resolved model section; export.json's "schema": the
# defaults, choices and families of Cellscope's registries, README.md "export.json's schema").
# Per Cellscope cell family (cells/registry.h): option -> the values implemented (ANY = every value), from each
# family's registration (cells.FAMILIES; mcrnn and script below). Train-only options (candidate_dropout, dropout)
# are applied in train mode as Cellscope does and are no-ops in eval mode.
register_family("mcrnn", ("mcrnn",),
                {"layer_norm": BOOL, "candidate_dropout": ANY, "block": ANY, "attention": ANY,
                 "lstm_memory": ("prev", "average"), "dist_scale": ANY, "state_clamp": ("auto", "off", "on"),
                 "base": ("rnn", "gru", "lstm", "gru_dt", "sat_mzu", "gcn_mzu", "cap_mzu")},
                {"layer_norm": False, "candidate_dropout": 0.0, "block": 3, "attention": 0, "lstm_memory": "prev",
                 "dist_scale": 0.1, "base": "lstm", "state_clamp": "auto"},
                lambda m, I: _mcrnn(m, I))
# the TorchScript file and the SHA-256 the run recorded (exported.load points model.script at the export's copy);
# torch.jit.load of the file once per layer / direction, as Cellscope does
register_family("script", ("script",), {"script": ANY, "script_sha256": ANY}, {},
                lambda m, I: ScriptCell(m["script"], I, m["hidden"], m.get("script_sha256") or ""))
CELL_OPTIONS = {f: d["options"] for f, d in FAMILIES.items()}
COMMON = {"cell": ANY, "embed": ANY, "hidden": ANY, "layers": ANY, "dropout": ANY}
CELLS = tuple(CELL_FAMILIES)
BASE_KEY = "_base_model"  # in a model section handed to the models: an MC-RNN base's resolved section

# The defaults of a model section that did not come from an export: the bench's Python peers
# (core/run/bench/peers/peers.py) build a CharLM from a bare section, and an MC-RNN base built from a section
# without BASE_KEY takes its own options from here, as Cellscope's mcrnn_base_model takes them from the base's
# option table. Never used for an export: load() hands the models the run's resolved section, checked complete
# against export.json's schema first. tests/core/test_export_registry.cpp requires every value here to be
# Cellscope's default of that cell (the schema's, walked over the cell registry).
BARE_DEFAULTS = dict({"common": {"layers": 1, "dropout": 0.0}}, **{f: d["defaults"] for f, d in FAMILIES.items()})


def with_defaults(m, schema=None):
    """The model section m with every option it lacks filled in: from export.json's `schema` (its "options":
    Cellscope's defaults for the run's cell and task) when given, else from BARE_DEFAULTS (a section that is not an
    export's). A copy; the keys m has are kept."""
    out = dict(m)
    if schema is not None:
        for k, o in schema.get("options", {}).items():
            if k not in out and o.get("default") is not None:
                out[k] = o["default"]
        return out
    fill = dict(BARE_DEFAULTS["common"])
    fill.update(BARE_DEFAULTS[family(m["cell"])])
    for k, v in fill.items():
        out.setdefault(k, v)
    return out


def base_model(m):
    """The resolved section an MC-RNN's base cell is built from, as Cellscope's mcrnn_base_model (cells/mcrnn.h)
    makes it: m with model.base as the cell, and the base's own options (which m lacks) at their defaults: from
    m[BASE_KEY] (load() puts export.json's schema.base.model there), else from BARE_DEFAULTS, a gcn_mzu base's
    gcn_degree signed_clamped. m's own keys win, so a layer resized by its task (word_lm's tie_weights) keeps its
    size."""
    bm = {k: v for k, v in m.items() if k != BASE_KEY}
    bm["cell"] = need(m, "base")
    if BASE_KEY in m:
        for k, v in m[BASE_KEY].items():
            bm.setdefault(k, v)
        return bm
    if bm["cell"] == "gcn_mzu":
        bm.setdefault("gcn_degree", "signed_clamped")
    return with_defaults(bm)


def check_model_options(m, task):
    """NotImplementedError naming the first model option (or value, task, cell) this package does not build."""
    if task not in TASK_OPTIONS:
        raise NotImplementedError("cellscope_torch: task '%s' is not implemented (implemented: %s)"
                                  % (task, ", ".join(sorted(TASK_OPTIONS))))
    cell = m.get("cell")
    allowed = dict(COMMON)
    allowed.update(CELL_OPTIONS[family(cell)])
    allowed.update(TASK_OPTIONS[task])
    for k, v in m.items():
        if k == BASE_KEY:
            continue
        if k not in allowed:
            raise NotImplementedError("cellscope_torch: model.%s (= %r) is not implemented for cell '%s', task '%s'"
                                      % (k, v, cell, task))
        if allowed[k] is not ANY and v not in allowed[k]:
            raise NotImplementedError("cellscope_torch: model.%s = %r is not implemented (only %r)"
                                      % (k, v, list(allowed[k])))
    if cell == "mcrnn":  # the base's own options at their values
        bm = base_model(m)
        check_model_options({k: v for k, v in bm.items() if k in COMMON or k in CELL_OPTIONS[family(bm["cell"])]},
                            task)


def build_cell(m, I):
    """The cell of the resolved model section `m` with input size I (one layer), Cellscope's parameter names."""
    return FAMILIES[family(m["cell"])]["build"](m, I)


def _mcrnn(m, I):
    bm = base_model(m)
    if bm["cell"] not in CELL_OPTIONS["mcrnn"]["base"]:
        raise NotImplementedError("cellscope_torch: model.base = %r is not implemented for mcrnn" % bm["cell"])
    return MCRNN(m, I, build_cell(bm, I))


State = List[List[Tensor]]  # per layer, the cell's state tensors


class CellStack(nn.Module):
    """model.layers cells, dropout between them in training (cells/stack.cpp)."""

    n: Final[int]
    dropout: Final[float]

    def __init__(self, m, I):
        super().__init__()
        self.n = int(need(m, "layers"))
        self.dropout = float(need(m, "dropout"))
        for l in range(self.n):
            c = build_cell(m, I)
            setattr(self, "layer%d" % l, c)
            I = c.hidden_size
        self.output_size = I

    def layers(self):
        return [getattr(self, "layer%d" % l) for l in range(self.n)]

    def initial_state(self, B: int, like: Tensor) -> State:
        return [c.initial_state(B, like) for c in self.layers()]

    def forward(self, x: Tensor, state: Optional[State] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, State]:
        h, new = x, torch.jit.annotate(State, [])
        l = 0
        for c in self.children():  # layer0, layer1, ... (TorchScript unrolls the loop)
            if l > 0 and self.dropout > 0:
                h = F.dropout(h, self.dropout, self.training)
            s: Optional[List[Tensor]] = None
            if state is not None:
                s = state[l]
            h, s = c(h, s, extra)
            new.append(s)
            l += 1
        return h, new


class CharLM(nn.Module):
    """char_lm (tasks/char_lm.cpp): embedding -> cell stack -> linear; dropout on the embedding and the stack's
    output in training. forward(x [T, B] ids, state=None, extra=None) -> (logits [T, B, V], state)."""

    dropout: Final[float]

    def __init__(self, m, vocab):
        super().__init__()
        m = with_defaults(m)  # a bare section (the bench peers'); an export's is complete (load())
        E = m["embed"]
        self.dropout = float(need(m, "dropout"))
        self.embed = nn.Embedding(vocab, E)
        self.stack = CellStack(m, E)
        self.out = nn.Linear(self.stack.output_size, vocab)

    def initial_state(self, B: int, like: Tensor) -> State:
        return self.stack.initial_state(B, like)

    def forward(self, x: Tensor, state: Optional[State] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, State]:
        e = self.embed(x)
        if self.dropout > 0:
            e = F.dropout(e, self.dropout, self.training)
        h, state2 = self.stack(e, state, extra)
        if self.dropout > 0:
            h = F.dropout(h, self.dropout, self.training)
        return self.out(h), state2

    @torch.jit.export
    def forward_with_extra(self, x: Tensor, state: Optional[State] = None) -> Tuple[Tensor, State, List[Tensor]]:
        """forward() and the training terms it adds (the MZU's zone disagreement, eq. 19) as a list: a scripted
        model copies a Python list passed as `extra`, so a caller of the scripted model reads them here."""
        extra = torch.jit.annotate(List[Tensor], [])
        logits, state2 = self.forward(x, state, extra)
        return logits, state2, extra


class WordLM(nn.Module):
    """word_lm (tasks/word_lm.cpp, AWD-LSTM pieces): embedding (dropoute: whole word types, training), locked
    dropout on the input (dropouti), between layers (dropouth) and on the output (dropout), weight drop on every
    rnn/gru/lstm w_hh (training), output tied to the embedding (tie_weights: the last layer has size embed)."""

    dropout: Final[float]
    dropouth: Final[float]
    dropouti: Final[float]
    dropoute: Final[float]
    tied: Final[bool]
    n: Final[int]

    def __init__(self, m, vocab):
        super().__init__()
        E, n = m["embed"], int(need(m, "layers"))
        self.dropout = float(need(m, "dropout"))
        self.dropouth = float(m["dropouth"] if m.get("dropouth") is not None else self.dropout)
        self.dropouti = float(m["dropouti"] if m.get("dropouti") is not None else self.dropout)
        self.dropoute = float(need(m, "dropoute"))
        self.tied = bool(need(m, "tie_weights"))
        self.n = n
        self.embed = nn.Embedding(vocab, E)
        I = E
        for l in range(n):
            ml = dict(m)
            if self.tied and l == n - 1:
                ml["hidden"] = E
            c = build_cell(ml, I)
            setattr(self, "layer%d" % l, c)
            I = c.hidden_size
        self.register_parameter("out_w", None)  # tied: the embedding's
        if not self.tied:
            self.out_w = nn.Parameter(torch.empty(vocab, I).uniform_(-I ** -0.5, I ** -0.5))
        self.out_b = nn.Parameter(torch.zeros(vocab))
        wd = float(need(m, "weight_drop"))
        for mod in self.modules():
            if isinstance(mod, GateCell):
                mod.weight_drop = wd

    def layers(self):
        return [getattr(self, "layer%d" % l) for l in range(self.n)]

    def initial_state(self, B: int, like: Tensor) -> State:
        return [c.initial_state(B, like) for c in self.layers()]

    def locked_dropout(self, x: Tensor, p: float) -> Tensor:
        if not self.training or p <= 0:
            return x
        return x * (x.new_empty([1, x.shape[1], x.shape[2]]).bernoulli_(1 - p) / (1 - p))

    def forward(self, x: Tensor, state: Optional[State] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, State]:
        w = self.embed.weight
        if self.training and self.dropoute > 0:
            w = w * (w.new_empty([w.shape[0], 1]).bernoulli_(1 - self.dropoute) / (1 - self.dropoute))
        # each cell draws its weight-drop mask once per forward (Cell.recurrent_weight)
        h = self.locked_dropout(F.embedding(x, w), self.dropouti)
        new = torch.jit.annotate(State, [])
        l = 0
        for c in self.children():  # embed, layer0, layer1, ...
            if hasattr(c, "hidden_size"):  # a cell, not the embedding (decided when compiling)
                if l > 0:
                    h = self.locked_dropout(h, self.dropouth)
                s: Optional[List[Tensor]] = None
                if state is not None:
                    s = state[l]
                h, s = c(h, s, extra)
                new.append(s)
                l += 1
        h = self.locked_dropout(h, self.dropout)
        out_w = self.out_w
        if out_w is not None:
            return F.linear(h, out_w, self.out_b), new
        return F.linear(h, self.embed.weight, self.out_b), new

    @torch.jit.export
    def forward_with_extra(self, x: Tensor, state: Optional[State] = None) -> Tuple[Tensor, State, List[Tensor]]:
        """forward() and its training terms as a list (CharLM.forward_with_extra)."""
        extra = torch.jit.annotate(List[Tensor], [])
        logits, state2 = self.forward(x, state, extra)
        return logits, state2, extra


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """x [T, B, ...]: each column's first lengths[b] steps reversed, the padding left in place."""
    T, B = x.shape[0], x.shape[1]
    t = torch.arange(T, device=x.device).unsqueeze(1)
    ln = lengths.unsqueeze(0)
    src = torch.where(t < ln, ln - 1 - t, t)
    flat = (src * B + torch.arange(B, device=x.device).unsqueeze(0)).reshape(-1)
    return x.reshape(T * B, -1).index_select(0, flat).view(x.shape)


class Bidirectional(nn.Module):
    """The sentence encoder (cells/bidirectional.cpp): per layer a forward and a backward cell over the padded
    batch (inputs zeroed past each sentence's end, the backward cell reads each sentence reversed), outputs
    concatenated; `final` = the forward output at the last real token and the backward output at t = 0."""

    n: Final[int]
    dropout: Final[float]

    def __init__(self, m, I):
        super().__init__()
        self.n, self.dropout = int(need(m, "layers")), float(need(m, "dropout"))
        for l in range(self.n):  # registered fwd0, bwd0, fwd1, bwd1, ...: forward walks them in this order
            f, b = build_cell(m, I), build_cell(m, I)
            setattr(self, "fwd%d" % l, f)
            setattr(self, "bwd%d" % l, b)
            I = 2 * f.hidden_size
        self.output_size = I

    def forward(self, x: Tensor, lengths: Tensor, extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, Tensor]:
        T, B = x.shape[0], x.shape[1]
        mask = (torch.arange(T, device=x.device).unsqueeze(1) < lengths.unsqueeze(0)).to(x.dtype).unsqueeze(2)
        h = x
        of = x  # the layer's forward output, set by fwd<l> before bwd<l> reads it
        l = 0
        for name, c in self.named_children():
            if name.startswith("fwd"):
                if l > 0 and self.dropout > 0:
                    h = F.dropout(h, self.dropout, self.training)
                h = h * mask
                of = c(h, None, extra)[0]
            else:
                ob = c(reverse_padded(h, lengths), None, extra)[0]
                h = torch.cat([of, reverse_padded(ob, lengths)], 2) * mask
                l += 1
        H = h.shape[2] // 2
        last = (lengths - 1).clamp_min(0).view(1, B, 1).expand(1, B, H)
        return h, torch.cat([h[:, :, :H].gather(0, last).squeeze(0), h[0, :, H:]], 1)


class SentenceModel(nn.Module):
    """classify and absa (tasks/classify.cpp): embedding (dropout in training) -> bidirectional encoder ->
    classify: the final states of both directions; absa: the mean of the output states concatenated with the
    mean embedding of the aspect's words -> optional fc + activation (+ dropout) -> out (1 logit for a binary
    classifier, else one per class). forward(x [T, B], lengths [B], aspect [A, B], aspect_len [B]) -> logits."""

    absa: Final[bool]
    dropout: Final[float]
    fc_activation: Final[str]
    has_fc: Final[bool]

    def __init__(self, m, vocab, classes, absa):
        super().__init__()
        E = m["embed"]
        self.absa, self.dropout = bool(absa), float(need(m, "dropout"))
        self.fc_activation = need(m, "fc_activation")
        self.embed = nn.Embedding(vocab, E, padding_idx=1)
        self.encoder = Bidirectional(m, E)
        feat = self.encoder.output_size + (E if absa else 0)
        self.has_fc = need(m, "fc") > 0
        self.fc = None  # model.fc = 0: no hidden layer
        if self.has_fc:
            self.fc = nn.Linear(feat, m["fc"])
            feat = m["fc"]
        self.out = nn.Linear(feat, classes)

    def drop(self, t: Tensor) -> Tensor:
        return F.dropout(t, self.dropout, self.training) if self.dropout > 0 else t

    def forward(self, x: Tensor, lengths: Tensor, aspect: Optional[Tensor] = None,
                aspect_len: Optional[Tensor] = None, extra: Optional[List[Tensor]] = None) -> Tensor:
        e = self.drop(self.embed(x))
        out, final = self.encoder(e, lengths, extra)
        if self.absa:
            assert aspect is not None and aspect_len is not None, "absa: the aspect and its length are needed"
            sent = out.sum(0) / lengths.to(out.dtype).unsqueeze(1)
            a = self.embed(aspect).sum(0) / aspect_len.to(out.dtype).unsqueeze(1)
            feat = torch.cat([sent, a], 1)
        else:
            feat = final
        if self.fc is not None:
            feat = self.fc(feat)
            if self.fc_activation == "relu":
                feat = torch.relu(feat)
            elif self.fc_activation == "tanh":
                feat = torch.tanh(feat)
            feat = self.drop(feat)
        elif self.absa:
            feat = self.drop(feat)
        return self.out(feat)

    @torch.jit.export
    def forward_with_extra(self, x: Tensor, lengths: Tensor, aspect: Optional[Tensor] = None,
                           aspect_len: Optional[Tensor] = None) -> Tuple[Tensor, List[Tensor]]:
        """forward() and its training terms as a list (CharLM.forward_with_extra)."""
        extra = torch.jit.annotate(List[Tensor], [])
        return self.forward(x, lengths, aspect, aspect_len, extra), extra


class ClozeReader(nn.Module):
    """cloze (tasks/cloze.cpp): the AoA Reader (Cui et al. 2017) over any cell; model.reader = m_aoa is the CRU
    paper's Modified AoA Reader (eq. 16: the document's embedding concatenated with its word-frequency and
    co-occurrence-in-query features). forward(doc [Td, B], doc_len, query [Tq, B], query_len, features [Td, B, 2],
    cand_mask [B, C, Td]) -> P(candidate | D, Q) [B, C] (sum attention, eq. 11)."""

    modified: Final[bool]
    dropout: Final[float]

    def __init__(self, m, vocab):
        super().__init__()
        E = m["embed"]
        self.modified = need(m, "reader") == "m_aoa"
        self.dropout = float(need(m, "dropout"))
        self.embed = nn.Embedding(vocab, E, padding_idx=1)
        self.doc_encoder = Bidirectional(m, E + (2 if self.modified else 0))
        self.query_encoder = Bidirectional(m, E)

    def drop(self, t: Tensor) -> Tensor:
        return F.dropout(t, self.dropout, self.training) if self.dropout > 0 else t

    def forward(self, doc: Tensor, doc_len: Tensor, query: Tensor, query_len: Tensor,
                features: Optional[Tensor] = None, cand_mask: Optional[Tensor] = None,
                extra: Optional[List[Tensor]] = None) -> Tensor:
        ed, eq = self.drop(self.embed(doc)), self.drop(self.embed(query))
        if self.modified:
            assert features is not None, "m_aoa: the document features are needed"
            ed = torch.cat([ed, features.to(ed.dtype)], 2)
        assert cand_mask is not None, "cloze: the candidates' mask is needed"
        hd = self.doc_encoder(ed, doc_len, extra)[0].transpose(0, 1)  # [B, Td, 2H]
        hq = self.query_encoder(eq, query_len, extra)[0].transpose(0, 1)  # [B, Tq, 2H]
        Td, Tq = hd.shape[1], hq.shape[1]
        dmask = torch.arange(Td, device=doc.device).unsqueeze(0) < doc_len.unsqueeze(1)
        qmask = torch.arange(Tq, device=doc.device).unsqueeze(0) < query_len.unsqueeze(1)
        M = torch.bmm(hd, hq.transpose(1, 2))  # eq. 5
        alpha = torch.softmax(M.masked_fill(~dmask.unsqueeze(2), float("-inf")), 1)  # eq. 6
        beta_t = torch.softmax(M.masked_fill(~qmask.unsqueeze(1), float("-inf")), 2)  # eq. 8
        beta = (beta_t * dmask.to(hd.dtype).unsqueeze(2)).sum(1) / doc_len.to(hd.dtype).unsqueeze(1)  # eq. 9
        s = torch.bmm(alpha, beta.unsqueeze(2)).squeeze(2)  # eq. 10
        return torch.bmm(cand_mask.to(s.dtype), s.unsqueeze(2)).squeeze(2)  # eq. 11

    @torch.jit.export
    def forward_with_extra(self, doc: Tensor, doc_len: Tensor, query: Tensor, query_len: Tensor,
                           features: Optional[Tensor] = None,
                           cand_mask: Optional[Tensor] = None) -> Tuple[Tensor, List[Tensor]]:
        """forward() and its training terms as a list (CharLM.forward_with_extra)."""
        extra = torch.jit.annotate(List[Tensor], [])
        return self.forward(doc, doc_len, query, query_len, features, cand_mask, extra), extra


def pointer_generator(logits: Tensor, p_gen: Tensor, at: Tensor, src: Tensor) -> Tensor:
    """model.copy (See et al. 2017, eqs. 8-9): P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{j: src_j = w} a_j, as log P
    clamped at 1e-12. logits [T, B, V], p_gen [T, B, 1], attention at [T, B, S], src [B, S]."""
    T, B, S = at.shape[0], at.shape[1], at.shape[2]
    p_copy = torch.zeros_like(logits).scatter_add(2, src.unsqueeze(0).expand(T, B, S), at)
    return (p_gen * torch.softmax(logits, -1) + (1 - p_gen) * p_copy).clamp_min(1e-12).log()


class Seq2SeqBase(nn.Module):
    """What Seq2Seq and RNNSearch share: dropout, model.copy, the two embeddings and the (forward) encoder stack,
    forward() = decode(encode(source)), and forward_with_extra()."""

    def __init__(self, m, source_vocab, target_vocab, pad):
        super().__init__()
        E = m["embed"]
        self.dropout, self.copy = float(need(m, "dropout")), bool(need(m, "copy"))
        self.src_embed = nn.Embedding(source_vocab, E, padding_idx=pad)
        self.tgt_embed = nn.Embedding(target_vocab, E, padding_idx=pad)
        self.encoder = CellStack(m, E)

    def forward(self, src: Tensor, src_len: Tensor, y_in: Tensor, state: Optional[State] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, State]:
        return self.decode(y_in, self.encode(src, src_len, extra), state, extra)

    @torch.jit.export
    def forward_with_extra(self, src: Tensor, src_len: Tensor, y_in: Tensor,
                           state: Optional[State] = None) -> Tuple[Tensor, State, List[Tensor]]:
        """forward() and its training terms as a list (CharLM.forward_with_extra)."""
        extra = torch.jit.annotate(List[Tensor], [])
        logits, state2 = self.forward(src, src_len, y_in, state, extra)
        return logits, state2, extra


class Seq2Seq(Seq2SeqBase):
    """seq2seq (tasks/seq2seq_model.cpp): an encoder stack over the source, a decoder stack over the target input
    (teacher forcing), Luong's general attention h~ = tanh(W_c [c; h]) with scores (W_a h) . memory over the real
    source positions, a linear output; model.copy: the pointer-generator mixture (See et al. 2017, eqs. 8-9),
    returned as log P clamped at 1e-12. forward(src [S, B], src_len [B], y_in [T, B], state=None) ->
    (logits [T, B, V], decoder state)."""

    dropout: Final[float]
    copy: Final[bool]

    def __init__(self, m, source_vocab, target_vocab, pad=1):
        super().__init__(m, source_vocab, target_vocab, pad)
        E = m["embed"]
        self.decoder = CellStack(m, E)
        He, Hd = self.encoder.output_size, self.decoder.output_size
        self.attn_w = nn.Linear(Hd, He, bias=False)
        self.combine = nn.Linear(He + Hd, Hd, bias=False)
        self.out = nn.Linear(Hd, target_vocab)
        self.copy_gate = nn.Linear(He + Hd + E, 1) if self.copy else None

    @torch.jit.export
    def encode(self, src: Tensor, src_len: Tensor,
               extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, Tensor, Tensor]:
        x = F.dropout(self.src_embed(src), self.dropout, self.training)
        h, _ = self.encoder(x, None, extra)
        mask = torch.arange(src.shape[0], device=src.device).unsqueeze(0) < src_len.unsqueeze(1)
        return h.transpose(0, 1), mask, src.transpose(0, 1)  # memory [B, S, H], mask [B, S], src [B, S]

    @torch.jit.export
    def decode(self, y_in: Tensor, enc: Tuple[Tensor, Tensor, Tensor], state: Optional[State] = None,
               extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, State]:
        memory, mask, src = enc
        x = F.dropout(self.tgt_embed(y_in), self.dropout, self.training)
        h, state2 = self.decoder(x, state, extra)
        scores = torch.bmm(self.attn_w(h).transpose(0, 1), memory.transpose(1, 2))  # [B, T, S]
        a = torch.softmax(scores.masked_fill(~mask.unsqueeze(1), float("-inf")), -1)
        c = torch.bmm(a, memory).transpose(0, 1)  # [T, B, He]
        ht = F.dropout(torch.tanh(self.combine(torch.cat([c, h], -1))), self.dropout, self.training)
        logits = self.out(ht)
        if self.copy_gate is not None:  # model.copy
            p_gen = torch.sigmoid(self.copy_gate(torch.cat([c, h, x], -1)))  # [T, B, 1]
            return pointer_generator(logits, p_gen, a.transpose(0, 1), src), state2
        return logits, state2



class RNNSearch(Seq2SeqBase):
    """seq2seq with model.architecture = rnnsearch (tasks/seq2seq_model.cpp; Bahdanau et al. 2015): a forward and
    a backward CellStack over the source (the backward one over each source reversed within its length),
    annotations h_j = [->h_j; <-h_j] (0 at the padding); s_0^l = tanh(W_s^l <-h_1 + b_s^l) in each decoder layer's
    output state (state[l][0]; with model.bridge = recurrence also an MC-RNN's channel history, state[l][2]); per step e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j) over the real positions,
    c_i = sum_j a_ij h_j, s_i = decoder([E y_{i-1}; c_i], s_{i-1}), t_i = maxout_2(W_t [s_i; E y_{i-1}; c_i] + b_t),
    logits = W_o t_i + b_o; model.copy as Seq2Seq. forward(src [S, B], src_len [B], y_in [T, B], state=None) ->
    (logits [T, B, V], decoder state); state None = the bridge from the source."""

    dropout: Final[float]
    copy: Final[bool]
    n: Final[int]
    hd: Final[int]
    recurrence: Final[bool]

    def __init__(self, m, source_vocab, target_vocab, pad=1):
        super().__init__(m, source_vocab, target_vocab, pad)
        E = m["embed"]
        # model.bridge = recurrence (an export without the key was written before it: output): s_0 also in every
        # state the decoder cell's recurrence reads as its past (Cell.with_previous_output: an MC-RNN's channel
        # history, a HO-RNN's N preceding states, an HM-RNN's levels)
        self.recurrence = m.get("bridge", "output") == "recurrence"
        self.encoder_bwd = CellStack(m, E)
        He = self.encoder.output_size + self.encoder_bwd.output_size
        self.decoder = CellStack(m, E + He)
        Hd = self.decoder.output_size
        self.n, self.hd = self.decoder.n, Hd
        self.attn_w = nn.Linear(Hd, Hd, bias=False)
        self.attn_u = nn.Linear(He, Hd, bias=False)
        self.attn_v = nn.Linear(Hd, 1, bias=False)
        self.bridge = nn.Linear(self.encoder_bwd.output_size, self.n * Hd)
        self.combine = nn.Linear(Hd + E + He, 2 * Hd)
        self.out = nn.Linear(Hd, target_vocab)
        self.copy_gate = nn.Linear(He + Hd + E, 1) if self.copy else None

    @torch.jit.export
    def encode(self, src: Tensor, src_len: Tensor,
               extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """(memory [B, S, 2H], mask [B, S], src [B, S], U_a h_j [B, S, A], <-h_1 [B, H])."""
        x = F.dropout(self.src_embed(src), self.dropout, self.training)
        hf, _ = self.encoder(x, None, extra)
        hb, _ = self.encoder_bwd(reverse_padded(x, src_len), None, extra)
        hb = reverse_padded(hb, src_len)
        mask = torch.arange(src.shape[0], device=src.device).unsqueeze(0) < src_len.unsqueeze(1)
        memory = (torch.cat([hf, hb], 2) * mask.t().unsqueeze(2).to(hf.dtype)).transpose(0, 1)
        return memory, mask, src.transpose(0, 1), self.attn_u(memory), hb[0]

    @torch.jit.export
    def initial_state(self, enc: Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]) -> State:
        memory, first_backward = enc[0], enc[4]
        s0 = torch.tanh(self.bridge(first_backward))
        st = torch.jit.annotate(State, [])
        l = 0
        for c in self.decoder.children():  # layer0, layer1, ... (unrolled; CellStack.layers() is not scriptable)
            s = c.initial_state(memory.shape[0], memory)
            st.append(c.with_previous_output(s, s0.narrow(1, l * self.hd, self.hd), self.recurrence))
            l += 1
        return st

    @torch.jit.export
    def decode(self, y_in: Tensor, enc: Tuple[Tensor, Tensor, Tensor, Tensor, Tensor], state: Optional[State] = None,
               extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, State]:
        memory, mask, src, keys = enc[0], enc[1], enc[2], enc[3]
        st = self.initial_state(enc) if state is None else state
        x = F.dropout(self.tgt_embed(y_in), self.dropout, self.training)
        ss, cs, als = torch.jit.annotate(List[Tensor], []), torch.jit.annotate(List[Tensor], []), \
            torch.jit.annotate(List[Tensor], [])
        for xi in x.unbind(0):
            s_prev = st[-1][0]  # s_{i-1}: the top layer's output
            e = self.attn_v(torch.tanh(self.attn_w(s_prev).unsqueeze(1) + keys)).squeeze(2)  # [B, S]
            a = torch.softmax(e.masked_fill(~mask, float("-inf")), -1)
            c = torch.bmm(a.unsqueeze(1), memory).squeeze(1)  # [B, He]
            h, st = self.decoder(torch.cat([xi, c], -1).unsqueeze(0), st, extra)
            ss.append(h.squeeze(0))
            cs.append(c)
            als.append(a)
        h, c, at = torch.stack(ss), torch.stack(cs), torch.stack(als)  # [T, B, Hd], [T, B, He], [T, B, S]
        pre = self.combine(torch.cat([h, x, c], -1))
        t = pre.view(pre.shape[0], pre.shape[1], -1, 2).max(-1)[0]  # maxout, pairs of adjacent units
        logits = self.out(F.dropout(t, self.dropout, self.training))
        if self.copy_gate is not None:  # model.copy
            p_gen = torch.sigmoid(self.copy_gate(torch.cat([c, h, x], -1)))  # [T, B, 1]
            return pointer_generator(logits, p_gen, at, src), st
        return logits, st



def build_model(cfg, vocab_size, classes=None, target_vocab=None):
    """The model of a resolved Cellscope config (dict) with `vocab_size` symbols (and, sentence tasks, `classes`
    outputs: 1 for a binary classifier)."""
    task = cfg["task"]["name"] if isinstance(cfg.get("task"), dict) else cfg.get("task")
    m = cfg["model"]
    check_model_options(m, task)
    return TASKS[task]["build"](m, task, vocab_size, classes, target_vocab)


# ---------------------------------------------------------------- the tasks (tasks/task.h)
# Per Cellscope task: "options": the task's model options this package implements (option -> the values
# implemented, as CELL_OPTIONS); "build": (resolved model section, task, vocabulary size, classes, target vocabulary)
# -> its model; "inputs": reference.pt's tensors (Task::export_reference, the export's reference batch) -> the
# arguments of the model's forward, in order; "loss": (the forward's logits, reference.pt) -> the loss as the task
# scores it. A new task is its model class and one register_task call here.
TASKS = {}


def register_task(name, options, build, inputs, loss):
    """Adds a task (TASKS, TASK_OPTIONS)."""
    TASKS[name] = {"options": dict(options), "build": build, "inputs": inputs, "loss": loss}
    TASK_OPTIONS[name] = TASKS[name]["options"]


TASK_OPTIONS = {}


def _stream_loss(logits, ref):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ref["y"].reshape(-1))


def _sentence_loss(logits, ref):
    if logits.shape[1] == 1:  # a binary classifier: one logit, binary cross-entropy
        return F.binary_cross_entropy_with_logits(logits.squeeze(1), ref["y"].to(logits.dtype))
    return F.nll_loss(torch.log_softmax(logits, 1), ref["y"])


def _seq2seq_loss(logits, ref):
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ref["y"].reshape(-1), reduction="none")
    return (nll * ref["mask"].reshape(-1)).sum() / ref["mask"].sum()


def _seq2seq(m, task, V, classes, target):
    return RNNSearch(m, V, target) if need(m, "architecture") == "rnnsearch" else Seq2Seq(m, V, target)


_SENTENCE_OPTIONS = {"fc": ANY, "fc_activation": ("relu", "tanh", "none"), "pretrained_embeddings": ANY,
                     "freeze_embeddings": BOOL}  # pretrained/freeze: how the embedding was trained (weights in model.pt)
register_task("char_lm", {}, lambda m, t, V, c, tv: CharLM(m, V), lambda ref: (ref["x"],), _stream_loss)
register_task("word_lm", {"dropoute": ANY, "dropouti": ANY, "dropouth": ANY, "weight_drop": ANY, "tie_weights": BOOL},
              lambda m, t, V, c, tv: WordLM(m, V), lambda ref: (ref["x"],), _stream_loss)
for _t in ("classify", "absa"):
    register_task(_t, _SENTENCE_OPTIONS, lambda m, t, V, c, tv: SentenceModel(m, V, c, t == "absa"),
                  lambda ref: (ref["x"], ref["lengths"], ref.get("aspect"), ref.get("aspect_len")), _sentence_loss)
# recurrent_init: how the recurrent matrices were initialised (the weights are in model.pt either way)
register_task("cloze", {"reader": ("aoa", "m_aoa"), "recurrent_init": ("orthogonal", "cell")},
              lambda m, t, V, c, tv: ClozeReader(m, V),
              lambda ref: (ref["doc"], ref["doc_len"], ref["query"], ref["query_len"], ref["features"],
                           ref["cand_mask"]),
              lambda logits, ref: -torch.log(logits.gather(1, ref["y"].unsqueeze(1)).squeeze(1).clamp_min(1e-12)).mean())
register_task("seq2seq", {"copy": BOOL, "architecture": ("luong", "rnnsearch"), "bridge": ("recurrence", "output")},
              _seq2seq, lambda ref: (ref["src"], ref["src_len"], ref["x"]), _seq2seq_loss)
