#!/usr/bin/env python3
"""Write the seed corpora of the text-input fuzz targets into tests/fuzz/seeds/<target>/.

The texts follow the test fixtures: the lexicon of tests/core/fixture_text.h, the loader
fixtures of tests/core/test_classify.cpp and test_data.cpp, the bundled presets and the
dataset manifest. The checkpoint and run_dir seeds are binary (a trained tiny run) and are
written by the targets themselves: CELLSCOPE_FUZZ_WRITE_SEEDS=DIR build-fuzz/tests/fuzz/fuzz_checkpoint.
Seeds named regression-* are inputs that once found a bug: keep them.

usage: python3 tests/fuzz/make_seeds.py   (idempotent; rewrites only the generated seeds)
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEEDS = os.path.join(HERE, "seeds")
SEP = b"\n----\n"

WORDS = ["the", "whale", "sea", "ship", "captain", "white", "old", "man", "and", "of",
         "to", "a", "in", "his", "was", "that", "it", "upon", "boat", "harpoon"]


def fixture_text(chars, seed=7):
    """Sentences from fixture_text.h's lexicon (not byte-identical: Python's RNG)."""
    rng = random.Random(seed)
    out = ""
    while len(out) < chars:
        n = 4 + rng.randrange(8)
        ws = [rng.choice(WORDS) for _ in range(n)]
        ws[0] = ws[0].capitalize()
        out += " ".join(ws) + ". "
        if rng.randrange(5) == 0:
            out += "\n"
    return out[:chars]


def archive(files):
    """The archive format of fuzz_common.h: parts "<path>\\n<content>" joined by "\\n----\\n"."""
    return SEP.join(name.encode() + b"\n" + (c if isinstance(c, bytes) else c.encode()) for name, c in files)


def put(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def config_seeds():
    pdir = os.path.join(ROOT, "resources", "presets")
    for n in sorted(os.listdir(pdir)):
        if n.endswith(".json"):
            with open(os.path.join(pdir, n), "rb") as f:
                put("config", "preset-" + n[:-5], f.read())
    with open(os.path.join(pdir, "quick-gru.json"), "rb") as f:
        quick = f.read()
    put("config", "sets-quick-gru", b"model.hidden=32\nmodel.embed=16\ndataset.max_chars=20000" + SEP + quick)
    put("config", "sets-cell", b"model.cell=lstm\ntraining.lr=1e-2\ntask=word_lm" + SEP + quick)
    put("config", "sets-bad", b"model=1\n.x=2\nmodel.hidden=\"a\"" + SEP + b'{"task": "char_lm"}')


def char_seeds():
    text = fixture_text(600)
    put("char_corpus", "text", bytes([0]) + archive([("corpus.txt", text)]))
    put("char_corpus", "text-crlf-bom", bytes([0x84]) + archive([("corpus.txt", "\ufeff" + text[:200].replace("\n", "\r\n"))]))
    put("char_corpus", "text8", bytes([2]) + archive([("text8", " ".join(text.lower().replace(".", "").split()))]))
    ptb = [(f"ptb.char.{s}.txt", " ".join("_" if c == " " else c for c in fixture_text(200, seed=i)) + "\n")
           for i, s in enumerate(["train", "valid", "test"])]
    put("char_corpus", "ptb_char", bytes([1]) + archive(ptb))
    put("char_corpus", "utf8", bytes([3]) + archive([("corpus.txt", "Ahab \u00e9t\u00e9 \u2014 \u6d77 whale\n" * 4)]))


def word_seeds():
    ptb = [(f"ptb.{s}.txt", "\n".join(" " + fixture_text(120, seed=i + 10 * j).lower().replace(".", "<unk>")
                                     for j in range(3)) + "\n")
           for i, s in enumerate(["train", "valid", "test"])]
    put("word_corpus", "ptb_word", bytes([0]) + archive(ptb))
    put("word_corpus", "text", bytes([1]) + archive([("corpus.txt", fixture_text(800))]))
    put("word_corpus", "text-vocab", bytes([1 | 0x08 | 0x10 | 0x20]) + archive([("corpus.txt", fixture_text(400))]))


def sentence_seeds():
    lines = [json.dumps({"text": fixture_text(60, seed=i), "label": ["spam", "ham"][i % 2],
                         "split": ["train", "valid", "test"][i % 3]}) for i in range(6)]
    put("sentences", "jsonl", bytes([0]) + archive([("data.jsonl", "\n".join(lines) + "\n")]))
    put("sentences", "mr", bytes([1]) + archive([("rt-polarity.pos", b"a charming caf\xe9 film .\nfun\n"),
                                                  ("rt-polarity.neg", b"dull .\n\nboring\n")]))
    put("sentences", "subj", bytes([2]) + archive([("quote.tok.gt9.5000", "i liked it .\nso bad\n"),
                                                    ("plot.tok.gt9.5000", "a man goes to sea .\n")]))
    put("sentences", "imdb", bytes([3]) + archive([("train/pos/0_9.txt", "Great.<br />Loved it."),
                                                    ("train/neg/1_2.txt", "Bad."),
                                                    ("test/pos/2_8.txt", "Nice."), ("test/neg/3_1.txt", "Awful.")]))
    put("sentences", "sst", bytes([4 | 0x40]) + archive([("train.txt", "(3 (2 It) (4 (2 's) (3 good)))\n(1 (1 Bad) (2 .))\n"),
                                                          ("dev.txt", "(2 (2 So) (2 so))\n"),
                                                          ("test.txt", "(4 (4 Great))\n")]))
    xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<sentences>\n'
           '  <sentence id="1">\n    <text>The appetizers are ok, but the service is slow.</text>\n'
           '    <aspectTerms>\n      <aspectTerm term="appetizers" polarity="positive" from="4" to="14"/>\n'
           '      <aspectTerm term="service" polarity="negative" from="32" to="39"/>\n    </aspectTerms>\n  </sentence>\n'
           '  <sentence id="2">\n    <text>Great food &amp; great wine.</text>\n    <aspectTerms>\n'
           '      <aspectTerm term="food" polarity="positive" from="6" to="10"/>\n'
           '      <aspectTerm term="wine" polarity="positive" from="19" to="23"/>\n    </aspectTerms>\n  </sentence>\n'
           '  <sentence id="3"><text>Nothing to say.</text></sentence>\n</sentences>\n')
    put("sentences", "semeval-file", bytes([5]) + archive([("Restaurants_Train_v2.xml", xml)]))
    put("sentences", "semeval-dir", bytes([5]) + archive([("Restaurants_Train_v2.xml", xml),
                                                          ("Restaurants_Test_Gold.xml", xml)]))
    # fuzz_semeval_xml: one XML file as is; the XML the parser must handle besides plain tags.
    put("semeval_xml", "plain", xml)
    put("semeval_xml", "cdata-entities",
        '\ufeff<?xml version="1.0"?>\r\n<!DOCTYPE sentences [<!ENTITY e "x">]>\r\n<!-- a > comment -->\r\n'
        '<sentences>\r\n<sentence id="s&amp;1"><text><![CDATA[The food <b>&</b>]]> was &lt;great&gt; &#233;&#x1F433;'
        '</text>\r\n<aspectTerms><aspectTerm term="food &gt; x" polarity="conflict" note="a > b"/>'
        '<aspectTerm term=\'it&apos;s\' polarity="neutral"/></aspectTerms></sentence>\r\n'
        '<?pi data?><sentence id="2"><text>caf\u00e9 <i>nested</i> text</text></sentence>\r\n</sentences>\r\n')
    put("semeval_xml", "broken", '<sentences>\n<sentence id="1"><text><![CDATA[never closed</text>\n'
        '<aspectTerm term="a < b" polarity="positive"/></sentence>\n</sentences>\n')


def manifest_seeds():
    with open(os.path.join(ROOT, "datasets", "manifest.json"), "rb") as f:
        put("manifest", "manifest", f.read())
    put("manifest", "small", json.dumps({"version": 1, "datasets": [
        {"name": "x", "format": "text", "obtain": "user", "path": "x.txt", "files": ["x.txt"],
         "source": {"url": "https://example.org"}}]}))


def vocab_seeds():
    syms = ["<unk>", "\\n", "\\s", "a", "b", "\u00e9", "\\t", "\\e", "\\x01", "\\\\"]
    put("vocab", "char", "cellscope-vocab 1 %d\n" % len(syms) + "\n".join(syms) + "\n")
    words = ["<unk>", "<eos>"] + WORDS
    put("vocab", "word", "cellscope-vocab 1 %d\n" % len(words) + "\n".join(words) + "\n")


if __name__ == "__main__":
    config_seeds()
    char_seeds()
    word_seeds()
    sentence_seeds()
    manifest_seeds()
    vocab_seeds()
