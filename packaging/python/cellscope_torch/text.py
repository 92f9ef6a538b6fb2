"""New text as an exported run reads it: tokenize, encode, evaluate and predict (README.md, "New text").

The word tokenizer is Cellscope's (core/base/data/tokenizer.cpp, data/TOKENIZER_NOTES.md), rule for rule:
  icu (dataset.tokenizer, new runs): NFC; U+2019 as '; the segments of ICU's UAX #29 word break iterator (root
      locale), white space dropped; keep_inner joins word '-' word; lower-casing by ICU in dataset.locale.
      ICU comes from PyICU (Debian's python3-icu), over the same libicu as Cellscope's, so segments and case
      mappings are ICU's own, not a re-implementation of them.
  legacy (runs written before dataset.tokenizer existed): the byte rules of word_lm (WordLM) and of the sentence
      tasks (Sentence), ASCII-only lower-casing; no ICU needed.
Tokens then become ids as the task maps them: word_lm through word_corpus.cpp (lines, dataset.eos, <eos>),
classify and absa through tasks/classify.cpp (dataset.max_len tokens, an empty text as one <unk>)."""
import json
import math
import os

import torch
import torch.nn.functional as F

# ASCII white space as Cellscope's is_ascii_space (core/base/util/text.h), and C's ispunct() on ASCII.
_ASCII_SPACE = b" \t\n\r\f\v"
_ASCII_PUNCT = set(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# legacy WordLM's typographic punctuation: “ ” ‘ ’ — – …
_LEGACY_MARKS = [m.encode("utf-8") for m in ("\u201c", "\u201d", "\u2018", "\u2019", "\u2014", "\u2013", "\u2026")]
_UBRK_WORD_NONE_LIMIT = 100  # ICU's rule status: >= 100 is a number, letter, kana or ideograph segment


def _icu():
    try:
        import icu  # PyICU
    except ImportError:
        raise ImportError("cellscope_torch: this run tokenises with ICU (dataset.tokenizer = icu): install PyICU "
                          "(Debian: apt install python3-icu) to tokenise text as the run did") from None
    return icu


def _config(d):
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def task_of(cfg):
    t = cfg.get("task")
    return t["name"] if isinstance(t, dict) else t


class Tokenizer:
    """The word tokenizer of a run's configuration `cfg` (config.json's dict). A config without
    dataset.tokenizer is a run written before it existed: legacy, as Cellscope reads it."""

    def __init__(self, cfg):
        ds = cfg.get("dataset", {})
        task = task_of(cfg)
        self.rules = ds.get("tokenizer", "legacy")
        if self.rules not in ("icu", "legacy"):
            raise ValueError("cellscope_torch: dataset.tokenizer %r (expected icu or legacy)" % self.rules)
        self.locale = ds.get("locale") or ""
        self.lowercase = bool(ds.get("lowercase", True))
        self.sentence = task in ("classify", "absa")  # the legacy rules of the sentence tasks
        self.keep_punctuation, self.keep_inner = True, True
        if self.rules == "icu":
            icu = _icu()
            self._icu = icu
            self._nfc = icu.Normalizer2.getNFCInstance()
            self._breaks = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
            self._lower_locale = icu.Locale.forLanguageTag(self.locale) if self.locale else icu.Locale.getRoot()

    def __call__(self, text, max_tokens=0):
        """The tokens of one line of text (a str), at most max_tokens (0 = all)."""
        if self.rules == "icu":
            out = self._icu_tokens(text, max_tokens)
        elif self.sentence:
            out = self._legacy_sentence(text.encode("utf-8"), max_tokens)
        else:
            out = self._legacy_word_lm(text.encode("utf-8"))
        return out[:max_tokens] if max_tokens > 0 else out

    def lower_word(self, w):
        """One word lower-cased as the rules do (NFC first under icu): what a pretokenised text's words get."""
        if self.rules == "legacy":
            return _ascii_lower(w)
        return self._lower(self._nfc.normalize(w))

    def _lower(self, s):
        if not self.locale and s.isascii():
            return _ascii_lower(s)  # root maps ASCII to ASCII: the same result as ICU's
        return str(self._icu.UnicodeString(s).toLower(self._lower_locale))

    def _icu_tokens(self, text, max_tokens):
        icu = self._icu
        s = text if text.isascii() else self._nfc.normalize(text)
        u = icu.UnicodeString(s.replace("\u2019", "'"))
        bi = self._breaks
        bi.setText(u)
        segs = []  # [begin, end) in UTF-16 units, the segment, whether UAX #29 calls it a word
        b = bi.first()
        while True:
            e = bi.nextBoundary()
            if e == -1:
                break
            seg = str(u[b:e])
            word = bi.getRuleStatus() >= _UBRK_WORD_NONE_LIMIT
            if word or not all(icu.Char.isUWhiteSpace(c) for c in seg):
                segs.append([b, e, seg, word])
            b = e
        if self.keep_inner:  # word '-' word, adjacent, is one word (chains too: "jack-in-the-box")
            joined, i = [], 0
            while i < len(segs):
                s_ = segs[i]
                if (not s_[3] and s_[2] == "-" and joined and joined[-1][3] and joined[-1][1] == s_[0]
                        and i + 1 < len(segs) and segs[i + 1][3] and segs[i + 1][0] == s_[1]):
                    joined[-1] = [joined[-1][0], segs[i + 1][1], joined[-1][2] + "-" + segs[i + 1][2], True]
                    i += 2
                    continue
                joined.append(s_)
                i += 1
            segs = joined
        out = []
        for _, _, seg, word in segs:
            if max_tokens > 0 and len(out) >= max_tokens:
                break
            if not word and not self.keep_punctuation and all(icu.Char.ispunct(c) for c in seg):
                continue
            out.append(self._lower(seg) if self.lowercase else seg)
        return out

    def _legacy_word_lm(self, s):
        out, cur, i, n = [], bytearray(), 0, len(s)

        def mark_at(j):
            for m in _LEGACY_MARKS:
                if s.startswith(m, j):
                    return 3
            return 0

        def word_char_at(j):
            if j >= n:
                return False
            c = s[j]
            if c in _ASCII_SPACE:
                return False
            if c < 0x80:
                return c not in _ASCII_PUNCT
            return mark_at(j) == 0

        def flush():
            if cur:
                out.append(bytes(cur))
                cur.clear()

        while i < n:
            c = s[i]
            if c in _ASCII_SPACE:
                flush()
                i += 1
                continue
            plen = (1 if c in _ASCII_PUNCT else 0) if c < 0x80 else mark_at(i)
            if plen == 0:
                cur.append(c + 32 if self.lowercase and 65 <= c <= 90 else c)
                i += 1
                continue
            apostrophe = (plen == 1 and c == 0x27) or (plen == 3 and s.startswith(b"\xe2\x80\x99", i))
            hyphen = plen == 1 and c == 0x2D
            if self.keep_inner and (apostrophe or hyphen) and cur and word_char_at(i + plen):
                cur.append(0x27 if apostrophe else 0x2D)
                i += plen
                continue
            flush()
            if self.keep_punctuation:
                out.append(b"'" if apostrophe else s[i:i + plen])
            i += plen
        flush()
        return [w.decode("utf-8", "replace") for w in out]

    def _legacy_sentence(self, s, max_tokens):
        def word_byte(c):
            return 97 <= c <= 122 or 65 <= c <= 90 or 48 <= c <= 57 or c == 95 or c >= 0x80

        out, i, n = [], 0, len(s)
        while i < n and not (max_tokens > 0 and len(out) >= max_tokens):
            c = s[i]
            if c in _ASCII_SPACE:
                i += 1
                continue
            if word_byte(c):
                w = bytearray()
                while i < n:
                    d = s[i]
                    if word_byte(d):
                        w.append(d + 32 if self.lowercase and 65 <= d <= 90 else d)
                        i += 1
                    elif d in (0x27, 0x2D) and i + 1 < n and word_byte(s[i + 1]):
                        w.append(d)  # inner apostrophe / hyphen
                        i += 1
                    else:
                        break
                out.append(w.decode("utf-8", "replace"))
                continue
            out.append(chr(c) if c < 0x80 else bytes([c]).decode("latin-1"))
            i += 1
        return out


def _ascii_lower(s):
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def _lines(text):
    """The lines of a text as Cellscope's LineReader gives them (split at \\n, one trailing \\r dropped)."""
    if not text:
        return []
    parts = text.split("\n")
    if text.endswith("\n"):
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def _ptb_format(cfg):
    """Whether a word_lm run read PTB's word files (dataset.format ptb_word, or auto over a directory holding
    ptb.train.txt), whose lines are split at ASCII white space, not tokenised."""
    ds = cfg.get("dataset", {})
    fmt, path = ds.get("format", "auto"), ds.get("path") or ""
    if fmt == "ptb_word":
        return True
    if fmt != "auto" or not path:
        return False
    d = path if os.path.isdir(path) else (os.path.dirname(path) if os.path.basename(path).startswith("ptb.") else "")
    return bool(d) and os.path.isfile(os.path.join(d, "ptb.train.txt"))


def tokenize(text, d):
    """The tokens of `text` as the run of export d reads it: word_lm a whole text (its lines, with <eos> as
    dataset.eos places it: word_corpus.cpp's word_text_tokens), classify and absa one sentence (at most
    dataset.max_len tokens), char_lm its code points (CRLF as LF)."""
    cfg = _config(d)
    task = task_of(cfg)
    ds = cfg.get("dataset", {})
    if task == "char_lm":
        return list(text.replace("\r\n", "\n"))
    if task == "word_lm":
        if _ptb_format(cfg):
            out, spaces = [], {ord(c): " " for c in "\t\r\f\v"}
            for line in _lines(text):  # ptb_tokens: split_ascii_words, then <eos> at every line end
                out += [w for w in line.translate(spaces).split(" ") if w]
                out.append("<eos>")
            return out
        tok, eos = Tokenizer(cfg), ds.get("eos", "line")
        out, in_par = [], False
        for line in _lines(text):
            toks = tok(line)
            if not toks:
                if eos == "paragraph" and in_par:
                    out.append("<eos>")
                in_par = False
                continue
            out += toks
            in_par = True
            if eos == "line":
                out.append("<eos>")
        if eos == "paragraph" and in_par:
            out.append("<eos>")
        return out
    if task in ("classify", "absa"):
        return Tokenizer(cfg)(text, int(ds.get("max_len", 0) or 0))
    raise NotImplementedError("cellscope_torch.tokenize: task %s (char_lm, word_lm, classify and absa: the cloze "
                              "and seq2seq readers take their own data formats, which this package does not read)"
                              % task)


def _vocab_index(d):
    with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    return {s: i for i, s in enumerate(vocab)}


def encode(text, d):
    """`text` as the ids the run of export d reads it (tokenize(), then the export's vocab.json, a token it lacks
    as <unk>, id 0): char_lm and word_lm a whole text, classify and absa one sentence (an empty one is one <unk>,
    as Cellscope makes it). Returns a list of ints."""
    index = _vocab_index(d)
    unk = index.get("<unk>", 0)
    ids = [index.get(t, unk) for t in tokenize(text, d)]
    if not ids and task_of(_config(d)) in ("classify", "absa"):
        ids = [unk]
    return ids


def _stream_nll(model, ids, cfg):
    """StreamLMTask::stream_nll: the ids cut into min(training.eval_batch, (N - 1) / training.bptt) streams read
    side by side in bptt-long segments with the state carried, the remainder continuing the last stream; eval
    mode, the state starting at zero. Returns the summed NLL in nats."""
    N = len(ids)
    tr = cfg.get("training", {})
    bptt = max(int(tr.get("bptt", 150)), 1)
    B = max(1, min(int(tr.get("eval_batch", 16)), (N - 1) // bptt))
    n = (N - 1) // B
    allt = torch.tensor(ids, dtype=torch.int64)
    total = [0.0]

    def score(inp, tgt, state):
        length = inp.shape[1]
        for p in range(0, length, bptt):
            seg = min(bptt, length - p)
            logits, state = model(inp[:, p:p + seg].t().contiguous(), state)
            nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, p:p + seg].t().reshape(-1),
                                  reduction="none")
            total[0] += float(nll.sum())
        return state

    with torch.no_grad():
        state = score(allt[:B * n].view(B, n), allt[1:B * n + 1].view(B, n), None)
        rem = (N - 1) - B * n
        if rem > 0:  # the tail continues the last stream with its carried state, batch 1
            last = [[t[B - 1:B].contiguous() for t in s] for s in state]
            score(allt[B * n:B * n + rem].view(1, rem), allt[B * n + 1:B * n + 1 + rem].view(1, rem), last)
    return total[0]


def _examples(source, cfg, split):
    """(text, label, aspect) triples from a list of (text, label[, aspect]) tuples or dicts, or from a JSON Lines
    file read with the run's dataset.text_field / label_field / split_field (split: only that split's lines)."""
    ds = cfg.get("dataset", {})
    tf, lf, sf = ds.get("text_field", "text"), ds.get("label_field", "label"), ds.get("split_field", "split")
    rows = []
    if isinstance(source, str):
        with open(source, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                j = json.loads(line)
                if split is not None and j.get(sf) != split:
                    continue
                if tf not in j or lf not in j:
                    raise ValueError("cellscope_torch: %s:%d: no '%s' or '%s' field" % (source, no, tf, lf))
                rows.append((j[tf], j[lf], j.get("aspect", "")))
    else:
        for r in source:
            if isinstance(r, dict):
                rows.append((r[tf] if tf in r else r["text"], r[lf] if lf in r else r["label"], r.get("aspect", "")))
            else:
                rows.append((r[0], r[1], r[2] if len(r) > 2 else ""))
    # a label as Cellscope reads it: a string, or the JSON text of an integer or boolean
    return [(t, lab if isinstance(lab, str) else json.dumps(lab), a) for t, lab, a in rows]


def _sentence_logits(model, d, cfg, texts, aspects=None):
    """The model's logits for a list of sentences, in batches of training.eval_batch sentences of similar length,
    padded with <pad> (id 1) as Cellscope batches them."""
    tok = Tokenizer(cfg)
    max_len = int(cfg.get("dataset", {}).get("max_len", 0) or 0)
    index = _vocab_index(d)

    def ids_of(s, cap):
        ids = [index.get(t, 0) for t in tok(s, cap)]
        return ids or [0]

    seqs = [ids_of(t, max_len) for t in texts]
    asp = [ids_of(a, 0) for a in aspects] if aspects is not None else None
    eb = max(1, int(cfg.get("training", {}).get("eval_batch", 64)))
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = [None] * len(seqs)

    def padded(rows):
        T = max(len(r) for r in rows)
        x = torch.full((T, len(rows)), 1, dtype=torch.int64)
        for j, r in enumerate(rows):
            x[:len(r), j] = torch.tensor(r, dtype=torch.int64)
        return x, torch.tensor([len(r) for r in rows], dtype=torch.int64)

    model.eval()
    with torch.no_grad():
        for p in range(0, len(order), eb):
            idx = order[p:p + eb]
            x, lengths = padded([seqs[i] for i in idx])
            a = al = None
            if asp is not None:
                a, al = padded([asp[i] for i in idx])
            logits = model(x, lengths, a, al)
            for j, i in enumerate(idx):
                out[i] = logits[j]
    return torch.stack(out) if out else torch.zeros(0)


def _labels(d):
    with open(os.path.join(d, "labels.json"), encoding="utf-8") as f:
        return json.load(f)


def predict(d, texts, aspects=None, model=None):
    """classify / absa: the run's prediction for each sentence of `texts` (absa: with `aspects`, one aspect term
    per sentence): a list of {"label", "probabilities": {label: p}}. A binary classifier's one logit z gives
    p(second label) = sigmoid(z), as Cellscope's (labels.json: the labels in Cellscope's order)."""
    if model is None:
        from .exported import load
        model, _ = load(d)
    cfg = _config(d)
    if task_of(cfg) not in ("classify", "absa"):
        raise ValueError("cellscope_torch.predict: task %s (classify and absa only)" % task_of(cfg))
    if task_of(cfg) == "absa" and aspects is None:
        raise ValueError("cellscope_torch.predict: an absa run needs the aspect term of each sentence (aspects=)")
    labels = _labels(d)
    logits = _sentence_logits(model, d, cfg, list(texts), None if aspects is None else list(aspects))
    out = []
    for z in logits:
        if z.shape[0] == 1:
            p1 = float(torch.sigmoid(z[0]))
            probs = [1.0 - p1, p1]
        else:
            probs = torch.softmax(z, 0).tolist()
        best = max(range(len(probs)), key=lambda k: probs[k])
        out.append({"label": labels[best], "probabilities": dict(zip(labels, probs))})
    return out


def evaluate(d, text, model=None, split=None):
    """The model of export d scored as `cellscope-cli eval` scores a split.

    char_lm, word_lm: `text` a str (or its ids from encode()): the stream of StreamLMTask::stream_nll. Returns
        {"loss": nats per unit, "units": N - 1, and "bpc" (char_lm) or "ppl" (word_lm)}.
    classify, absa: `text` a list of (sentence, label[, aspect]) tuples or dicts, or the path of a JSON Lines file
        read with the run's dataset.text_field / label_field (split: only the lines of that split_field value).
        Returns {"loss": the mean cross-entropy, "accuracy", "units": examples}.
    model: load(d)'s model (or its torch.jit.script form); None: load(d)."""
    if model is None:
        from .exported import load
        model, _ = load(d)
    cfg = _config(d)
    task = task_of(cfg)
    model.eval()
    if task in ("char_lm", "word_lm"):
        ids = list(text) if not isinstance(text, str) else encode(text, d)
        if len(ids) < 2:
            raise ValueError("cellscope_torch.evaluate: the text has %d units (at least 2)" % len(ids))
        loss = _stream_nll(model, ids, cfg) / (len(ids) - 1)
        r = {"loss": loss, "units": len(ids) - 1}
        if task == "char_lm":
            r["bpc"], r["chars"] = loss / math.log(2.0), len(ids) - 1
        else:
            r["ppl"] = math.exp(loss)
        return r
    if task in ("classify", "absa"):
        rows = _examples(text, cfg, split)
        if not rows:
            raise ValueError("cellscope_torch.evaluate: no examples%s" % ("" if split is None else " in split " + split))
        labels = _labels(d)
        index = {lab: i for i, lab in enumerate(labels)}
        unknown = sorted({lab for _, lab, _ in rows if lab not in index})
        if unknown:
            raise ValueError("cellscope_torch.evaluate: labels %s are not the run's (%s)" % (unknown, labels))
        y = torch.tensor([index[lab] for _, lab, _ in rows], dtype=torch.int64)
        logits = _sentence_logits(model, d, cfg, [t for t, _, _ in rows],
                                  [a for _, _, a in rows] if task == "absa" else None)
        if logits.shape[1] == 1:
            z = logits.squeeze(1)
            loss = F.binary_cross_entropy_with_logits(z, y.to(z.dtype), reduction="sum")
            pred = (z > 0).to(torch.int64)
        else:
            loss = F.nll_loss(torch.log_softmax(logits, 1), y, reduction="sum")
            pred = logits.argmax(1)
        n = len(rows)
        return {"loss": float(loss) / n, "accuracy": float((pred == y).to(torch.float64).mean()), "units": n}
    raise NotImplementedError("cellscope_torch.evaluate: task %s (char_lm, word_lm, classify and absa)" % task)
