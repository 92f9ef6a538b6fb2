"""New text as the run read it (text.py): the tokenizer's rules on the cases data/TOKENIZER_NOTES.md names, and, with
CELLSCOPE_CLI (ctest's cellscope_torch_pytest sets it), word_lm and classify runs trained by Cellscope on text full of
those cases, each evaluated here and by `cellscope-cli eval` on the same split: the same number of units and the same
loss (the ids must be the run's, token for token, for the losses to agree)."""
import json
import os
import random
import subprocess

import pytest

import cellscope_torch as ct

CLI = os.environ.get("CELLSCOPE_CLI")


def tok(**ds):
    return ct.Tokenizer({"task": {"name": ds.pop("task", "word_lm")}, "dataset": ds})


def test_icu_rules():
    t = tok(tokenizer="icu", lowercase=True)
    # NFC (U+0055 U+0308 is Ü), full Unicode lower-casing (final sigma), U+2019 as ', word-hyphen-word joined,
    # a number with its point, punctuation a token of its own, an emoji sequence one token
    assert t("U\u0308BER ÜBER don\u2019t jack-in-the-box 3.14 ΟΔΟΣ 👍🏽!") == [
        "über", "über", "don't", "jack-in-the-box", "3.14", "οδος", "👍🏽", "!"]
    assert t("a - b e-mail -x") == ["a", "-", "b", "e-mail", "-", "x"]  # spaced or leading hyphens separate
    assert tok(tokenizer="icu", lowercase=False)("ÜBER Don't") == ["ÜBER", "Don't"]
    assert t("  \t ") == []
    # dataset.locale: Turkish lower-cases I to dotless ı and İ to i; root keeps I -> i and İ -> i̇
    assert tok(tokenizer="icu", locale="tr")("ISTANBUL İzmir") == ["ıstanbul", "izmir"]
    assert t("ISTANBUL İzmir") == ["istanbul", "i\u0307zmir"]
    assert t("one two three", max_tokens=2) == ["one", "two"]


def test_legacy_rules():
    w = tok(tokenizer="legacy")  # word_lm's byte rules
    assert w("Don\u2019t STOP\u2014now, e-mail’s “x”") == ["don't", "stop", "\u2014", "now", ",", "e-mail's", "\u201c",
                                                           "x", "\u201d"]
    assert w("ÜBER") == ["Über"]  # ASCII-only lower-casing
    s = tok(tokenizer="legacy", task="classify")  # the sentence tasks' byte rules
    assert s("3.14 don't-stop! Über") == ["3", ".", "14", "don't-stop", "!", "Über"]
    # a config written before dataset.tokenizer existed is read as legacy, as Cellscope reads it
    assert ct.Tokenizer({"task": "word_lm", "dataset": {}}).rules == "legacy"


WORDS = ["ÜBER", "U\u0308ber", "don\u2019t", "don't", "e-mail", "jack-in-the-box", "3.14", "İstanbul", "ISTANBUL",
         "ΟΔΟΣ", "東京", "👍🏽", "naïve", "the", "whale", "sea", "Ahab", "\u2014", "!", "...", "\u201cquoted\u201d", "café"]


def cellscope(*argv):
    r = subprocess.run([CLI] + list(argv), capture_output=True, text=True)
    assert r.returncode == 0, (argv, r.stderr)
    return r.stdout


def train_and_export(tmp_path, name, cfg):
    cfg_path, run, out = tmp_path / (name + ".json"), tmp_path / ("run_" + name), tmp_path / ("exp_" + name)
    cfg_path.write_text(json.dumps(cfg))
    cellscope("train", str(cfg_path), "--run-dir", str(run), "--quiet")
    cellscope("export", str(run), "--out", str(out))
    return str(run), str(out)


@pytest.mark.skipif(not CLI, reason="CELLSCOPE_CLI is not set: no cellscope-cli to train and evaluate a run with")
@pytest.mark.parametrize("tokenizer,eos,locale", [("icu", "line", ""), ("icu", "paragraph", "tr"),
                                                  ("legacy", "line", "")])
def test_word_lm_evaluate_agrees_with_cellscope_eval(tmp_path, tokenizer, eos, locale):
    rnd = random.Random(2)
    lines = ["" if rnd.random() < 0.1 else " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 9)))
             for _ in range(300)]
    text = tmp_path / "t.txt"
    text.write_bytes(("\r\n".join(lines) + "\n").encode("utf-8"))  # CRLF line ends, as a Windows file has
    cfg = {"task": "word_lm",
           "dataset": {"path": str(text), "format": "text", "tokenizer": tokenizer, "eos": eos, "locale": locale,
                       "valid_fraction": 0.1, "test_fraction": 0.1},
           "model": {"cell": "gru", "embed": 8, "hidden": 8, "tie_weights": True},
           "training": {"batch": 4, "bptt": 7, "steps": 4, "eval_every": 0, "threads": 1, "eval_batch": 3}}
    run, d = train_and_export(tmp_path, "w", cfg)
    ds = ct.load(d)[1]["config"]["dataset"]
    # The valid split as Cellscope cuts it (word_corpus.cpp): the whole text's tokens, split by token fractions.
    toks = ct.tokenize(text.read_bytes().decode("utf-8"), d)
    N = len(toks)
    ntr, nva = int(N * (1 - ds["valid_fraction"] - ds["test_fraction"])), int(N * ds["valid_fraction"])
    index = {s: i for i, s in enumerate(ct.read_vocab(d))}
    ids = [index.get(w, 0) for w in toks[ntr:ntr + nva]]
    # Every word of the run's vocabulary is a token of this tokenizer (its own spelling of them).
    assert set(ct.read_vocab(d)) - {"<unk>"} <= set(toks)
    py = ct.evaluate(d, ids)
    ev = json.loads(cellscope("eval", run, "--split", "valid", "--json"))
    assert py["units"] == ev["units"], (py, ev)
    assert py["loss"] == pytest.approx(ev["loss"], rel=1e-5), (py, ev)
    assert py["ppl"] == pytest.approx(ev["ppl"], rel=1e-5)


@pytest.mark.skipif(not CLI, reason="CELLSCOPE_CLI is not set: no cellscope-cli to train and evaluate a run with")
@pytest.mark.parametrize("tokenizer,locale", [("icu", ""), ("icu", "tr"), ("legacy", "")])
def test_classify_evaluate_and_predict_agree_with_cellscope(tmp_path, tokenizer, locale):
    rnd = random.Random(1)
    pos, neg = WORDS[:11], WORDS[11:]
    data = tmp_path / "d.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for i in range(240):
            lab = rnd.random() < 0.5
            words = rnd.sample(pos if lab else neg, 3) + rnd.sample(WORDS, rnd.randint(0, 6))
            split = "train" if i < 160 else ("valid" if i < 200 else "test")
            f.write(json.dumps({"text": " ".join(words), "label": "pos" if lab else "neg", "split": split},
                               ensure_ascii=False) + "\n")
    cfg = {"task": "classify",
           "dataset": {"path": str(data), "format": "jsonl", "tokenizer": tokenizer, "locale": locale, "max_len": 7},
           "model": {"cell": "gru", "embed": 8, "hidden": 8},
           "training": {"batch": 8, "steps": 6, "eval_every": 0, "threads": 1, "eval_batch": 5}}
    run, d = train_and_export(tmp_path, "c", cfg)
    py = ct.evaluate(d, str(data), split="test")  # padded batches of 5 sentences of different lengths
    ev = json.loads(cellscope("eval", run, "--split", "test", "--json"))
    assert py["units"] == ev["units"] == 40, (py, ev)
    assert py["accuracy"] == ev["accuracy"], (py, ev)
    assert py["loss"] == pytest.approx(ev["loss"], rel=1e-5), (py, ev)
    # predict: one sentence at a time and in a padded batch, the same probabilities; the label is the likelier
    texts = ["ÜBER don\u2019t e-mail", "東京 👍🏽", "the whale and the sea and ΟΔΟΣ", ""]
    batch = ct.predict(d, texts)
    for t, b in zip(texts, batch):
        one = ct.predict(d, [t])[0]
        assert b["label"] == one["label"] == max(b["probabilities"], key=b["probabilities"].get)
        for k in b["probabilities"]:
            assert b["probabilities"][k] == pytest.approx(one["probabilities"][k], abs=1e-6)
    assert ct.encode("", d) == [0]  # an empty sentence is one <unk>, as Cellscope makes it
